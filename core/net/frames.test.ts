// Frames on a byte stream: whatever the chunks, the frames come out whole and in order, each byte
// copied at most once; a length over the bound is refused before its body. Runs on Node, Deno and
// Chromium.
import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../../test/harness.ts';
import { InvalidEncodingError } from '../errors.ts';
import { FrameReader, framesOf } from './frames.ts';

/** `bytes` cut at `cuts` (positions, any order, duplicates allowed). */
function cut(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const to of [...at, bytes.length]) {
    chunks.push(bytes.slice(from, to));
    from = to;
  }
  return chunks;
}

test('frames: any cut of a stream of frames gives back the frames, whole and in order', () => {
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 40 }), (bodies, cuts) => {
      const reader = new FrameReader(300);
      const out: Uint8Array[] = [];
      for (const chunk of cut(framesOf(bodies), cuts)) out.push(...reader.push(chunk).map((f) => f.slice()));
      assert.deepEqual(out, bodies);
      assert.equal(reader.buffered, 0);
    }),
  );
});

test('frames: a length over the bound is refused as soon as its prefix is read, even split over chunks', () => {
  const stream = framesOf([Uint8Array.of(1, 2), new Uint8Array(11)]);
  const reader = new FrameReader(10);
  assert.deepEqual(reader.push(stream.subarray(0, 8)), [Uint8Array.of(1, 2)]);
  assert.throws(() => reader.push(stream.subarray(8, 10)), InvalidEncodingError, 'a frame of 11 bytes is over the bound of 10');
  // An empty frame is a frame.
  assert.deepEqual(new FrameReader(10).push(framesOf([new Uint8Array(0)])), [new Uint8Array(0)]);
});

test('frames: a frame sent a byte at a time is gathered in place and comes out whole', () => {
  const body = new Uint8Array(64 * 1024).map((_, i) => i);
  const stream = framesOf([body]);
  const reader = new FrameReader(64 * 1024);
  let frames: Uint8Array[] = [];
  for (let i = 0; i < stream.length; i++) {
    frames = frames.concat(reader.push(stream.subarray(i, i + 1)));
    if (i >= 4 && i < stream.length - 1) assert.equal(reader.buffered, i + 1 - 4);
  }
  assert.deepEqual(frames, [body]);
});
