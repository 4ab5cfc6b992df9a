/**
 * Server-Sent Events (node-api.md §6) for any service: one JSON object per `data:` line, a `: keep-alive` comment
 * after every `keepAliveMs` without an event, and the subscription dropped as soon as the client
 * goes away (the body is cancelled or the request aborted). A stream whose events have positions
 * (a job's log lines) gives each an `id:` line, which a reconnecting EventSource sends back as
 * `Last-Event-ID`; a stream that has an end (the job's output is complete) says so with a last
 * `event: end` frame and closes.
 *
 * A client that reads slower than events arrive must not make the node hold an ever-growing
 * queue: past `maxQueued` unread events the stream is told why and closed (an EventSource then
 * reconnects and starts fresh). A subscriber that can wait instead (one that replays history from a
 * store) paces itself with the stream's `Flow`: it sends only what fits, and waits for the client
 * to read before it sends more.
 *
 * The same stream can carry its events in another framing (`format`): a route whose events hold
 * bytes may offer them as length-prefixed binary frames to clients that ask for them.
 */
import { concatBytes } from '../encoding/bytes.ts';
import { type Clock, systemClock, type Timer } from '../time/clock.ts';

/** Ends a subscription. */
export type Unsubscribe = () => void;

/** How much the client has left unread, for a subscriber that can wait rather than overflow the stream. */
export interface Flow {
  /**
   * How many more events fit before the stream's bound closes it (0 once it has ended). For a
   * stream bounded in bytes, the bytes that fit.
   */
  room(): number;
  /** Resolves once at least half the bound is free again, or the stream has ended. */
  drained(): Promise<void>;
}

/** Starts a subscription: events go to `listener` until it calls `end` (no more) or is unsubscribed; `flow` paces it. */
export type Subscribe<T> = (listener: (event: T) => void, end: () => void, flow: Flow) => Unsubscribe;

export interface EventStreamOptions<T = unknown> {
  readonly keepAliveMs: number;
  /** Unread events one connection may queue before it is closed. */
  readonly maxQueued: number;
  /** When given, the bound is this many bytes of unread frames instead of `maxQueued` events. */
  readonly maxQueuedBytes?: number;
  /** Aborted when the client goes away (the request's signal). */
  readonly signal?: AbortSignal;
  /** Times the keep-alives (default: the system clock). */
  readonly clock?: Clock;
  /** The `id:` of an event's SSE frame (none by default, or for an event it answers undefined); one line, no NUL. */
  readonly id?: (event: T) => string | number | undefined;
  /** What an event's `data:` line carries, as JSON (default: the event itself). */
  readonly data?: (event: T) => unknown;
  /** The `event:` type of a frame that is not a plain message (none by default, or when it answers undefined). */
  readonly type?: (event: T) => string | undefined;
  /** How events become bytes (default: SSE frames, with `id`, `type` and `data`). */
  readonly format?: EventFormat<T>;
  /** Called once when the stream ends, however it ends (its slot, say, is free again). */
  readonly onEnd?: () => void;
}

/** How a stream's events and its few signals are written on the wire. */
export interface EventFormat<T> {
  /** The answer's media type. */
  readonly contentType: string;
  /** One event's frame; may throw for an event it cannot write, which ends the stream. */
  frame(event: T): Uint8Array;
  /** Sent after `keepAliveMs` without an event, so proxies and clients see the stream alive. */
  readonly keepAlive: Uint8Array;
  /** The last bytes of a stream closed because its reader fell `bound` behind. */
  overflow(bound: string): Uint8Array;
  /** The last bytes of a stream that ended because it had nothing more to send. */
  readonly end: Uint8Array;
}

/** Response headers of every event stream. */
export const EVENT_STREAM_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
};

/** Idle time before a keep-alive comment on the node's streams (node-api.md §6 and §8). */
export const SSE_KEEP_ALIVE_MS = 15_000;

const encoder = new TextEncoder();
const KEEP_ALIVE = encoder.encode(': keep-alive\n\n');
/** Frames of one burst joined into one chunk, at most about this many bytes. */
const MAX_CHUNK_BYTES = 64 * 1024;
/** The last frame of a stream that ended because it had nothing more to send. */
export const END_FRAME = 'event: end\ndata: {}\n\n';

/**
 * SSE frames: `id: …` and `event: …` (when `id` and `type` give them) and `data: <the event, or
 * data(event), as JSON>`; keep-alive and overflow as comments.
 */
export function sseFormat<T>(
  id?: (event: T) => string | number | undefined,
  data?: (event: T) => unknown,
  type?: (event: T) => string | undefined,
): EventFormat<T> {
  const field = (name: string, value: string | number | undefined): string => (value === undefined ? '' : `${name}: ${oneLine(value)}\n`);
  return {
    contentType: EVENT_STREAM_HEADERS['content-type']!,
    frame: (event) =>
      encoder.encode(`${field('id', id?.(event))}${field('event', type?.(event))}data: ${JSON.stringify(data === undefined ? event : data(event))}\n\n`),
    keepAlive: KEEP_ALIVE,
    overflow: (bound) => encoder.encode(`: closed: more than ${bound} unread\n\n`),
    end: encoder.encode(END_FRAME),
  };
}

function oneLine(value: string | number): string {
  const text = String(value);
  // A line break would end the field early; a NUL makes a browser ignore an id.
  if (/[\r\n\0]/.test(text)) throw new RangeError(`an event id or type must be one line without NUL, got ${JSON.stringify(text)}`);
  return text;
}

/**
 * A byte stream of the events `subscribe` delivers, as SSE frames. It subscribes when created and
 * unsubscribes (and stops its timer) once cancelled, closed for overflow, aborted, or ended by the
 * subscriber calling `end` (which sends END_FRAME first).
 */
export function eventStream<T>(subscribe: Subscribe<T>, options: EventStreamOptions<T>): ReadableStream<Uint8Array> {
  let unsubscribe: Unsubscribe | undefined;
  const clock = options.clock ?? systemClock;
  const format = options.format ?? sseFormat(options.id, options.data, options.type);
  let timer: Timer | undefined;
  let onAbort: (() => void) | undefined;
  let ended = false;
  const byBytes = options.maxQueuedBytes !== undefined;
  const bound = byBytes ? `${options.maxQueuedBytes} bytes` : `${options.maxQueued} events`;
  // How many events each chunk holds, for the count of unread events.
  const eventsIn = new WeakMap<Uint8Array, number>();
  const capacity = byBytes ? options.maxQueuedBytes! : options.maxQueued;
  // The free room, set once the stream starts: what the queue takes less the burst not yet handed over.
  let free = (): number => 0;
  let waiting: (() => void)[] = [];
  const wake = (): void => {
    if (!ended && free() < capacity / 2) return;
    const woken = waiting;
    waiting = [];
    for (const resolve of woken) resolve();
  };
  const flow: Flow = {
    room: () => (ended ? 0 : Math.max(0, free())),
    drained: () => {
      if (ended || free() >= capacity / 2) return Promise.resolve();
      return new Promise((resolve) => waiting.push(resolve));
    },
  };

  const stop = (): void => {
    if (ended) return;
    ended = true;
    options.onEnd?.();
    wake();
    timer?.cancel();
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    unsubscribe?.();
  };

  return new ReadableStream<Uint8Array>(
    {
      start(controller): void {
        // One timer at a time, not one per event: each event only notes when it went out, and the
        // timer, when it fires early, waits out the rest of the quiet time.
        let sentAt = clock.now();
        const keepAlive = (inMs = options.keepAliveMs): void => {
          timer = clock.setTimeout(() => {
            const quietMs = clock.now() - sentAt;
            if (quietMs < options.keepAliveMs) return keepAlive(options.keepAliveMs - quietMs);
            // A keep-alive is also held back from a client that reads nothing.
            if (controller.desiredSize !== null && controller.desiredSize > 0) controller.enqueue(format.keepAlive);
            sentAt = clock.now();
            keepAlive();
          }, inMs);
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
          stop();
          controller.close();
          return;
        }
        options.signal?.addEventListener('abort', onAbort);
        // The frames of the events that come in one turn (a burst of messages) go out as one chunk.
        let burst: Uint8Array[] = [];
        let burstBytes = 0;
        free = (): number => (controller.desiredSize ?? 0) - (byBytes ? burstBytes : burst.length);
        const flush = (): void => {
          if (ended || burst.length === 0) return;
          const chunk = burst.length === 1 ? burst[0]! : concatBytes(...burst);
          eventsIn.set(chunk, burst.length);
          burst = [];
          burstBytes = 0;
          controller.enqueue(chunk);
        };
        const end = (): void => {
          if (ended) return;
          flush();
          stop();
          controller.enqueue(format.end);
          controller.close();
        };
        const deliver = (event: T): void => {
          if (ended) return;
          // The burst not yet handed over counts as unread too.
          if (controller.desiredSize === null || free() <= 0) {
            flush();
            stop();
            const last = format.overflow(bound);
            if (last.length > 0) controller.enqueue(last);
            controller.close();
            return;
          }
          let frame: Uint8Array;
          try {
            frame = format.frame(event);
          } catch (error) {
            // An event that cannot be written (a bigint, a cycle) ends this stream, not the emitter.
            stop();
            controller.error(error);
            return;
          }
          burst.push(frame);
          burstBytes += frame.length;
          // A long burst (a replay of the whole ring) goes out in chunks of a bounded size.
          if (burstBytes >= MAX_CHUNK_BYTES) flush();
          else if (burst.length === 1) queueMicrotask(flush);
          sentAt = clock.now();
        };
        try {
          unsubscribe = subscribe(deliver, end, flow);
        } catch (error) {
          // A subscriber that refuses at once: the stream never opened.
          stop();
          throw error;
        }
        // The stream may have ended inside `subscribe` (events delivered at once overflowed it, or it had no more).
        if (ended) unsubscribe();
        else keepAlive();
      },
      // Called as the client reads: a subscriber waiting for room may go on.
      pull(): void {
        wake();
      },
      cancel(): void {
        stop();
      },
    },
    // Counted in events (a chunk counts the frames it holds), or in bytes.
    byBytes
      ? new ByteLengthQueuingStrategy({ highWaterMark: options.maxQueuedBytes! })
      : { highWaterMark: options.maxQueued, size: (chunk) => eventsIn.get(chunk!) ?? 1 },
  );
}
