import { assert } from 'chai';
import fc from 'fast-check';
import { createSHA256 } from 'hash-wasm';
import { rejects } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { MeshError, WrongTypeError } from '../errors.ts';
import {
  checkedSha256,
  coreSha256,
  createSha256,
  type Sha256Batch,
  sha256,
  sha256Async,
  sha256Batch,
  sha256Each,
  sha512,
  WEBCRYPTO_MIN_BYTES,
} from './sha256.ts';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

// FIPS 180-2 / NIST CAVS examples.
const NIST: [string, Uint8Array, string][] = [
  ['empty', new Uint8Array(0), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
  ['abc', text('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
  ['448 bits', text('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'), '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1'],
  [
    '896 bits',
    text('abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu'),
    'cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1',
  ],
  ['one million a', text('a'.repeat(1_000_000)), 'cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0'],
];

test('sha256: NIST vectors, sync and async', async () => {
  for (const [name, input, digest] of NIST) {
    assert.equal(toHex(sha256(input)), digest, name);
    assert.equal(toHex(await sha256Async(input)), digest, name);
  }
});

test('sha256: incremental hashing in pieces equals one-shot', async () => {
  const hasher = await createSha256();
  const piece = text('a'.repeat(1000));
  for (let i = 0; i < 1000; i++) hasher.update(piece);
  assert.equal(toHex(hasher.digest()), NIST[4]![2]);
});

test('sha256: agrees with WebCrypto on arbitrary inputs around the bulk threshold', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.uint8Array({ maxLength: 600 }),
        fc.integer({ min: WEBCRYPTO_MIN_BYTES - 2, max: WEBCRYPTO_MIN_BYTES + 2 }).map((n) => new Uint8Array(n).fill(n & 0xff)),
      ),
      async (data) => {
        const native = toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', data as Uint8Array<ArrayBuffer>)));
        assert.equal(toHex(sha256(data)), native);
        assert.equal(toHex(await sha256Async(data)), native);
      },
    ),
    { numRuns: 60 },
  );
});

test('sha256: a subarray is hashed as its own bytes, not its whole buffer', () => {
  const whole = text('xxabcxx');
  assert.equal(toHex(sha256(whole.subarray(2, 5))), NIST[1]![2]);
});

// Lays `messages` out one after another, as sha256Batch takes them.
function laidOut(messages: readonly Uint8Array[]): { data: Uint8Array; ends: number[] } {
  const ends: number[] = [];
  let at = 0;
  for (const m of messages) ends.push((at += m.length));
  const data = new Uint8Array(at);
  messages.forEach((m, i) => data.set(m, i === 0 ? 0 : ends[i - 1]!));
  return { data, ends };
}

const messagesArb = fc.array(
  fc.oneof(
    fc.uint8Array({ maxLength: 200 }),
    fc.constantFrom(65, 66, 64, 55, 56).map((n) => new Uint8Array(n).fill(n)),
  ),
  {
    maxLength: 20,
  },
);

test('sha256Batch: equals hashing one by one, for no, one and many messages of any lengths', () => {
  fc.assert(
    fc.property(messagesArb, (messages) => {
      const { data, ends } = laidOut(messages);
      // Digests go to the front of `out`; bytes past them are left alone.
      const out = new Uint8Array(32 * messages.length + 5).fill(7);
      sha256Batch(data, ends, out);
      messages.forEach((m, i) => assert.equal(toHex(out.subarray(32 * i, 32 * i + 32)), toHex(sha256(m)), `message ${i}`));
      assert.deepEqual([...out.subarray(32 * messages.length)], [7, 7, 7, 7, 7]);
    }),
    { numRuns: 100 },
  );
  // NIST vectors side by side, an empty message among them.
  const { data, ends } = laidOut(NIST.map(([, input]) => input));
  const out = new Uint8Array(32 * NIST.length);
  sha256Batch(data, ends, out);
  NIST.forEach(([name, , digest], i) => assert.equal(toHex(out.subarray(32 * i, 32 * i + 32)), digest, name));
});

test('sha256Each: the digest of each message, in order, for no, one and many messages', () => {
  fc.assert(
    fc.property(messagesArb, (messages) => {
      const out = sha256Each(messages);
      assert.equal(out.length, 32 * messages.length);
      messages.forEach((m, i) => assert.equal(toHex(out.subarray(32 * i, 32 * i + 32)), toHex(sha256(m)), `message ${i}`));
    }),
    { numRuns: 100 },
  );
});

test('sha256Batch: refuses ends out of order or past the data, and too small an output', () => {
  const data = new Uint8Array(10);
  assert.throws(() => sha256Batch(data, [5, 3], new Uint8Array(64)), RangeError);
  assert.throws(() => sha256Batch(data, [11], new Uint8Array(32)), RangeError);
  assert.throws(() => sha256Batch(data, [-1], new Uint8Array(32)), RangeError);
  assert.throws(() => sha256Batch(data, [2.5], new Uint8Array(32)), RangeError);
  assert.throws(() => sha256Batch(data, [5, 10], new Uint8Array(63)), RangeError);
  rejects(() => sha256Batch('abc' as unknown as Uint8Array, [1], new Uint8Array(32)), WrongTypeError, 'not-bytes');
});

test('sha512: FIPS 180-2 "abc"', () => {
  assert.equal(
    toHex(sha512(text('abc'))),
    'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
  );
});

test('sha256: a wrong native hasher is refused; a right one serves whoever is given it, and no one else', async () => {
  rejects(() => checkedSha256('wrong', (data) => new Uint8Array(32).fill(data.length & 0xff)), MeshError, 'native-sha256-wrong');
  // A correct "native" hasher (here a separate WebAssembly instance behind a counter).
  const reference = await createSHA256();
  let calls = 0;
  const counting = (data: Uint8Array): Uint8Array => {
    calls++;
    return reference.init().update(data).digest('binary');
  };
  const native = checkedSha256('counting', counting);
  assert.equal(native.name, 'counting');
  calls = 0;
  for (const size of [0, 32, 4096, WEBCRYPTO_MIN_BYTES * 4]) {
    const data = new Uint8Array(size).fill(1);
    const expected = toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', data)));
    assert.equal(toHex(native.hash(data)), expected);
    assert.equal(toHex(await sha256Async(data, native)), expected);
    assert.equal(toHex(sha256(data)), expected);
    assert.equal(toHex(await sha256Async(data)), expected);
  }
  assert.equal(calls, 8, "the native hasher serves every size, sync and async, where it is passed; the core's own elsewhere");
  // Without a batch of its own, a batch of one goes to it, and a longer one to the core's lanes.
  calls = 0;
  assert.equal(toHex(sha256Each([text('abc')], native)), NIST[1]![2]);
  assert.equal(toHex(sha256Each([text('abc'), new Uint8Array(0)], native)), NIST[1]![2] + NIST[0]![2]);
  assert.equal(calls, 1);
  assert.strictEqual(coreSha256.hash, sha256);
});

test('sha256: a native batch is checked before use, and then serves the batches of whoever is given it', async () => {
  const reference = await createSHA256();
  const one = (data: Uint8Array): Uint8Array => reference.init().update(data).digest('binary');
  // Right for one message, but ignoring where each message starts: refused.
  const sloppy: Sha256Batch = (data, ends, out) => {
    for (let i = 0; i < ends.length; i++) out.set(one(data.subarray(0, ends[i])), 32 * i);
  };
  rejects(() => checkedSha256('sloppy', one, sloppy), MeshError, 'native-sha256-wrong');
  let batches = 0;
  const right: Sha256Batch = (data, ends, out) => {
    batches++;
    let start = 0;
    for (let i = 0; i < ends.length; i++) {
      out.set(one(data.subarray(start, ends[i])), 32 * i);
      start = ends[i]!;
    }
  };
  const native = checkedSha256('right', one, right);
  batches = 0;
  const { data, ends } = laidOut([text('abc'), new Uint8Array(0), new Uint8Array(65)]);
  const out = new Uint8Array(96);
  native.batch(data, ends, out);
  sha256Batch(data, ends, new Uint8Array(96));
  assert.equal(batches, 1, "the core's own sha256Batch is not the native one");
  assert.equal(toHex(out.subarray(0, 32)), NIST[1]![2]);
  assert.equal(toHex(out.subarray(32, 64)), NIST[0]![2]);
  assert.equal(toHex(out.subarray(64)), toHex(sha256(new Uint8Array(65))));
  assert.throws(() => native.batch(data, [4, 3], new Uint8Array(64)), RangeError);
});

test('sha256: wrong input types get a named error', () => {
  rejects(() => sha256('abc' as unknown as Uint8Array), WrongTypeError, 'not-bytes');
});
