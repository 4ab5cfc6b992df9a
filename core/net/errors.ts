/**
 * Why a request to a peer, or a name given to the network, failed. Each code carries the HTTP
 * status an API answering for such a request gives (docs/network.md, "Errors"), so no layer above
 * has to compare messages.
 */
import { type ErrorTable, RuledError } from '../errors.ts';

const PEER_REFUSED = { status: 502, problem: 'peer-refused' } as const;

/** Every code a NetworkError carries, with the HTTP status and problem an API answers it with. */
export const NETWORK_ERRORS = {
  /** No answer in time. The peer may still have received and processed the request. */
  timeout: { status: 504, problem: 'peer-timeout' },
  /** The peer is not connected and cannot be dialled, or the connection broke before the answer. */
  unreachable: { status: 502, problem: 'peer-unreachable' },
  /** The peer is connected but has as many requests in flight on the protocol as it takes. */
  busy: { status: 503, problem: 'peer-busy' },
  /** The peer does not serve the protocol asked for. */
  'unsupported-protocol': PEER_REFUSED,
  /** The request is over the caller's bound or the serving handler's. */
  'request-too-large': { status: 413, problem: 'too-large' },
  /** The answer is over the caller's bound or the serving handler's. */
  'response-too-large': PEER_REFUSED,
  /** The peer's handler failed. */
  'remote-failed': PEER_REFUSED,
  /** The peer answered something that is not a frame of the protocol. */
  'bad-response': PEER_REFUSED,
  /** An app topic or protocol name is empty, too long, or has characters outside its alphabet. */
  'invalid-name': { status: 400, problem: 'invalid-body' },
  /** A dial hint is not a multiaddr, or names another peer than the one to reach. */
  'invalid-address': { status: 400, problem: 'invalid-body' },
  /** A raw stream was reset by either side, or the connection under it broke. */
  'stream-reset': { status: 502, problem: 'peer-unreachable' },
  /**
   * The peer is reached only through a relay, the protocol needs a direct connection (bulk:
   * sync, job logs, tunnels), and the upgrade to one failed; the message says why.
   */
  'relayed-only': { status: 503, problem: 'peer-relayed' },
} as const satisfies ErrorTable;

export type NetworkErrorCode = keyof typeof NETWORK_ERRORS;

/** A failure of the network port; its table gives the HTTP status and problem of each code. */
export class NetworkError extends RuledError<typeof NETWORK_ERRORS> {
  constructor(code: NetworkErrorCode, message: string) {
    super(NETWORK_ERRORS, code, message);
  }
}

/** No answer within the timeout; the message says the peer may still have processed the request. */
export class RequestTimeoutError extends NetworkError {
  constructor(peer: string, protocol: string, timeoutMs: number) {
    super('timeout', `no answer from ${peer} on ${protocol} in ${timeoutMs} ms; the peer may still have processed the request`);
  }
}

/** The peer is not connected and could not be reached, or the connection broke mid-request. */
export class PeerUnreachableError extends NetworkError {
  constructor(message: string) {
    super('unreachable', message);
  }
}

/** The peer is connected, but the protocol's requests in flight between the two are at their limit. */
export class PeerBusyError extends NetworkError {
  constructor(message: string) {
    super('busy', message);
  }
}

/** The peer does not serve the protocol. */
export class ProtocolNotServedError extends NetworkError {
  constructor(peer: string, protocol: string) {
    super('unsupported-protocol', `${peer} does not serve ${protocol}`);
  }
}

/** A request or an answer is over its bound. */
export class MessageTooLargeError extends NetworkError {
  declare readonly code: 'request-too-large' | 'response-too-large';
}

/** The serving peer failed: its handler threw, or it answered outside the protocol. */
export class RemoteError extends NetworkError {
  declare readonly code: 'remote-failed' | 'bad-response';
}

/** An app topic or protocol name is not one the network carries. */
export class InvalidNameError extends NetworkError {
  constructor(message: string) {
    super('invalid-name', message);
  }
}

/** A dial hint that is not a multiaddr, or that names another peer than the one to reach. */
export class InvalidAddressError extends NetworkError {
  constructor(message: string) {
    super('invalid-address', message);
  }
}

/** A raw stream (Network.openStream, serveStream) was reset by either side, or its connection broke. */
export class StreamResetError extends NetworkError {
  constructor(message: string) {
    super('stream-reset', message);
  }
}

/** Only a relayed (limited) connection reaches the peer, and the protocol runs on direct ones only. */
export class RelayedOnlyError extends NetworkError {
  constructor(message: string) {
    super('relayed-only', message);
  }
}
