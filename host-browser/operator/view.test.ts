// The operator page's figures: the chain as the block stream tells it, and the peers' map.
import { assert } from 'chai';
import type { BlockEvent } from '../../core/ledger/block.ts';
import { test } from '../../test/harness.ts';
import { ChainWatch, projectCoordinates, shortId } from './view.ts';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const hash = (branch: string, height: number): string => `${branch}${height}`.padEnd(64, '0');
const block = (index: number, miner: string, branch = 'm', prevBranch = branch): BlockEvent => ({
  index,
  hash: hash(branch, index),
  prev_hash: hash(prevBranch, index - 1),
  timestamp: 1_700_000_000 + index,
  miner,
  tx_count: 0,
  nonce: 0,
});

test('ChainWatch: height, recent blocks newest first, producers by count, no fork on a straight chain', () => {
  const watch = new ChainWatch(5);
  assert.equal(watch.height, -1);
  for (let h = 1; h <= 7; h++) watch.add(block(h, h % 3 === 0 ? B : A), h);
  assert.equal(watch.height, 7);
  assert.deepEqual(
    watch.recent(3).map((b) => b.index),
    [7, 6, 5],
  );
  // Only the last 5 (3…7) count: A made 4, 5, 7; B made 3, 6.
  assert.deepEqual(watch.producers(), [
    { miner: A, blocks: 3 },
    { miner: B, blocks: 2 },
  ]);
  assert.deepEqual(watch.forks(), []);
  assert.throws(() => new ChainWatch(0), RangeError);
});

test('ChainWatch: a height sent again with another hash is a reorganisation of the blocks from there', () => {
  const watch = new ChainWatch();
  for (let h = 1; h <= 6; h++) watch.add(block(h, A), h);
  // The stream goes back to 5: blocks 5 and 6 are replaced by a branch of B's.
  watch.add(block(5, B, 'x', 'm'), 100);
  watch.add(block(6, B, 'x'), 101);
  watch.add(block(7, B, 'x'), 102);
  assert.deepEqual(watch.forks(), [{ height: 5, depth: 2, replaced: hash('m', 5), by: hash('x', 5), at: 100 }]);
  assert.equal(watch.height, 7);
  assert.deepEqual(
    watch.recent(4).map((b) => [b.index, b.miner]),
    [
      [7, B],
      [6, B],
      [5, B],
      [4, A],
    ],
  );
  // The same block sent again (a resumed stream) is no fork.
  watch.add(block(7, B, 'x'), 103);
  assert.equal(watch.forks().length, 1);
});

test('ChainWatch: a next block that does not follow the held one is a reorganisation below it', () => {
  const watch = new ChainWatch();
  for (let h = 1; h <= 4; h++) watch.add(block(h, A), h);
  // After a reconnect, block 5 names another block 4 as its parent.
  watch.add(block(5, B, 'y', 'y'), 50);
  assert.deepEqual(watch.forks(), [{ height: 4, depth: 1, replaced: hash('m', 4), by: hash('y', 4), at: 50 }]);
  assert.deepEqual(
    watch.recent(10).map((b) => b.index),
    [5, 3, 2, 1],
  );
});

test('projectCoordinates: distances on the map are the coordinates’ distances in ms when they lie in a plane', () => {
  assert.deepEqual(projectCoordinates([]), []);
  const one = projectCoordinates([{ id: A, vec: [0.01, 0, 0] }]);
  assert.deepEqual(one, [{ id: A, x: 0, y: 0 }]);
  // Three nodes 30 ms, 40 ms and 50 ms apart (a right triangle), tilted into 8 dimensions.
  const tilt = (u: number, v: number): number[] => [u * 0.6, v, u * 0.8, 0, 0, 0, 0, 0];
  const points = projectCoordinates([
    { id: 'p', vec: tilt(0, 0) },
    { id: 'q', vec: tilt(0.03, 0) },
    { id: 'r', vec: tilt(0, 0.04) },
  ]);
  const distance = (i: number, j: number): number => Math.hypot(points[i]!.x - points[j]!.x, points[i]!.y - points[j]!.y);
  assert.closeTo(distance(0, 1), 30, 1e-6);
  assert.closeTo(distance(0, 2), 40, 1e-6);
  assert.closeTo(distance(1, 2), 50, 1e-6);
  // Centred on their mean.
  assert.closeTo(
    points.reduce((s, p) => s + p.x, 0),
    0,
    1e-9,
  );
  assert.closeTo(
    points.reduce((s, p) => s + p.y, 0),
    0,
    1e-9,
  );
  // All at one place: all at the centre.
  assert.deepEqual(
    projectCoordinates([
      { id: 'p', vec: [0.1, 0.1] },
      { id: 'q', vec: [0.1, 0.1] },
    ]).map((p) => [p.x, p.y]),
    [
      [0, 0],
      [0, 0],
    ],
  );
});

test('shortId: the first 8 characters', () => {
  assert.equal(shortId(A), 'aaaaaaaa…');
});
