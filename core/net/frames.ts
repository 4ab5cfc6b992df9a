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
 */
export class FrameReader {
  readonly #maxBytes: number;
  #buffer = new Uint8Array(0);

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Bytes of an unfinished frame held. */
  get buffered(): number {
    return this.#buffer.length;
  }

  push(chunk: Uint8Array): Uint8Array[] {
    let bytes = chunk;
    if (this.#buffer.length > 0) {
      bytes = new Uint8Array(this.#buffer.length + chunk.length);
      bytes.set(this.#buffer);
      bytes.set(chunk, this.#buffer.length);
    }
    const frames: Uint8Array[] = [];
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let at = 0;
    while (bytes.length - at >= PREFIX_BYTES) {
      const length = view.getUint32(at);
      if (length > this.#maxBytes) throw new InvalidEncodingError('too-long', `a frame of ${length} bytes is over the bound of ${this.#maxBytes}`);
      if (bytes.length - at - PREFIX_BYTES < length) break;
      frames.push(bytes.subarray(at + PREFIX_BYTES, at + PREFIX_BYTES + length));
      at += PREFIX_BYTES + length;
    }
    // The rest is copied, so the frames handed out never share a buffer that is written again.
    this.#buffer = bytes.slice(at);
    return frames;
  }
}
