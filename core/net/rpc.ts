/**
 * What every implementation of the network port's request/response shares: the bounds a request
 * runs under, its deadline, and what a failing handler tells the requester.
 */
import { toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import type { Clock } from '../time/clock.ts';
import { MessageTooLargeError, RequestTimeoutError } from './errors.ts';
import { DEFAULT_RPC_MAX_BYTES, DEFAULT_RPC_TIMEOUT_MS, type RequestOptions, rpcProtocolId, type ServeOptions } from './network.ts';

/** The reasons a serving handler's signal aborts with. */
export const handlerStops = {
  requesterGone: (): Error => new Error('the requester went away'),
  nodeStopped: (): Error => new Error('the node stopped'),
  deadline: (ms: number): Error => new Error(`the handler ran past its deadline of ${ms} ms`),
} as const;

/** A failing handler's message, sent to the requester, is cut to this many characters. */
export const MAX_FAILURE_CHARS = 512;

export interface Bounds {
  readonly maxRequestBytes: number;
  readonly maxResponseBytes: number;
}

/** The bounds of a call or a handler, defaults filled in. */
export function boundsOf(options: RequestOptions | ServeOptions): Bounds {
  return {
    maxRequestBytes: options.maxRequestBytes ?? DEFAULT_RPC_MAX_BYTES,
    maxResponseBytes: options.maxResponseBytes ?? DEFAULT_RPC_MAX_BYTES,
  };
}

/** One request as an implementation carries it out. */
export interface Call {
  /** The libp2p protocol id. */
  readonly id: string;
  /** The peer's NodeId in hex, for messages. */
  readonly peer: string;
  /** The caller's bounds. */
  readonly bounds: Bounds;
  /** Aborted at the deadline or by the caller. */
  readonly signal: AbortSignal;
}

/**
 * What every `Network.request` does around its transport (async, so a bad name rejects rather
 * than throws): checks the name and the caller's bound
 * on the request, then runs `exchange` under the deadline and the caller's signal.
 */
export async function runRequest(
  clock: Clock,
  peer: Uint8Array,
  protocol: string,
  data: Uint8Array,
  options: RequestOptions,
  exchange: (call: Call) => Promise<Uint8Array>,
): Promise<Uint8Array> {
  const id = rpcProtocolId(protocol);
  const bounds = boundsOf(options);
  const name = toHex(peer);
  return await withDeadline(clock, name, id, options, async (signal) => {
    if (data.length > bounds.maxRequestBytes) {
      throw new MessageTooLargeError('request-too-large', `a request of ${data.length} bytes is over this call's bound of ${bounds.maxRequestBytes}`);
    }
    return exchange({ id, peer: name, bounds, signal });
  });
}

/**
 * Runs `run` with a signal that aborts at the request's deadline (as RequestTimeoutError) or with
 * the caller's signal (as its reason), and settles as soon as either happens.
 */
export async function withDeadline<T>(
  clock: Clock,
  peer: string,
  protocol: string,
  options: RequestOptions,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  options.signal?.throwIfAborted();
  const timeoutMs = options.timeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = clock.setTimeout(() => controller.abort(new RequestTimeoutError(peer, protocol, timeoutMs)), timeoutMs);
  const onAbort = (): void => controller.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const aborted = new Promise<never>((_, reject) => {
    controller.signal.addEventListener('abort', () => reject(controller.signal.reason as Error), { once: true });
  });
  aborted.catch(() => {});
  try {
    const running = run(controller.signal);
    // Once abandoned, how `run` ends is no one's concern.
    running.catch(() => {});
    return await Promise.race([running, aborted]);
  } finally {
    timer.cancel();
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * What the requester learns of a handler's failure: the message of a MeshError (the handler
 * meant it for the caller), else nothing of the internals.
 */
export function failureMessage(error: unknown): string {
  const message = error instanceof MeshError ? error.message : 'the handler failed';
  return message.slice(0, MAX_FAILURE_CHARS);
}
