/**
 * Problem details (RFC 9457) for every error the directory answers. Each condition has a stable
 * `code`; its `type` is the relative URI `/problems/<code>`, the same string on every host, and
 * the service documents it at that path (see `problemPage`). A handler throws a `ProblemError`;
 * the router turns it into the response in one place.
 */
import { MeshError } from '../../core/errors.ts';

interface ProblemKind {
  readonly status: number;
  readonly title: string;
  /** What it means and what the client should do: the page at `/problems/<code>`. */
  readonly about: string;
}

/** Every problem the directory answers, by code. */
export const PROBLEMS = {
  'invalid-parameter': {
    status: 400,
    title: 'Invalid parameter',
    about: 'A query or path parameter breaks its rule (pattern, enumeration or range). The `errors` member names each parameter; `/openapi.json` states every rule.',
  },
  'unknown-parameter': {
    status: 400,
    title: 'Unknown parameter',
    about: 'The query names a parameter this operation does not take. It is refused rather than ignored, so a misspelt filter never silently widens a search.',
  },
  'repeated-parameter': {
    status: 400,
    title: 'Repeated parameter',
    about: 'A parameter appears more than once. Every parameter takes one value; filters combine with AND across different parameters only.',
  },
  'invalid-body': {
    status: 400,
    title: 'Invalid request body',
    about: 'The body is not valid JSON or form data, or a field breaks its rule. The `errors` member names each field.',
  },
  unauthorized: {
    status: 401,
    title: 'Unauthorized',
    about: 'Reading a submission needs the token from its receipt, as `Authorization: Bearer <token>` or `?token=`. The same answer is given for an unknown submission, so it reveals nothing.',
  },
  'not-found': {
    status: 404,
    title: 'Not found',
    about: 'No resource at this path, or no record with this well-formed id.',
  },
  'method-not-allowed': {
    status: 405,
    title: 'Method not allowed',
    about: 'The path exists but not for this method; the `Allow` header lists the methods it takes.',
  },
  'too-large': {
    status: 413,
    title: 'Request too large',
    about: 'The body (or, on a read, the query string) is over the bound of the route. Bodies are refused from their declared length before anything is parsed.',
  },
  'unsupported-media-type': {
    status: 415,
    title: 'Unsupported media type',
    about: 'Submissions take `application/x-www-form-urlencoded` or `application/json`.',
  },
  'rate-limited': {
    status: 429,
    title: 'Too many requests',
    about: 'This client has used its burst; wait the seconds in `Retry-After` before the next request.',
  },
  internal: {
    status: 500,
    title: 'Internal error',
    about: 'The service failed in a way it did not expect. The request may be retried.',
  },
  'submissions-unavailable': {
    status: 503,
    title: 'Submissions unavailable',
    about: 'The private store of submissions could not be written or read. Nothing was stored; send the request again after the seconds in `Retry-After`.',
  },
  'registry-unavailable': {
    status: 503,
    title: 'Registry unavailable',
    about: 'The dataset could not be loaded. The body carries `factories: null`: this is never an empty directory. Retry after the seconds in `Retry-After`.',
  },
} as const satisfies Record<string, ProblemKind>;

export type ProblemCode = keyof typeof PROBLEMS;

/** One item of a problem's `errors` member: which parameter or field, and what is wrong with it. */
export interface FieldError {
  readonly name: string;
  readonly detail: string;
}

/** An error that crosses the wire: the router answers it as problem details. */
export class ProblemError extends MeshError {
  declare readonly code: ProblemCode;
  readonly status: number;
  /** Extension members of the body, e.g. `errors`, `factories: null`. */
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(code: ProblemCode, detail: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(code, detail);
    this.status = PROBLEMS[code].status;
    this.extra = extra;
    this.headers = headers;
  }
}

/** The problem details object of `error`. */
export function problemBody(error: ProblemError): Record<string, unknown> {
  const kind = PROBLEMS[error.code];
  return { type: `/problems/${error.code}`, title: kind.title, status: kind.status, detail: error.message, ...error.extra };
}

/** The `application/problem+json` response for `error`. */
export function problemResponse(error: ProblemError): Response {
  const kind = PROBLEMS[error.code];
  return new Response(JSON.stringify(problemBody(error)), {
    status: kind.status,
    headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...error.headers },
  });
}

/** The registry-unavailable problem: always `factories: null`, never an empty list. */
export function unavailable(detail: string, retryAfterSeconds: number): ProblemError {
  return new ProblemError('registry-unavailable', detail, { factories: null }, { 'retry-after': String(retryAfterSeconds) });
}

/** True when `code` names a problem this service answers. */
export function isProblemCode(code: string): code is ProblemCode {
  return Object.hasOwn(PROBLEMS, code);
}
