import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../test/harness.ts';
import {
  andBits,
  andBits3,
  type Bitset,
  bitsInto,
  bitsWindow,
  differenceWindow,
  intersect,
  intersectAll,
  listOf,
  type Postings,
  PostingsBuilder,
  PostingsCache,
  ScratchPool,
  toBitset,
  unionAll,
} from './postings.ts';

const RUNS = { numRuns: 200 };
const UNIVERSE = 2000;
// Sorted unique positions, short and long (long ones exercise galloping and the bit set).
const list = fc.uniqueArray(fc.integer({ min: 0, max: UNIVERSE - 1 }), { maxLength: 400 }).map((values) => Int32Array.from(values.sort((a, b) => a - b)));

const sortedSet = (values: Iterable<number>): number[] => [...new Set(values)].sort((a, b) => a - b);

test('intersect and intersectAll agree with sets', () => {
  fc.assert(
    fc.property(list, list, list, (a, b, c) => {
      const setB = new Set(b);
      assert.deepEqual(
        [...intersect(a, b)],
        [...a].filter((x) => setB.has(x)),
      );
      const setC = new Set(c);
      const expected = [...a].filter((x) => setB.has(x) && setC.has(x));
      assert.deepEqual([...intersectAll([a, b, c])], expected);
      // The same with bit sets for some of the lists.
      const bits = new Map<Postings, Bitset>([b, c].map((l) => [l, toBitset(l, UNIVERSE)]));
      assert.deepEqual([...intersectAll([a, b, c], (l) => bits.get(l))], expected);
      assert.deepEqual([...intersectAll([a, a], (l) => bits.get(l))], [...a], 'a list with itself');
    }),
    RUNS,
  );
  // Galloping: one short list against a long one.
  const long = Int32Array.from({ length: 100000 }, (_, i) => i * 3);
  assert.deepEqual([...intersect(Int32Array.from([0, 4, 9, 299997, 299998]), long)], [0, 9, 299997]);
});

test('bit sets: AND with its count, back to a list, and windows, as with lists', () => {
  const words = (UNIVERSE + 31) >>> 5;
  fc.assert(
    fc.property(list, list, fc.nat({ max: 500 }), fc.integer({ min: 1, max: 50 }), (a, b, skip, count) => {
      const both = intersect(a, b);
      const out = new Uint32Array(words).fill(0xdeadbeef);
      assert.equal(andBits(toBitset(a, UNIVERSE), toBitset(b, UNIVERSE), out), both.length);
      assert.deepEqual(out, toBitset(both, UNIVERSE));
      assert.deepEqual([...listOf(out, both.length)], [...both]);
      // Three at once: with a third set, and in place over one of them.
      const third = toBitset(
        b.filter((_, i) => i % 2 === 0),
        UNIVERSE,
      );
      const all = intersect(
        both,
        b.filter((_, i) => i % 2 === 0),
      );
      const inPlace = toBitset(a, UNIVERSE);
      assert.equal(andBits3(inPlace, toBitset(b, UNIVERSE), third, inPlace), all.length);
      assert.deepEqual(inPlace, toBitset(all, UNIVERSE));
      assert.deepEqual(bitsInto(a, new Uint32Array(words).fill(7)), toBitset(a, UNIVERSE), 'every word written');
      // a minus (a ∩ b), as the tiers of a ranking nest: the same window as the lists give.
      assert.deepEqual(bitsWindow(toBitset(a, UNIVERSE), out, skip, count), differenceWindow(a, both, skip, count));
      assert.deepEqual(bitsWindow(toBitset(a, UNIVERSE), undefined, skip, count), [...a.subarray(skip, skip + count)]);
    }),
    RUNS,
  );
  // Position 31 of a word is its sign bit.
  const edge = Int32Array.from([31, 32, 63, UNIVERSE - 1]);
  assert.deepEqual([...listOf(toBitset(edge, UNIVERSE), edge.length)], [...edge]);
  assert.deepEqual(bitsWindow(toBitset(edge, UNIVERSE), undefined, 1, 10), [32, 63, UNIVERSE - 1]);
});

test('unionAll agrees with sets, by sorting and by bit set', () => {
  fc.assert(
    fc.property(fc.array(list, { maxLength: 6 }), (lists) => {
      const expected = sortedSet(lists.flatMap((l) => [...l]));
      // A small universe takes the bit set for all but tiny inputs; a vast one always sorts.
      assert.deepEqual([...unionAll(lists, UNIVERSE)], expected);
      assert.deepEqual([...unionAll(lists, 2 ** 30)], expected);
      // Through reused buffers: the same answers, query after query.
      const pool = new ScratchPool();
      for (let round = 0; round < 2; round++) {
        pool.reset();
        assert.deepEqual([...unionAll(lists, UNIVERSE, pool.alloc, pool.bits)], expected);
        assert.deepEqual([...unionAll(lists, 2 ** 30, pool.alloc, pool.bits)], expected);
      }
    }),
    RUNS,
  );
  // Past the threshold the bit set takes over: same answer.
  const big = Array.from({ length: 20 }, (_, k) => Int32Array.from({ length: 3000 }, (_, i) => i * 20 + k));
  const union = unionAll(big, 60000);
  assert.equal(union.length, 60000);
  assert.deepEqual([...union.subarray(0, 5)], [0, 1, 2, 3, 4]);
});

test('differenceWindow pages through a minus b', () => {
  fc.assert(
    fc.property(list, fc.nat(50), fc.integer({ min: 1, max: 50 }), (a, skip, count) => {
      const b = a.filter((_, i) => i % 3 === 0);
      const setB = new Set(b);
      const rest = [...a].filter((x) => !setB.has(x));
      assert.deepEqual(differenceWindow(a, b, skip, count), rest.slice(skip, skip + count));
    }),
    RUNS,
  );
});

test('PostingsBuilder keeps each position once per key, in order', () => {
  const builder = new PostingsBuilder();
  for (const [key, position] of [
    ['a', 0],
    ['a', 0],
    ['b', 1],
    ['a', 2],
    ['a', 2],
    ['b', 5],
  ] as const)
    builder.add(key, position);
  const built = builder.build();
  assert.deepEqual([...built.get('a')!], [0, 2]);
  assert.deepEqual([...built.get('b')!], [1, 5]);
});

test('PostingsCache reuses the buffer of a dropped list once settled, never during the query that dropped it', () => {
  const cache = new PostingsCache(200, 2);
  const a = cache.get('a', () => Int32Array.from([1, 2, 3]));
  const b = cache.get('b', () => Int32Array.from([4, 5]));
  cache.get('c', () => Int32Array.from([6, 7, 8])); // a is dropped
  assert.notOk(cache.holds(a));
  const d = cache.get('d', () => Int32Array.from([9])); // b is dropped; a's buffer not yet reused
  assert.ok(d.buffer !== a.buffer && d.buffer !== b.buffer, 'nothing dropped in this query is reused in it');
  assert.deepEqual([...a], [1, 2, 3], 'a list dropped in this query still reads as it was');
  cache.settle();
  const e = cache.get('e', () => Int32Array.from([10, 11]));
  assert.ok(e.buffer === a.buffer || e.buffer === b.buffer, "a dropped list's buffer, reused");
  assert.deepEqual([...e], [10, 11]);
  assert.deepEqual([...cache.get('d', () => Int32Array.from([0]))], [9], 'd is held as made');
});

test('PostingsCache keeps copies, drops the least recently used past its budget or count', () => {
  const cache = new PostingsCache(10, 3);
  let made = 0;
  const make = (values: number[]) => () => {
    made++;
    return Int32Array.from(values);
  };
  const scratch = new Int32Array([1, 2, 3]);
  const a = cache.get('a', () => scratch);
  scratch[0] = 99;
  assert.deepEqual([...a], [1, 2, 3], 'a copy, safe from the scratch buffer being reused');
  cache.get('b', make([4, 5, 6]));
  cache.get('a', make([0]));
  assert.equal(made, 1, 'a was kept');
  cache.get('c', make([7, 8, 9, 10])); // 3 + 3 + 4 = 10 positions: within budget
  cache.get('b', make([0]));
  assert.equal(made, 2, 'b still kept');
  assert.ok(cache.holds(a));
  cache.get('d', make([11])); // over budget: a, least recently used, goes
  assert.notOk(cache.holds(a), 'a dropped list is no longer held');
  assert.notOk(cache.holds(scratch), 'what make returned is not the list kept');
  assert.deepEqual([...cache.get('a', make([1, 2, 3]))], [1, 2, 3]);
  assert.equal(made, 4, 'a was made again');
  assert.equal(cache.get('big', make(Array.from({ length: 11 }, (_, i) => i))).length, 11, 'too big to keep, still answered');
  cache.get('big', make([]));
  assert.equal(made, 6, 'never kept');
});
