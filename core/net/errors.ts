/**
 * Why a request to a peer, or a name given to the network, failed. Each code carries the HTTP
 * status an API answering for such a request gives (docs/network.md, "Errors"), so no layer above
 * has to compare messages.
 */
import { MeshError } from '../errors.ts';

/** Every code a NetworkError carries, with its HTTP status. */
export const NETWORK_ERRORS = {
  /** No answer in time. The peer may still have received and processed the request. */
  timeout: 504,
  /** The peer is not connected and cannot be dialled, or the connection broke before the answer. */
  unreachable: 502,
  /** The peer does not serve the protocol asked for. */
  'unsupported-protocol': 502,
  /** The request is over the caller's bound or the serving handler's. */
  'request-too-large': 413,
  /** The answer is over the caller's bound or the serving handler's. */
  'response-too-large': 502,
  /** The peer's handler failed. */
  'remote-failed': 502,
  /** The peer answered something that is not a frame of the protocol. */
  'bad-response': 502,
  /** An app topic or protocol name is empty, too long, or has characters outside its alphabet. */
  'invalid-name': 400,
} as const;

export type NetworkErrorCode = keyof typeof NETWORK_ERRORS;

/** A failure of the network port; `status` is the HTTP status its code maps to. */
export class NetworkError extends MeshError {
  declare readonly code: NetworkErrorCode;
  readonly status: number;

  constructor(code: NetworkErrorCode, message: string) {
    super(code, message);
    this.status = NETWORK_ERRORS[code];
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
