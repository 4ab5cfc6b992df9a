// Intersections in the index's bit-set memory (WebAssembly SIMD) against the word-at-a-time loop:
// the same words and counts for every length (whole vectors and the last words), any alignment,
// a result written over one of its inputs, and a set from outside the memory.
import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../test/harness.ts';
import { and2Simd, and3Simd, isSharedStore, newBitsetStore, SIMD_BITSETS, scratchBits, storeBuffer } from './bitset-simd.ts';
import { andBits, andBits3, type Bitset } from './postings.ts';

// Where the runtime shares memory between threads (Node, Deno; a browser page only when
// cross-origin isolated), the store is a shared WebAssembly memory and the module runs.
const SHARED = typeof SharedArrayBuffer === 'function';

function reference(sets: readonly Bitset[]): { words: number[]; count: number } {
  const words: number[] = [];
  let count = 0;
  for (let w = 0; w < sets[0]!.length; w++) {
    let x = sets[0]![w]!;
    for (const set of sets.slice(1)) x &= set[w]!;
    words.push(x >>> 0);
    for (let y = x >>> 0; y !== 0; y &= y - 1) count++;
  }
  return { words, count };
}

/** Three sets of `words` words in a new store, `skew` words from its start, and a result set made in it. */
function inStore(contents: readonly (readonly number[])[], words: number, skew: number): { sets: Bitset[]; out: Bitset } {
  const store = newBitsetStore((skew + contents.length * words) * 4 + 4);
  const buffer = storeBuffer(store);
  const sets = contents.map((c, i) => {
    const set = new Uint32Array(buffer, (skew + i * words) * 4, words);
    set.set(c);
    return set;
  });
  const out = scratchBits(store, words) ?? new Uint32Array(words);
  return { sets, out };
}

const word = fc.oneof(fc.integer({ min: 0, max: 0xffffffff }), fc.constantFrom(0, 0xffffffff, 0x80000000, 1));

test('bitset-simd: the store is a shared WebAssembly memory where the module runs, a shared or plain buffer elsewhere', () => {
  const store = newBitsetStore(1000);
  assert.equal(isSharedStore(store), SHARED);
  assert.isAtLeast(storeBuffer(store).byteLength, 1000);
  // Node and Deno have WebAssembly SIMD and shared memory: there the module must be the one used.
  const serverRuntime = typeof (globalThis as { process?: unknown }).process === 'object' || 'Deno' in globalThis;
  if (serverRuntime) assert.isTrue(SIMD_BITSETS);
  if (SIMD_BITSETS) {
    assert.instanceOf(store, WebAssembly.Memory);
    const a = new Uint32Array(storeBuffer(store), 0, 8);
    const out = scratchBits(store, 8)!;
    assert.isDefined(and2Simd(a, a, out), 'sets in the memory are intersected by the module');
    assert.isUndefined(and2Simd(a, new Uint32Array(8), out), 'a set from elsewhere is not');
  } else {
    assert.notInstanceOf(store, WebAssembly.Memory);
    assert.isNull(scratchBits(store, 8), 'no memory to take scratch sets from: the caller makes plain ones');
  }
});

test('bitset-simd: and of two and of three sets in the memory equals the word loop, for every length and alignment', () => {
  fc.assert(
    fc.property(
      fc
        .integer({ min: 0, max: 37 })
        .chain((words) =>
          fc.tuple(
            fc.constant(words),
            fc.array(fc.array(word, { minLength: words, maxLength: words }), { minLength: 3, maxLength: 3 }),
            fc.integer({ min: 0, max: 5 }),
          ),
        ),
      ([words, contents, skew]) => {
        const { sets, out } = inStore(contents, words, skew);
        const two = reference(sets.slice(0, 2));
        assert.equal(andBits(sets[0]!, sets[1]!, out), two.count);
        assert.deepEqual([...out], two.words);
        const three = reference(sets);
        assert.equal(andBits3(sets[0]!, sets[1]!, sets[2]!, out), three.count);
        assert.deepEqual([...out], three.words);
        // Written over an input, as the index narrows its result by further sets.
        const again = reference([out, sets[1]!]);
        assert.equal(andBits(out, sets[1]!, out), again.count);
        assert.deepEqual([...out], again.words);
      },
    ),
    { numRuns: 300 },
  );
});

test('bitset-simd: a million positions (31,250 words) give the same words and count as plain arrays', () => {
  const words = 31_250;
  let seed = 7;
  const next = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  const contents = [0, 1, 2].map((k) => Array.from({ length: words }, () => (k === 0 ? next() : next() & next())));
  const { sets, out } = inStore(contents, words, 1);
  const plain = contents.map((c) => Uint32Array.from(c));
  const plainOut = new Uint32Array(words);
  assert.equal(andBits3(sets[0]!, sets[1]!, sets[2]!, out), andBits3(plain[0]!, plain[1]!, plain[2]!, plainOut));
  assert.deepEqual(out, plainOut);
  assert.equal(andBits(sets[0]!, sets[2]!, out), andBits(plain[0]!, plain[2]!, plainOut));
  assert.deepEqual(out, plainOut);
  if (SIMD_BITSETS) assert.isDefined(and3Simd(sets[0]!, sets[1]!, sets[2]!, out));
});
