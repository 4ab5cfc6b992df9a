/**
 * The directory's problem catalog (RFC 9457 through core/web/problem.ts): every problem it answers,
 * the kit's included, each with what it means, which the service documents at `/problems/<code>`
 * (see `problemPage`). A handler throws a `ProblemError`; the kit turns it into the response.
 */
import { type ProblemKind, problemClass, WEB_PROBLEMS } from '../../core/web/problem.ts';

export type { FieldError } from '../../core/web/problem.ts';

/** Every problem the directory answers, by code. */
export const PROBLEMS = {
  'bad-request': {
    ...WEB_PROBLEMS['bad-request'],
    about: 'The request is not valid HTTP/1.1 (a malformed request line or header). The connection is closed.',
  },
  'invalid-parameter': {
    ...WEB_PROBLEMS['invalid-parameter'],
    about:
      'A query or path parameter breaks its rule (pattern, enumeration or range). The `errors` member names each parameter; `/openapi.json` states every rule.',
  },
  'unknown-parameter': {
    ...WEB_PROBLEMS['unknown-parameter'],
    about: 'The query names a parameter this operation does not take. It is refused rather than ignored, so a misspelt filter never silently widens a search.',
  },
  'repeated-parameter': {
    ...WEB_PROBLEMS['repeated-parameter'],
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
    about:
      'Reading a submission needs the token from its receipt, as `Authorization: Bearer <token>` or `?token=`. The same answer is given for an unknown submission, so it reveals nothing.',
  },
  'not-found': {
    ...WEB_PROBLEMS['not-found'],
    about: 'No resource at this path, or no record with this well-formed id.',
  },
  'method-not-allowed': {
    ...WEB_PROBLEMS['method-not-allowed'],
    about: 'The path exists but not for this method; the `Allow` header lists the methods it takes.',
  },
  'too-large': {
    status: 413,
    title: 'Request too large',
    about:
      'The body (or, on a read, the query string) is over the bound of the route. Bodies are refused from their declared length before anything is parsed.',
  },
  'unsupported-media-type': {
    status: 415,
    title: 'Unsupported media type',
    about: 'Submissions take `application/x-www-form-urlencoded` or `application/json`.',
  },
  'request-timeout': {
    ...WEB_PROBLEMS['request-timeout'],
    about: 'The request did not arrive in time. Send it again, whole.',
  },
  'headers-too-large': {
    ...WEB_PROBLEMS['headers-too-large'],
    about: "The request headers are over the server's bound. Send fewer or shorter headers.",
  },
  'rate-limited': {
    status: 429,
    title: 'Too many requests',
    about: 'This client has used its burst; wait the seconds in `Retry-After` before the next request.',
  },
  internal: {
    ...WEB_PROBLEMS.internal,
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
} as const satisfies Record<string, ProblemKind & { about: string }>;

export type ProblemCode = keyof typeof PROBLEMS;

/** A problem of the directory. */
export class ProblemError extends problemClass(PROBLEMS) {}

/**
 * What to do when the dataset cannot be loaded, a sentence. Printed on start with `served`, the
 * dataset file the directory reads; in every 503 of the registry without it, since file paths are
 * the operator's business, not the public's.
 */
export function importHint(served?: string): string {
  const source = 'it fetches one from the public sources, US EPA FRS and Wikidata';
  if (served === undefined) {
    return (
      `To get a dataset, run \`npx mesh directory import\` (${source}, into ~/.mesh/directory/directory.json, or into FILE with --out FILE), ` +
      'or start the directory with --data FILE.'
    );
  }
  return `To get a dataset, run \`npx mesh directory import --out ${served}\` (${source}, into the file this directory serves), or start the directory with --data FILE.`;
}

/** The registry-unavailable problem: always `factories: null`, never an empty list. */
export function unavailable(detail: string, retryAfterSeconds: number): ProblemError {
  return new ProblemError('registry-unavailable', detail, { factories: null }, { 'retry-after': String(retryAfterSeconds) });
}

/** True when `code` names a problem this service answers. */
export function isProblemCode(code: string): code is ProblemCode {
  return Object.hasOwn(PROBLEMS, code);
}
