/**
 * The tools of the API's in-process tests (handler.test.ts, routes/jobs.test.ts): requests as a
 * client sends them, and the checks every answer passes (problem details, JSON).
 */
import { assert } from 'chai';
import type { ClientInfo } from '../web/router.ts';
import { FakeNode } from './fake-node.test-util.ts';
import { createNodeApi, type NodeApiOptions } from './handler.ts';

export const TOKEN = 'k3y-0f-th1s-n0de_AbC';
export const BASE = 'http://127.0.0.1:8844';

/** A fresh fake node and the API over it; `errors` collects what onError heard. */
export function setup(options: Partial<NodeApiOptions> = {}): {
  node: FakeNode;
  api: (request: Request, client?: ClientInfo) => Promise<Response>;
  errors: unknown[];
} {
  const node = new FakeNode();
  const errors: unknown[] = [];
  const api = createNodeApi({ services: node.services, token: TOKEN, onError: (e) => errors.push(e), ...options });
  return { node, api, errors };
}

export interface CallInit {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Uint8Array | ReadableStream<Uint8Array>;
  readonly signal?: AbortSignal;
}

/**
 * A Request with exactly `init.headers`. Browsers drop "forbidden" headers (Origin, Content-Length,
 * Access-Control-Request-Method) from a Request they build, so the headers are a standalone
 * Headers object, which keeps them, in front of a real Request.
 */
export function request(path: string, init: CallInit = {}): Request {
  const method = init.method ?? 'GET';
  const real = new Request(BASE + path, {
    method,
    ...(init.body === undefined ? {} : { body: init.body as BodyInit, duplex: 'half' }),
    ...(init.signal ? { signal: init.signal } : {}),
  } as RequestInit);
  const headers = new Headers(init.headers);
  return new Proxy(real, {
    get(target, prop): unknown {
      if (prop === 'headers') return headers;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

export const AUTH = { authorization: `Bearer ${TOKEN}` };
export const JSON_POST = { ...AUTH, 'content-type': 'application/json' };

export function post(path: string, body: unknown, headers: Record<string, string> = JSON_POST): Request {
  return request(path, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  [member: string]: unknown;
}

export async function problem(response: Response, status: number): Promise<Problem> {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  const body = JSON.parse(text) as Problem;
  assert.equal(body.status, status);
  assert.match(body.type, /^\/problems\/[a-z-]+$/);
  assert.isString(body.title);
  assert.isString(body.detail);
  return body;
}

/** Ids (of nodes, jobs) that are not 64 lowercase hex characters. */
export const BAD_IDS: [string, string][] = [
  ['short', `${'ab'.repeat(31)}a`],
  ['long', `${'ab'.repeat(32)}a`],
  ['non-hex', 'g'.repeat(64)],
  ['upper case', 'AB'.repeat(32)],
  ['percent-encoded', '%61'.repeat(64)],
];

export async function ok<T>(response: Response, status = 200): Promise<T> {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.equal(response.headers.get('content-type'), 'application/json');
  assert.equal(response.headers.get('cache-control'), 'no-store');
  return JSON.parse(text) as T;
}

const decoder = new TextDecoder();

/** Reads from `reader` until the text read so far contains `until` times `marker`. */
export async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, marker: string, until = 1): Promise<string> {
  let text = '';
  while (text.split(marker).length - 1 < until) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`stream ended after ${JSON.stringify(text)}`);
    text += decoder.decode(value, { stream: true });
  }
  return text;
}
