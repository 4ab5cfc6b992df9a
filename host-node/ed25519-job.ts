/**
 * A batch of signatures laid out in one SharedArrayBuffer, which every verifier thread sees at once:
 *
 *   control  Int32 × 2          the next signature to take, and how many are done
 *   offsets  Uint32 × (n + 1)   where each signature's record starts in the data, and the end
 *   verdicts Uint8 × n          1: the equation holds
 *   data                        per signature: key (32) ‖ signature (64) ‖ message
 */
import type { SignedMessage } from '../core/crypto/ed25519.ts';

/** What the main thread posts to each verifier thread. */
export interface JobMessage {
  readonly id: number;
  readonly buffer: SharedArrayBuffer;
  readonly count: number;
}

export interface JobView {
  readonly count: number;
  readonly control: Int32Array;
  readonly verdicts: Uint8Array;
  item(i: number): SignedMessage;
}

const KEY = 32;
const SIGNATURE = 64;

function layout(count: number): { offsets: number; verdicts: number; data: number } {
  const offsets = 8;
  const verdicts = offsets + 4 * (count + 1);
  return { offsets, verdicts, data: verdicts + count };
}

/** The job of `items` (keys of 32 bytes and signatures of 64: the core checked their encodings). */
export function makeJob(items: readonly SignedMessage[]): SharedArrayBuffer {
  const at = layout(items.length);
  let size = at.data;
  for (const item of items) size += KEY + SIGNATURE + item.message.length;
  const buffer = new SharedArrayBuffer(size);
  const offsets = new Uint32Array(buffer, at.offsets, items.length + 1);
  const bytes = new Uint8Array(buffer);
  let offset = at.data;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    offsets[i] = offset;
    bytes.set(item.publicKey, offset);
    bytes.set(item.signature, offset + KEY);
    bytes.set(item.message, offset + KEY + SIGNATURE);
    offset += KEY + SIGNATURE + item.message.length;
  }
  offsets[items.length] = offset;
  return buffer;
}

/** A view of a job of `count` signatures made by `makeJob`. */
export function jobView(buffer: SharedArrayBuffer, count: number): JobView {
  const control = new Int32Array(buffer, 0, 2);
  const bytes = new Uint8Array(buffer);
  const at = layout(count);
  const offsets = new Uint32Array(buffer, at.offsets, count + 1);
  return {
    count,
    control,
    verdicts: new Uint8Array(buffer, at.verdicts, count),
    item(i) {
      const start = offsets[i]!;
      return {
        publicKey: bytes.subarray(start, start + KEY),
        signature: bytes.subarray(start + KEY, start + KEY + SIGNATURE),
        message: bytes.subarray(start + KEY + SIGNATURE, offsets[i + 1]!),
      };
    },
  };
}
