import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { sha256 } from './sha256.ts';
import { createLanesBatch } from './sha256-lanes.ts';

// Every runtime the project runs on has WebAssembly SIMD; null would mean a silent slow path.
const batch = (await createLanesBatch())!;

function hashAll(messages: readonly Uint8Array[]): string[] {
  const ends: number[] = [];
  let at = 0;
  for (const m of messages) ends.push((at += m.length));
  const data = new Uint8Array(at);
  messages.forEach((m, i) => data.set(m, ends[i]! - m.length));
  const out = new Uint8Array(32 * messages.length);
  batch(data, ends, out);
  return messages.map((_, i) => toHex(out.subarray(32 * i, 32 * i + 32)));
}

// Lengths where the padding changes shape: one block holds at most 55 bytes of message.
const EDGES = [0, 1, 55, 56, 63, 64, 65, 66, 119, 120, 127, 128, 1000];
const messageArb = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  fc.constantFrom(...EDGES).chain((n) => fc.uint8Array({ minLength: n, maxLength: n })),
);

test('sha256 lanes: the runtime has WebAssembly SIMD', () => {
  assert.isFunction(batch);
});

test('sha256 lanes: equal hashing one by one, for no, one and many messages, lanes of unequal lengths side by side', () => {
  fc.assert(
    fc.property(fc.array(messageArb, { maxLength: 19 }), (messages) => {
      assert.deepEqual(
        hashAll(messages),
        messages.map((m) => toHex(sha256(m))),
      );
    }),
    { numRuns: 150 },
  );
});

test('sha256 lanes: every padding edge, a large message among small ones, then small ones again', () => {
  const edges = EDGES.map((n) => new Uint8Array(n).fill(n & 0xff));
  assert.deepEqual(
    hashAll(edges),
    edges.map((m) => toHex(sha256(m))),
  );
  // Grows the module's memory, and leaves its bytes behind for the next, shorter batch to pad over.
  const large = [Uint8Array.of(1), new Uint8Array(300_000).fill(0xab), Uint8Array.of(2, 3)];
  assert.deepEqual(
    hashAll(large),
    large.map((m) => toHex(sha256(m))),
  );
  const after = [new Uint8Array(10), new Uint8Array(70)];
  assert.deepEqual(
    hashAll(after),
    after.map((m) => toHex(sha256(m))),
  );
});
