/**
 * Frames on a byte stream (a raw stream of the network port): each is a u32 big-endian length,
 * then that many bytes. A protocol that pipelines many small messages on one stream writes their
 * frames back to back, several in one chunk, and reads them as they arrive, whatever the chunks.
 */
import { InvalidEncodingError } from '../errors.ts';

const PREFIX_BYTES = 4;

/** The frames of `bodies`, back to back in one chunk. */
export function framesOf(bodies: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const body of bodies) length += PREFIX_BYTES + body.length;
  const out = new Uint8Array(length);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const body of bodies) {
    view.setUint32(at, body.length);
    out.set(body, at + PREFIX_BYTES);
    at += PREFIX_BYTES + body.length;
  }
  return out;
}

/**
 * Cuts a byte stream into frames: `push` each chunk as it arrives and take the frames it
 * completes. A length over `maxBytes` throws InvalidEncodingError before its body is waited for.
 * Whole frames inside a chunk are handed out as views of it; a frame split across chunks is
 * gathered in a buffer of its own size, so each byte is copied at most once however the stream
 * is cut.
 */
export class FrameReader {
  readonly #maxBytes: number;
  readonly #prefix = new Uint8Array(PREFIX_BYTES);
  #prefixFilled = 0;
  /** The frame being gathered, once its length is known. */
  #frame: Uint8Array | null = null;
  #frameFilled = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Bytes of an unfinished frame held (its length prefix included). */
  get buffered(): number {
    return this.#prefixFilled + this.#frameFilled;
  }

  push(chunk: Uint8Array): Uint8Array[] {
    const frames: Uint8Array[] = [];
    const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let at = 0;
    while (at < chunk.length) {
      if (this.#frame !== null) {
        const take = Math.min(this.#frame.length - this.#frameFilled, chunk.length - at);
        this.#frame.set(chunk.subarray(at, at + take), this.#frameFilled);
        this.#frameFilled += take;
        at += take;
        if (this.#frameFilled === this.#frame.length) {
          frames.push(this.#frame);
          this.#frame = null;
          this.#frameFilled = 0;
        }
        continue;
      }
      let length: number;
      if (this.#prefixFilled === 0 && chunk.length - at >= PREFIX_BYTES) {
        length = view.getUint32(at);
        at += PREFIX_BYTES;
      } else {
        const take = Math.min(PREFIX_BYTES - this.#prefixFilled, chunk.length - at);
        this.#prefix.set(chunk.subarray(at, at + take), this.#prefixFilled);
        this.#prefixFilled += take;
        at += take;
        if (this.#prefixFilled < PREFIX_BYTES) break;
        this.#prefixFilled = 0;
        length = new DataView(this.#prefix.buffer).getUint32(0);
      }
      if (length > this.#maxBytes) throw new InvalidEncodingError('too-long', `a frame of ${length} bytes is over the bound of ${this.#maxBytes}`);
      if (chunk.length - at >= length) {
        frames.push(chunk.subarray(at, at + length));
        at += length;
      } else {
        this.#frame = new Uint8Array(length);
      }
    }
    return frames;
  }
}
