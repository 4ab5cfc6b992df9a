// Every status the router answers for an operation of /openapi.json is declared by that operation.
// The statuses are found, not listed: each operation is sent every kind of request the router tells
// apart (as documented, an unknown or oversized query, an oversized declared body, bad and unknown
// path values, no dataset, a full rate limit, a closing service, a failing store, a current copy,
// and for a body every way it can be wrong), and whatever comes back must be in its `responses`.
// Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../test/harness.ts';
import { openApiDocument } from './http/openapi.ts';
import { createDirectory, type DirectoryOptions } from './router.ts';
import { MemorySubmissionStore, type StoredSubmission, type SubmissionStore } from './submissions/store.ts';
import { brokenSource, fixtureText, textSource } from './testing/fixtures.ts';

const BASE = 'http://directory.test';
const FACTORY = 'wd-Q4321';

interface Operation {
  readonly method: string;
  readonly path: string;
  readonly responses: Record<string, unknown>;
}

function operations(): Operation[] {
  const paths = openApiDocument().paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
  return Object.entries(paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ method, path, responses: op.responses })));
}

/** A request with exactly these headers: browsers drop some (Content-Length) from a Request they build. */
function withHeaders(request: Request, headers: Record<string, string>): Request {
  const all = new Headers(request.headers);
  for (const [name, value] of Object.entries(headers)) all.set(name, value);
  return new Proxy(request, {
    get(target, prop): unknown {
      if (prop === 'headers') return all;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A store that fails every call. */
const FAILING_STORE: SubmissionStore = {
  put: () => Promise.reject(new Error('disk full')),
  get: () => Promise.reject(new Error('disk gone')),
  close: () => Promise.resolve(),
};

const JOIN = { kind: 'join', company: 'Probe Works', email: 'probe@works.example' };

/** One kind of request: the directory it is sent to, and the requests (the last one's status counts). */
interface Probe {
  readonly name: string;
  readonly options?: Partial<DirectoryOptions>;
  readonly closed?: boolean;
  /** For `url` (the operation's path with its values filled in), the requests to send. */
  requests(op: Operation, url: string, token: string): Request[];
  /** A request made from the answer to the last of `requests`, sent after them. */
  afterwards?(op: Operation, url: string, token: string, answer: Response): Request;
}

const json = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

/** The request an operation is documented to take. */
function documented(op: Operation, url: string, token: string, init: RequestInit = {}): Request {
  if (op.method === 'post') return new Request(url, { ...json(JOIN), ...init });
  return new Request(url, { ...init, method: op.method.toUpperCase(), headers: { authorization: `Bearer ${token}`, ...init.headers } });
}

const PROBES: Probe[] = [
  { name: 'as documented', requests: (op, url, token) => [documented(op, url, token)] },
  { name: 'as documented, asking for HTML', requests: (op, url, token) => [documented(op, url, token, { headers: { accept: 'text/html' } })] },
  { name: 'an unknown query parameter', requests: (op, url, token) => [documented(op, `${url}?zz=1`, token)] },
  { name: 'a query string over the bound', requests: (op, url, token) => [documented(op, `${url}?q=${'a'.repeat(5000)}`, token)] },
  {
    name: 'a declared body over the bound',
    requests: (op, url, token) => [withHeaders(documented(op, url, token), { 'content-length': String(1 << 24) })],
  },
  { name: 'a malformed path value', requests: (op, url, token) => [documented(op, url.replace(/\/(?:wd-Q4321|[0-9a-f]{32})$/, '/%zz'), token)] },
  { name: 'a path value that cannot be an id', requests: (op, url, token) => [documented(op, url.replace(/\/(?:wd-Q4321|[0-9a-f]{32})$/, '/x'), token)] },
  {
    name: 'a well-formed id nobody holds',
    requests: (op, url, token) => [documented(op, url.replace(FACTORY, 'wd-Q999999999').replace(/\/[0-9a-f]{32}$/, `/${'0'.repeat(32)}`), token)],
  },
  { name: 'no token, or a wrong one', requests: (op, url) => [documented(op, url, ''), documented(op, url, 'wrong')] },
  { name: 'no dataset', options: { data: brokenSource(fixtureText()) }, requests: (op, url, token) => [documented(op, url, token)] },
  { name: 'a failing store', options: { submissions: FAILING_STORE }, requests: (op, url, token) => [documented(op, url, token)] },
  {
    name: 'a full rate limit',
    options: { limits: { rateLimit: { perSecond: 0.001, burst: 1 } } },
    requests: (op, url, token) => [documented(op, url, token), documented(op, url, token)],
  },
  { name: 'a service that is shutting down', closed: true, requests: (op, url, token) => [documented(op, url, token)] },
  {
    name: 'the copy the client holds',
    requests: (op, url, token) => [documented(op, url, token)],
    afterwards: (op, url, token, answer) => documented(op, url, token, { headers: { 'if-none-match': answer.headers.get('etag') ?? '' } }),
  },
  // Bodies: sent to every operation; a GET never reads one.
  { name: 'another media type', requests: (_op, url) => [new Request(url, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } })] },
  {
    name: 'a body that is not JSON',
    requests: (_op, url) => [new Request(url, { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } })],
  },
  {
    name: 'a member given twice',
    requests: (_op, url) => [new Request(url, { method: 'POST', body: '{"kind":"join","kind":"join"}', headers: { 'content-type': 'application/json' } })],
  },
  { name: 'bad fields', requests: (_op, url) => [new Request(url, json({ kind: 'correction', record_id: 'wd-Q999999999', company: '', email: 'x' }))] },
  { name: 'a body over the bound', requests: (_op, url) => [new Request(url, json({ ...JOIN, message: 'x'.repeat(64 * 1024) }))] },
];

/** The statuses `op` answered to the probes, with the probes that drew each. */
async function statusesOf(op: Operation, submission: { id: string; token: string; store: MemorySubmissionStore }): Promise<Map<string, string[]>> {
  const seen = new Map<string, string[]>();
  const url = BASE + op.path.replace('{id}', op.path.startsWith('/api/v1/submissions') ? submission.id : FACTORY);
  for (const probe of PROBES) {
    const directory = createDirectory({ data: textSource(fixtureText()), submissions: submission.store, ...probe.options });
    if (probe.closed) await directory.close();
    const send = async (request: Request): Promise<Response> => {
      const response = await directory.fetch(request, { remoteAddress: '192.0.2.1' });
      await response.body?.cancel();
      return response;
    };
    let last: Response | undefined;
    for (const request of probe.requests(op, url, submission.token)) last = await send(request);
    if (probe.afterwards !== undefined) last = await send(probe.afterwards(op, url, submission.token, last!));
    const status = last!.status;
    seen.set(String(status), [...(seen.get(String(status)) ?? []), probe.name]);
  }
  return seen;
}

test('openapi: every status the router answers for an operation is declared by that operation', async () => {
  const store = new MemorySubmissionStore();
  const setup = createDirectory({ data: textSource(fixtureText()), submissions: store });
  const receipt = (await (await setup.fetch(new Request(`${BASE}/api/v1/submissions`, json(JOIN)))).json()) as { id: string; token: string };
  const ops = operations();
  assert.isAtLeast(ops.length, 7);
  const undeclared: string[] = [];
  for (const op of ops) {
    const seen = await statusesOf(op, { ...receipt, store });
    assert.isTrue(
      [...seen.keys()].some((status) => status.startsWith('2')),
      `${op.method} ${op.path} answered a probe with success`,
    );
    for (const [status, probes] of seen) {
      // A 405 answers another method than the operation's: it belongs to no operation.
      if (status !== '405' && !Object.hasOwn(op.responses, status)) undeclared.push(`${op.method} ${op.path} ${status} (${probes.join(', ')})`);
    }
  }
  assert.deepEqual(undeclared, []);
});

test('openapi: the probes draw every kind of answer the directory gives', async () => {
  const store = new MemorySubmissionStore();
  await store.put({ id: '0'.repeat(32) } as StoredSubmission);
  const all = new Set<string>();
  for (const op of operations()) for (const status of (await statusesOf(op, { id: 'f'.repeat(32), token: 't', store })).keys()) all.add(status);
  assert.includeMembers([...all], ['200', '201', '304', '400', '401', '404', '405', '413', '415', '429', '503']);
});
