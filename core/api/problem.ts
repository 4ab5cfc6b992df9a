/**
 * The node API's problem catalog (RFC 9457 through core/web/problem.ts): the kit's own problems
 * plus the node's. docs/node-api.md lists the codes. Handlers throw `ApiProblem`; `toProblem`
 * turns the node's own refusals into one, from the table of their error class.
 */
import { RuledError } from '../errors.ts';
import { type ProblemKind, problemClass, WEB_PROBLEMS } from '../web/problem.ts';

// Seconds a client should wait before offering a transaction to a full pool again (a block's time),
// or before asking again for an event stream.
const RETRY_AFTER_SECONDS = '10';

/** Every problem the API answers, by code. */
export const API_PROBLEMS = {
  ...WEB_PROBLEMS,
  'invalid-body': { status: 400, title: 'Invalid request body' },
  'ledger-rule': { status: 400, title: 'Refused by a ledger rule' },
  'signal-refused': { status: 400, title: 'Signal refused' },
  'invalid-signature': { status: 400, title: 'Signature does not verify' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  'insufficient-balance': { status: 402, title: 'Insufficient free balance' },
  'cross-origin': { status: 403, title: 'Cross-origin request refused' },
  'host-not-allowed': { status: 403, title: 'Host name refused' },
  'loopback-only': { status: 403, title: 'Served on loopback only' },
  'transaction-conflict': { status: 409, title: 'Transaction conflicts with the pool' },
  'bond-conflict': { status: 409, title: 'Unbond above the active bond' },
  'unknown-job': { status: 404, title: 'Unknown job' },
  'job-conflict': { status: 409, title: 'Job not in a state that allows this' },
  'no-host': { status: 503, title: 'No host took the job' },
  'bad-grant': { status: 400, title: 'Malformed capability token' },
  'already-revoked': { status: 409, title: 'Capability already revoked' },
  'trust-unchanged': { status: 409, title: 'Trust already in that state' },
  'unknown-channel': { status: 404, title: 'Unknown channel' },
  'channel-conflict': { status: 409, title: 'Channel not in a state that allows this' },
  'unknown-tunnel': { status: 404, title: 'Unknown tunnel' },
  'tunnel-conflict': { status: 409, title: 'Tunnel conflicts with another or a limit' },
  'tunnel-unavailable': { status: 503, title: 'Tunnels unavailable on this host' },
  'peer-unreachable': { status: 502, title: 'Peer unreachable' },
  'peer-refused': { status: 502, title: 'Peer refused the request' },
  'peer-timeout': { status: 504, title: 'No answer from the peer in time' },
  'peer-busy': { status: 503, title: 'Peer busy' },
  'peer-relayed': { status: 503, title: 'Peer reached only through a relay' },
  'signal-conflict': { status: 409, title: 'Signal conflicts with an earlier one' },
  'too-large': { status: 413, title: 'Content too large' },
  'unknown-profile': { status: 404, title: 'No profile held for that node' },
  'profile-conflict': { status: 409, title: 'A profile measured as late or later is held' },
  'unknown-name': { status: 404, title: 'Unknown name' },
  'name-taken': { status: 409, title: 'Name held by another node' },
  'unknown-rtt': { status: 404, title: 'No RTT known to that node' },
  'unknown-reply-token': { status: 404, title: 'Unknown reply token' },
  'already-replied': { status: 409, title: 'Request already answered' },
  'reply-too-late': { status: 410, title: 'Request no longer waiting for a reply' },
  'too-many-requests': { status: 429, title: 'Too many open requests' },
  'no-peers': { status: 503, title: 'No peer subscribed to the topic' },
  'too-many-subscriptions': { status: 507, title: 'Too many subscriptions' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type' },
  // A slot frees when another stream ends.
  'too-many-streams': { status: 503, title: 'Too many open event streams', headers: { 'retry-after': RETRY_AFTER_SECONDS } },
  // "Not now" rather than "not this": the client may retry after a block.
  'pool-full': { status: 503, title: 'Transaction pool full', headers: { 'retry-after': RETRY_AFTER_SECONDS } },
} as const satisfies Record<string, ProblemKind>;

export type ApiProblemCode = keyof typeof API_PROBLEMS;

/** A problem of the node's API. */
export class ApiProblem extends problemClass(API_PROBLEMS) {}

/**
 * The problem for one of the node's own refusals, as its error class's table names it; the rule
 * is kept as `rule`. Undefined for anything else (the kit answers it as a 500).
 */
export function toProblem(error: unknown): ApiProblem | undefined {
  if (error instanceof RuledError && isApiProblemCode(error.problem)) return new ApiProblem(error.problem, error.message, { rule: error.code });
  return undefined;
}

function isApiProblemCode(code: unknown): code is ApiProblemCode {
  return typeof code === 'string' && Object.hasOwn(API_PROBLEMS, code);
}
