import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { MinHeap } from './min-heap.ts';

interface Item {
  readonly at: number;
  readonly seq: number;
}
const before = (a: Item, b: Item): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

test('MinHeap: pops in order, ties by the order the caller breaks them with, through pushes and pops mixed', () => {
  // A fixed sequence of draws (a linear congruential generator), so every run checks the same.
  let state = 7;
  const int = (n: number): number => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return (state >>> 8) % n;
  };
  const heap = new MinHeap<Item>(before);
  const held: Item[] = [];
  const out: Item[] = [];
  let seq = 0;
  for (let round = 0; round < 2_000; round++) {
    if (int(10) < 6) {
      const item = { at: int(50), seq: seq++ };
      heap.push(item);
      held.push(item);
    } else {
      const least = [...held].sort((a, b) => (before(a, b) ? -1 : 1))[0];
      assert.strictEqual(heap.peek(), least);
      const popped = heap.pop();
      assert.strictEqual(popped, least);
      if (popped !== undefined) {
        held.splice(held.indexOf(popped), 1);
        out.push(popped);
      }
    }
    assert.equal(heap.size, held.length);
  }
  assert.isAbove(out.length, 500);
});

test('MinHeap: retain keeps the items asked for, still in order', () => {
  const heap = new MinHeap<number>((a, b) => a < b);
  for (const n of [9, 3, 7, 1, 8, 2, 6, 4, 5, 0]) heap.push(n);
  heap.retain((n) => n % 2 === 1);
  const out: number[] = [];
  for (let n = heap.pop(); n !== undefined; n = heap.pop()) out.push(n);
  assert.deepEqual(out, [1, 3, 5, 7, 9]);
  assert.isUndefined(heap.peek());
});
