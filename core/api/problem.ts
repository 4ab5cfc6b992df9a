/**
 * Problem details (RFC 9457) for every error the node's HTTP API answers. Each condition has a
 * stable `code` and one status; its `type` is `/problems/<code>` (the convention the directory
 * uses too; docs/node-api.md lists the codes). Handlers throw `ApiProblem`; `toProblem` turns
 * whatever a request threw, including the node's own errors, into one, in one place.
 */
import { MempoolError } from '../chain/mempool.ts';
import { MeshError } from '../errors.ts';
import { LedgerRuleError } from '../ledger/apply.ts';
import { SignalError } from '../signal/errors.ts';

/** Every problem the API answers, by code. */
export const API_PROBLEMS = {
  'invalid-parameter': { status: 400, title: 'Invalid parameter' },
  'unknown-parameter': { status: 400, title: 'Unknown parameter' },
  'invalid-body': { status: 400, title: 'Invalid request body' },
  'ledger-rule': { status: 400, title: 'Refused by a ledger rule' },
  'signal-refused': { status: 400, title: 'Signal refused' },
  'bad-request': { status: 400, title: 'Bad request' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  'insufficient-balance': { status: 402, title: 'Insufficient free balance' },
  'cross-origin': { status: 403, title: 'Cross-origin request refused' },
  'host-not-allowed': { status: 403, title: 'Host name refused' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'transaction-conflict': { status: 409, title: 'Transaction conflicts with the pool' },
  'signal-conflict': { status: 409, title: 'Signal conflicts with an earlier one' },
  'request-timeout': { status: 408, title: 'Request timeout' },
  'too-large': { status: 413, title: 'Content too large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type' },
  'headers-too-large': { status: 431, title: 'Request header fields too large' },
  internal: { status: 500, title: 'Internal error' },
  'pool-full': { status: 503, title: 'Transaction pool full' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ApiProblemCode = keyof typeof API_PROBLEMS;

/** An error that crosses the wire: answered as problem details with its code's status. */
export class ApiProblem extends MeshError {
  declare readonly code: ApiProblemCode;
  readonly status: number;
  /** Extension members of the body (`errors`, `rule`, `limit_bytes`). */
  readonly extra: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ApiProblemCode, detail: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(code, detail);
    this.status = API_PROBLEMS[code].status;
    this.extra = extra;
    this.headers = headers;
  }
}

// Mempool codes that mean "not now" rather than "not this": the client may retry after a block.
const POOL_BUSY = new Set(['full', 'sender-full']);
const RETRY_AFTER_SECONDS = '10';

/**
 * The problem for anything a request threw. The node's own refusals keep their rule as `rule`;
 * anything else is a 500 whose detail says nothing about the cause (`onUnexpected` hears it).
 */
export function toProblem(error: unknown, onUnexpected: (error: unknown) => void): ApiProblem {
  if (error instanceof ApiProblem) return error;
  if (error instanceof LedgerRuleError) {
    const code = error.code === 'insufficient-free-balance' ? 'insufficient-balance' : 'ledger-rule';
    return new ApiProblem(code, error.message, { rule: error.code });
  }
  if (error instanceof MempoolError) {
    if (POOL_BUSY.has(error.code)) {
      return new ApiProblem('pool-full', error.message, { rule: error.code }, { 'retry-after': RETRY_AFTER_SECONDS });
    }
    return new ApiProblem('transaction-conflict', error.message, { rule: error.code });
  }
  if (error instanceof SignalError) {
    return new ApiProblem(error.code === 'burn-used' ? 'signal-conflict' : 'signal-refused', error.message, { rule: error.code });
  }
  onUnexpected(error);
  return new ApiProblem('internal', 'the request failed unexpectedly');
}

/** The `application/problem+json` response for `problem`. */
export function problemResponse(problem: ApiProblem): Response {
  const { status, title } = API_PROBLEMS[problem.code];
  const body = JSON.stringify({ type: `/problems/${problem.code}`, title, status, detail: problem.message, ...problem.extra });
  return new Response(body, {
    status,
    headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...problem.headers },
  });
}
