/**
 * What every implementation of the network port's request/response shares: the bounds a request
 * runs under, its deadline, and what a failing handler tells the requester.
 */
import { MeshError } from '../errors.ts';
import { RequestTimeoutError } from './errors.ts';
import { DEFAULT_RPC_MAX_BYTES, DEFAULT_RPC_TIMEOUT_MS, type RequestOptions, type ServeOptions } from './network.ts';

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

/**
 * Runs `run` with a signal that aborts at the request's deadline (as RequestTimeoutError) or with
 * the caller's signal (as its reason), and settles as soon as either happens.
 */
export async function withDeadline<T>(peer: string, protocol: string, options: RequestOptions, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  options.signal?.throwIfAborted();
  const timeoutMs = options.timeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new RequestTimeoutError(peer, protocol, timeoutMs)), timeoutMs);
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
    clearTimeout(timer);
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
