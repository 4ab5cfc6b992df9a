import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../../test/harness.ts';
import { WrongTypeError } from '../errors.ts';
import { ByteArena, bytesEqual, bytesKey, compareBytes, concatBytes, describe, ensureBytes, prefixedBytesKey } from './bytes.ts';

const RUNS = { numRuns: 200 };

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  assert.fail('expected a throw');
}

test('ensureBytes returns the same Uint8Array', () => {
  const b = new Uint8Array([1, 2, 3]);
  assert.strictEqual(ensureBytes(b, 'b'), b);
  const sub = new Uint8Array(8).subarray(2, 5);
  assert.strictEqual(ensureBytes(sub, 'sub'), sub);
});

test('ensureBytes rejects other types with WrongTypeError not-bytes naming the argument', () => {
  for (const bad of [[1, 2], 'ab', null, undefined, 3, new ArrayBuffer(2), new Uint16Array(2), { length: 0 }]) {
    const error = caught(() => ensureBytes(bad, 'public key'));
    assert.instanceOf(error, WrongTypeError);
    assert.equal((error as WrongTypeError).name, 'WrongTypeError');
    assert.equal((error as WrongTypeError).code, 'not-bytes');
    assert.include((error as Error).message, 'public key');
  }
});

test('concatBytes joins parts into a new array', () => {
  const a = new Uint8Array([1, 2]);
  const b = new Uint8Array([]);
  const c = new Uint8Array([3]);
  const joined = concatBytes(a, b, c);
  assert.deepEqual([...joined], [1, 2, 3]);
  joined[0] = 9;
  assert.equal(a[0], 1, 'the result does not share memory with its parts');
  assert.equal(concatBytes().length, 0);
  const single = concatBytes(a);
  assert.notStrictEqual(single, a);
  assert.deepEqual([...single], [1, 2]);
});

test('bytesEqual compares contents and length', () => {
  assert.isTrue(bytesEqual(new Uint8Array([]), new Uint8Array([])));
  assert.isTrue(bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2])));
  assert.isFalse(bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3])));
  assert.isFalse(bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 0])));
});

test('compareBytes orders lexicographically, a prefix first', () => {
  assert.isBelow(compareBytes(new Uint8Array([1]), new Uint8Array([2])), 0);
  assert.isAbove(compareBytes(new Uint8Array([2]), new Uint8Array([1, 255])), 0);
  assert.isBelow(compareBytes(new Uint8Array([1]), new Uint8Array([1, 0])), 0);
  assert.isBelow(compareBytes(new Uint8Array([]), new Uint8Array([0])), 0);
  assert.equal(compareBytes(new Uint8Array([0, 255]), new Uint8Array([0, 255])), 0);
  assert.isAbove(compareBytes(new Uint8Array([255]), new Uint8Array([0])), 0, 'bytes compare unsigned');
});

test('describe names a value type for messages', () => {
  assert.equal(describe(null), 'null');
  assert.equal(describe([1]), 'an array');
  assert.equal(describe('x'), 'string');
  assert.equal(describe(1n), 'bigint');
  assert.equal(describe(undefined), 'undefined');
  assert.equal(describe(new Uint16Array(1)), 'Uint16Array');
  assert.equal(describe(Object.create(null)), 'an object');
});

test('property: compareBytes is a consistent total order matching bytesEqual', () => {
  const bytes = fc.uint8Array({ maxLength: 6, max: 3 });
  fc.assert(
    fc.property(bytes, bytes, (a, b) => {
      const ab = compareBytes(a, b);
      const ba = compareBytes(b, a);
      assert.equal(Math.sign(ab), -Math.sign(ba));
      assert.equal(ab === 0, bytesEqual(a, b));
      // Lexicographic order of the hex spelling is the same order.
      const ha = [...a].map((x) => x.toString(16).padStart(2, '0')).join('');
      const hb = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
      assert.equal(Math.sign(ab), ha < hb ? -1 : ha > hb ? 1 : 0);
    }),
    RUNS,
  );
});

test('property: concatBytes keeps every part in order', () => {
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 8 }), { maxLength: 5 }), (parts) => {
      const joined = concatBytes(...parts);
      assert.deepEqual(
        [...joined],
        parts.flatMap((p) => [...p]),
      );
    }),
    RUNS,
  );
});

test('property: bytesKey is one code unit per byte, and prefixedBytesKey that of the joined bytes', () => {
  // Lengths around 32, the length with a path of its own.
  const bytes = fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ minLength: 32, maxLength: 32 }));
  fc.assert(
    fc.property(bytes, fc.nat(255), (b, prefix) => {
      const key = bytesKey(b);
      assert.equal(key.length, b.length);
      for (let i = 0; i < b.length; i++) assert.equal(key.charCodeAt(i), b[i]);
      assert.equal(prefixedBytesKey(prefix, b), bytesKey(concatBytes(Uint8Array.of(prefix), b)));
    }),
    RUNS,
  );
});

test('ByteArena hands out zeroed views that never overlap, across chunks, and large ones on their own', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: ByteArena.CHUNK / 2 }), { maxLength: 60 }), (sizes) => {
      const arena = new ByteArena();
      const taken = sizes.map((n, i) => {
        const view = arena.take(n);
        assert.strictEqual(view.length, n);
        assert.isTrue(
          view.every((b) => b === 0),
          'zeroed',
        );
        view.fill((i % 255) + 1);
        if (n > ByteArena.CHUNK / 4) assert.strictEqual(view.buffer.byteLength, n, 'a large one is an array of its own');
        else assert.isAtMost(view.byteOffset + n, ByteArena.CHUNK, 'within its chunk');
        return view;
      });
      // Each still holds what was written into it: no later view overwrote it.
      taken.forEach((view, i) => assert.isTrue(view.every((b) => b === (i % 255) + 1)));
    }),
    RUNS,
  );
});

test('ByteArena starts a new chunk when the next view does not fit', () => {
  const arena = new ByteArena();
  const first = arena.take(ByteArena.CHUNK / 4);
  arena.take(ByteArena.CHUNK / 4);
  arena.take(ByteArena.CHUNK / 4);
  const fourth = arena.take(ByteArena.CHUNK / 4 - 1);
  const fifth = arena.take(2);
  assert.strictEqual(fourth.buffer, first.buffer);
  assert.notStrictEqual(fifth.buffer, first.buffer);
  assert.strictEqual(fifth.byteOffset, 0);
});
