/**
 * A byte duplex: what a raw stream between two peers (the network port's `openStream` and
 * `serveStream`) and a TCP connection (the tunnel's sockets port) both are, so that one splice
 * joins either to either. It has TCP's semantics: each direction ends on its own (`closeWrite`, a
 * FIN), and a reset on either side ends both at once.
 *
 * `ChunkQueue` is the reading half every implementation shares: chunks as they arrive, the end
 * of the other side's writing or its reset, and back pressure (the source is paused while more
 * than a bound is unread).
 */
import { concatBytes } from '../encoding/bytes.ts';
import { StreamResetError } from './errors.ts';

export interface Duplex extends AsyncIterable<Uint8Array> {
  /**
   * Sends `chunk` (which must not change afterwards) and resolves once the duplex takes more: a
   * slow reader on the other side slows the writer down. Rejects with StreamResetError once the
   * duplex is reset or closed for writing.
   */
  write(chunk: Uint8Array): Promise<void>;
  /**
   * Ends this side's writing (a FIN) once what was written has gone: the other side's reading
   * ends after the last byte. Reading goes on.
   */
  closeWrite(): Promise<void>;
  /**
   * Ends both directions at once (a reset): what is unread or unsent is dropped; the other side's
   * reads and writes fail with StreamResetError. Does nothing once the duplex is over.
   */
  reset(reason?: Error): void;
  /**
   * Resolves once both sides have closed their writing and this side has read everything;
   * rejects with StreamResetError when either side reset it or the connection under it broke.
   */
  readonly closed: Promise<void>;
}

/** Unread bytes past which a duplex pauses its source (DEFAULT_HIGH_WATER_BYTES). */
export const DEFAULT_HIGH_WATER_BYTES = 256 * 1024;

/** How a ChunkQueue slows its source: `pause` when too much is unread, `resume` when half of it is read. */
export interface Flow {
  pause(): void;
  resume(): void;
}

const noFlow: Flow = { pause: () => {}, resume: () => {} };

/**
 * The chunks one side of a duplex has received and not yet read. Iterate it once: it yields the
 * chunks, then ends after `end()` (the other side's FIN) or throws the error of `fail()` (a reset
 * by the other side: what arrived before it is still read) or of `abort()` (a reset by this side:
 * what is unread is dropped at once). Only the first of `end` and `fail` counts.
 */
export class ChunkQueue implements AsyncIterable<Uint8Array> {
  readonly #chunks: Uint8Array[] = [];
  readonly #flow: Flow;
  readonly #highWater: number;
  #bytes = 0;
  #paused = false;
  #end: 'fin' | Error | null = null;
  #wake: (() => void) | null = null;

  constructor(flow: Flow = noFlow, highWaterBytes = DEFAULT_HIGH_WATER_BYTES) {
    this.#flow = flow;
    this.#highWater = highWaterBytes;
  }

  push(chunk: Uint8Array): void {
    if (this.#end !== null || chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    if (!this.#paused && this.#bytes >= this.#highWater) {
      this.#paused = true;
      this.#flow.pause();
    }
    this.#awaken();
  }

  /** The other side closed its writing: reading ends after what is queued. */
  end(): void {
    if (this.#end !== null) return;
    this.#end = 'fin';
    this.#awaken();
  }

  /** The other side reset (or the connection broke): reading fails after what is queued. */
  fail(error: Error): void {
    if (this.#end !== null) return;
    this.#end = error;
    this.#awaken();
  }

  /** This side reset: what is queued is dropped and reading fails at once. */
  abort(error: Error): void {
    this.#chunks.length = 0;
    this.#bytes = 0;
    this.#end = error;
    this.#awaken();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    for (;;) {
      const chunk = this.#chunks.shift();
      if (chunk !== undefined) {
        this.#bytes -= chunk.length;
        if (this.#paused && this.#bytes <= this.#highWater / 2) {
          this.#paused = false;
          this.#flow.resume();
        }
        yield chunk;
        continue;
      }
      if (this.#end === 'fin') return;
      if (this.#end !== null) throw this.#end;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #awaken(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}

/**
 * The `closed` promise of a duplex and what settles it. It is marked handled, so a duplex nobody
 * awaits does not report an unhandled rejection when it is reset.
 */
export function closedSignal(): { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** The error a reset by the other side gives, with what `reason` says when it is known. */
export function resetByPeer(reason?: string): StreamResetError {
  return new StreamResetError(reason === undefined ? 'the stream was reset by the other side' : `the stream was reset: ${reason}`);
}

/** Everything `source` delivers until its end, as one new array. */
export async function readAll(source: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of source) chunks.push(chunk);
  return concatBytes(...chunks);
}
