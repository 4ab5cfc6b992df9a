/**
 * Server-Sent Events (node-api.md §6) for any service: one JSON object per `data:` line, a `: keep-alive` comment
 * after every `keepAliveMs` without an event, and the subscription dropped as soon as the client
 * goes away (the body is cancelled or the request aborted).
 *
 * A client that reads slower than events arrive must not make the node hold an ever-growing
 * queue: past `maxQueued` unread events the stream is told why and closed (an EventSource then
 * reconnects and starts fresh).
 */
import { systemClock, type Clock, type Timer } from '../time/clock.ts';

/** Ends a subscription. */
export type Unsubscribe = () => void;

export interface EventStreamOptions {
  readonly keepAliveMs: number;
  /** Unread events one connection may queue before it is closed. */
  readonly maxQueued: number;
  /** Aborted when the client goes away (the request's signal). */
  readonly signal?: AbortSignal;
  /** Times the keep-alives (default: the system clock). */
  readonly clock?: Clock;
}

/** Response headers of every event stream. */
export const EVENT_STREAM_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
};

const encoder = new TextEncoder();
const KEEP_ALIVE = encoder.encode(': keep-alive\n\n');

/**
 * A byte stream of the events `subscribe` delivers, as SSE frames. It subscribes when created and
 * unsubscribes (and stops its timer) once cancelled, closed for overflow, or aborted.
 */
export function eventStream<T>(subscribe: (listener: (event: T) => void) => Unsubscribe, options: EventStreamOptions): ReadableStream<Uint8Array> {
  let unsubscribe: Unsubscribe | undefined;
  const clock = options.clock ?? systemClock;
  let timer: Timer | undefined;
  let onAbort: (() => void) | undefined;
  let ended = false;

  const stop = (): void => {
    if (ended) return;
    ended = true;
    timer?.cancel();
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    unsubscribe?.();
  };

  return new ReadableStream<Uint8Array>(
    {
      start(controller): void {
        const keepAlive = (): void => {
          timer?.cancel();
          timer = clock.setTimeout(() => {
            // A keep-alive is also held back from a client that reads nothing.
            if (controller.desiredSize !== null && controller.desiredSize > 0) controller.enqueue(KEEP_ALIVE);
            keepAlive();
          }, options.keepAliveMs);
        };
        onAbort = (): void => {
          stop();
          try {
            controller.close();
          } catch {
            // Already closed or cancelled.
          }
        };
        if (options.signal?.aborted) {
          ended = true;
          controller.close();
          return;
        }
        options.signal?.addEventListener('abort', onAbort);
        unsubscribe = subscribe((event) => {
          if (ended) return;
          if (controller.desiredSize === null || controller.desiredSize <= 0) {
            stop();
            controller.enqueue(encoder.encode(`: closed: more than ${options.maxQueued} events unread\n\n`));
            controller.close();
            return;
          }
          let frame: Uint8Array;
          try {
            frame = encoder.encode(`data: ${JSON.stringify(event)}\n\n`);
          } catch (error) {
            // An event that cannot be written (a bigint, a cycle) ends this stream, not the emitter.
            stop();
            controller.error(error);
            return;
          }
          controller.enqueue(frame);
          keepAlive();
        });
        // The stream may have ended inside `subscribe` (events delivered at once overflowed it).
        if (ended) unsubscribe();
        else keepAlive();
      },
      cancel(): void {
        stop();
      },
    },
    // Counted in events: each chunk is one frame.
    new CountQueuingStrategy({ highWaterMark: options.maxQueued }),
  );
}
