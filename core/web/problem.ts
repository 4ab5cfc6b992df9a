/**
 * Problem details (RFC 9457) for every fetch-style service of the project. Each condition is a
 * stable `code` whose `type` is the relative URI `/problems/<code>`, the same string on every host.
 * A service keeps its catalog of kinds (code → status and title) and an error class over it; every
 * such class extends `HttpProblem`, which carries its code, status and title, and `problemResponse`
 * turns any of them into the answer in one place.
 */

import { MeshError } from '../errors.ts';
import { bytesResponse } from './bytes-response.ts';

/** One kind of problem: its status and title, fixed headers, and for a service that documents it, what it means. */
export interface ProblemKind {
  readonly status: number;
  readonly title: string;
  /** Headers every answer of this kind carries (a Retry-After, say). */
  readonly headers?: Readonly<Record<string, string>>;
  /** What it means and what the client should do (the page a service may serve at `/problems/<code>`). */
  readonly about?: string;
}

/** One item of a problem's `errors` member: which parameter or field, and what is wrong with it. */
export interface FieldError {
  readonly name: string;
  readonly detail: string;
}

/** An error that crosses the wire: answered as problem details with its kind's status. */
export class HttpProblem extends MeshError {
  readonly status: number;
  readonly title: string;
  /** Extension members of the body (`errors`, `rule`, `limit_bytes`, `factories: null`). */
  readonly extra: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: string, kind: ProblemKind, detail: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(code, detail);
    this.status = kind.status;
    this.title = kind.title;
    this.extra = extra;
    this.headers = { ...kind.headers, ...headers };
  }
}

/** The problems the kit answers by itself (routing, query parsing, an adapter's last resort). */
export const WEB_PROBLEMS = {
  'bad-request': { status: 400, title: 'Bad request' },
  'invalid-parameter': { status: 400, title: 'Invalid parameter' },
  'unknown-parameter': { status: 400, title: 'Unknown parameter' },
  'repeated-parameter': { status: 400, title: 'Repeated parameter' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'request-timeout': { status: 408, title: 'Request timeout' },
  'headers-too-large': { status: 431, title: 'Request header fields too large' },
  internal: { status: 500, title: 'Internal error' },
} as const satisfies Record<string, ProblemKind>;

export type WebProblemCode = keyof typeof WEB_PROBLEMS;

/** A service's problem class: its codes are its catalog's, and each takes its kind from there. */
export type ProblemClass<Code extends string> = new (
  code: Code,
  detail: string,
  extra?: Record<string, unknown>,
  headers?: Record<string, string>,
) => HttpProblem & { readonly code: Code };

/**
 * The problem class of `catalog`, for a service to extend under its own name.
 *
 * @example
 * export class ApiProblem extends problemClass(API_PROBLEMS) {}
 * throw new ApiProblem('pool-full', 'the pool holds 20000 transactions');
 */
export function problemClass<C extends Readonly<Record<string, ProblemKind>>>(catalog: C): ProblemClass<keyof C & string> {
  return class extends HttpProblem {
    constructor(code: keyof C & string, detail: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
      super(code, catalog[code]!, detail, extra, headers);
    }
  };
}

/** A problem of the kit's own catalog. */
export class WebProblem extends problemClass(WEB_PROBLEMS) {}

/** The problem details object of `problem`. */
export function problemBody(problem: HttpProblem): Record<string, unknown> {
  return { type: `/problems/${problem.code}`, title: problem.title, status: problem.status, detail: problem.message, ...problem.extra };
}

/** The `application/problem+json` response for `problem`. */
export function problemResponse(problem: HttpProblem): Response {
  return bytesResponse(JSON.stringify(problemBody(problem)), {
    status: problem.status,
    headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...problem.headers },
  });
}
