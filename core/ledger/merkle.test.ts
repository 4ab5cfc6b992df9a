import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../../test/harness.ts';
import { sha256 } from '../crypto/sha256.ts';
import { compareBytes, concatBytes } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { EMPTY_ROOT, MerkleTrie } from './merkle.ts';

const RUNS = { numRuns: 150 };

// ---------------------------------------------------------------------------------------------
// A reference built from scratch from a final set, by the hash rules of merkle.ts's header and
// nothing of its code: split the sorted keys at the first bit where they are not all alike.

type Entry = readonly [path: Uint8Array, valueHash: Uint8Array];

const bit = (path: Uint8Array, i: number): number => (path[i >> 3]! >> (7 - (i & 7))) & 1;

function reference(entries: readonly Entry[]): string {
  if (entries.length === 0) return toHex(new Uint8Array(32));
  const sorted = [...entries].sort((x, y) => compareBytes(x[0], y[0]));
  return toHex(node(sorted));
}

function node(entries: readonly Entry[]): Uint8Array {
  if (entries.length === 1) {
    const [path, valueHash] = entries[0]!;
    return sha256(concatBytes(Uint8Array.of(0), path, valueHash));
  }
  let split = 0;
  while (entries.every(([p]) => bit(p, split) === bit(entries[0]![0], split))) split++;
  const left = entries.filter(([p]) => bit(p, split) === 0);
  const right = entries.filter(([p]) => bit(p, split) === 1);
  return sha256(concatBytes(Uint8Array.of(1, split), node(left), node(right)));
}

const rootOf = (trie: MerkleTrie): string => toHex(trie.root());

function trieOf(entries: readonly Entry[]): MerkleTrie {
  const trie = new MerkleTrie();
  for (const [p, v] of entries) trie.set(p, v);
  return trie;
}

// ---------------------------------------------------------------------------------------------
// Generators: random paths, and paths that differ in a few bits so branches sit at every depth.

const withBits = (base: number, bits: readonly number[]): Uint8Array => {
  const out = new Uint8Array(32).fill(base);
  for (const b of bits) out[b >> 3]! ^= 0x80 >> (b & 7);
  return out;
};

const pathArb = fc.oneof(
  fc.uint8Array({ minLength: 32, maxLength: 32 }),
  fc.tuple(fc.constantFrom(0x00, 0xa5, 0xff), fc.array(fc.nat(255), { maxLength: 3 })).map(([b, bits]) => withBits(b, bits)),
);
const valueArb = fc.nat(1_000).map((n) => sha256(Uint8Array.of(n >> 8, n & 0xff)));

/** Distinct paths with values. */
const setArb = fc.uniqueArray(fc.tuple(pathArb, valueArb), { maxLength: 40, selector: ([p]) => toHex(p) }).map((list) => list as Entry[]);

// ---------------------------------------------------------------------------------------------

test('merkle: the empty trie has 32 zero bytes as root', () => {
  const trie = new MerkleTrie();
  assert.equal(rootOf(trie), toHex(new Uint8Array(32)));
  assert.equal(toHex(EMPTY_ROOT), toHex(new Uint8Array(32)));
  assert.equal(trie.size, 0);
});

test('merkle: a single leaf is H(0x00 ‖ path ‖ value hash)', () => {
  const path = sha256(Uint8Array.of(1));
  const value = sha256(Uint8Array.of(2));
  const trie = trieOf([[path, value]]);
  assert.equal(rootOf(trie), toHex(sha256(concatBytes(Uint8Array.of(0), path, value))));
  assert.equal(trie.size, 1);
});

test('merkle: two leaves branch at their first differing bit, zero-bit side on the left', () => {
  const a = withBits(0, [200]);
  const b = withBits(0, [200, 201]);
  const va = sha256(Uint8Array.of(1));
  const vb = sha256(Uint8Array.of(2));
  const leaf = (p: Uint8Array, v: Uint8Array): Uint8Array => sha256(concatBytes(Uint8Array.of(0), p, v));
  const expected = sha256(concatBytes(Uint8Array.of(1, 201), leaf(a, va), leaf(b, vb)));
  assert.equal(
    rootOf(
      trieOf([
        [b, vb],
        [a, va],
      ]),
    ),
    toHex(expected),
  );
});

test('merkle: the root matches the reference and ignores insertion order', () => {
  fc.assert(
    fc.property(
      setArb.chain((set) => fc.tuple(fc.constant(set), fc.shuffledSubarray(set, { minLength: set.length }))),
      ([set, shuffled]) => {
        const expected = reference(set);
        assert.equal(rootOf(trieOf(set)), expected);
        assert.equal(rootOf(trieOf(shuffled)), expected);
        assert.equal(trieOf(set).size, set.length);
      },
    ),
    RUNS,
  );
});

type Op = { op: 'set'; key: number; value: Uint8Array } | { op: 'delete'; key: number } | { op: 'root' };

const opArb = (keys: number): fc.Arbitrary<Op> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ op: fc.constant('set' as const), key: fc.nat(keys - 1), value: valueArb }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), key: fc.nat(keys - 1) }) },
    { weight: 1, arbitrary: fc.constant({ op: 'root' as const }) },
  );

test('merkle: any history of sets, updates and deletes gives the root of its final set', () => {
  const scenario = fc
    .uniqueArray(pathArb, { minLength: 1, maxLength: 12, selector: toHex })
    .chain((paths) => fc.tuple(fc.constant(paths), fc.array(opArb(paths.length), { maxLength: 60 })));
  fc.assert(
    fc.property(scenario, ([paths, ops]) => {
      const trie = new MerkleTrie();
      const model = new Map<number, Uint8Array>();
      const final = (): Entry[] => [...model].map(([k, v]) => [paths[k]!, v] as const);
      for (const step of ops) {
        if (step.op === 'set') {
          trie.set(paths[step.key]!, step.value);
          model.set(step.key, step.value);
        } else if (step.op === 'delete') {
          assert.equal(trie.delete(paths[step.key]!), model.delete(step.key), 'delete says whether the key was there');
        } else {
          // Reading the root mid-way caches hashes: later changes must invalidate exactly the right ones.
          assert.equal(rootOf(trie), reference(final()));
        }
        assert.equal(trie.size, model.size);
      }
      assert.equal(rootOf(trie), reference(final()));
      assert.equal(rootOf(trie), rootOf(trieOf(final())), 'same root as a trie built fresh from the final set');
    }),
    RUNS,
  );
});

test('merkle: updating a value changes the root, and restoring it restores the root', () => {
  fc.assert(
    fc.property(
      setArb.filter((s) => s.length > 0),
      fc.nat(),
      valueArb,
      (set, pick, value) => {
        const trie = trieOf(set);
        const before = rootOf(trie);
        const [path, old] = set[pick % set.length]!;
        trie.set(path, value);
        if (toHex(value) === toHex(old)) assert.equal(rootOf(trie), before);
        else assert.notEqual(rootOf(trie), before);
        assert.equal(trie.size, set.length, 'an update adds no leaf');
        trie.set(path, old);
        assert.equal(rootOf(trie), before);
      },
    ),
    RUNS,
  );
});

test('merkle: deleting an absent key is a no-op', () => {
  const empty = new MerkleTrie();
  assert.isFalse(empty.delete(new Uint8Array(32)));
  assert.equal(rootOf(empty), toHex(EMPTY_ROOT));
  fc.assert(
    fc.property(setArb, pathArb, (set, absent) => {
      fc.pre(!set.some(([p]) => toHex(p) === toHex(absent)));
      const trie = trieOf(set);
      const before = rootOf(trie);
      assert.isFalse(trie.delete(absent));
      assert.equal(rootOf(trie), before);
      assert.equal(trie.size, set.length);
    }),
    RUNS,
  );
});

test('merkle: deleting every key returns to the empty root', () => {
  fc.assert(
    fc.property(setArb, (set) => {
      const trie = trieOf(set);
      trie.root();
      for (const [p] of set) assert.isTrue(trie.delete(p));
      assert.equal(rootOf(trie), toHex(EMPTY_ROOT));
      assert.equal(trie.size, 0);
    }),
    RUNS,
  );
});

test('merkle: paths and value hashes must be 32 bytes', () => {
  const trie = new MerkleTrie();
  assert.throws(() => trie.set(new Uint8Array(31), new Uint8Array(32)), RangeError);
  assert.throws(() => trie.set(new Uint8Array(32), new Uint8Array(33)), RangeError);
  assert.equal(trie.size, 0);
});

test('merkle: a trie built in one pass from leaves equals the reference, and then updates like any other', () => {
  fc.assert(
    fc.property(setArb, fc.array(fc.tuple(pathArb, valueArb), { maxLength: 10 }), (set, later) => {
      const bulk = MerkleTrie.fromLeaves(set.map(([path, valueHash]) => ({ path, valueHash })));
      assert.equal(rootOf(bulk), reference(set));
      assert.equal(bulk.size, set.length);
      const incremental = trieOf(set);
      for (const [p, v] of later) {
        bulk.set(p, v);
        incremental.set(p, v);
      }
      assert.equal(rootOf(bulk), rootOf(incremental));
      if (set.length > 0) {
        bulk.delete(set[0]![0]);
        incremental.delete(set[0]![0]);
        assert.equal(rootOf(bulk), rootOf(incremental));
      }
    }),
    RUNS,
  );
});

test('merkle: one-pass building refuses repeated paths', () => {
  const path = new Uint8Array(32).fill(3);
  const valueHash = new Uint8Array(32);
  assert.throws(
    () =>
      MerkleTrie.fromLeaves([
        { path, valueHash },
        { path, valueHash },
      ]),
    RangeError,
  );
});
