import { assert } from 'chai';
import fc from 'fast-check';
import { rejects } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { InvalidEncodingError, MeshError, WrongTypeError } from '../errors.ts';
import { bytesEqual, compareBytes } from './bytes.ts';
import {
  array,
  bool,
  bytes32,
  bytes64,
  type Codec,
  decode,
  encode,
  encodeFrame,
  f64,
  fixedBytes,
  type Infer,
  i128,
  option,
  Reader,
  sortedSet,
  struct,
  u8,
  u16,
  u32,
  u64,
  u128,
  uint53,
  utf8,
  varBytes,
  variant,
  Writer,
} from './codec.ts';
import { fromHex, toHex } from './hex.ts';

const RUNS = { numRuns: 200 };

function badDecode<T>(codec: Codec<T>, hex: string, code: string, message?: RegExp): MeshError {
  return rejects(() => decode(codec, fromHex(hex)), InvalidEncodingError, code, message);
}

function roundTrip<T>(codec: Codec<T>, value: T, hex: string): void {
  const bytes = encode(codec, value);
  assert.equal(toHex(bytes), hex, `${codec.name} encoding of ${String(value)}`);
  assert.deepEqual(decode(codec, bytes), value);
}

// ---------------------------------------------------------------------------------------------
// Primitives: exact bytes

test('u8, u16, u32 are fixed-width big-endian', () => {
  roundTrip(u8, 0, '00');
  roundTrip(u8, 255, 'ff');
  roundTrip(u16, 0x0102, '0102');
  roundTrip(u16, 65535, 'ffff');
  roundTrip(u32, 0x01020304, '01020304');
  roundTrip(u32, 0xffffffff, 'ffffffff');
});

test('integer codecs reject out-of-range numbers and wrong types on encode', () => {
  rejects(() => encode(u8, 256), InvalidEncodingError, 'out-of-range', /^u8: /);
  rejects(() => encode(u8, -1), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(u8, 1.5), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(u8, Number.NaN), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(u16, 65536), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(u32, 2 ** 32), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(u32, '1' as unknown as number), WrongTypeError, 'not-number');
  rejects(() => encode(u8, 1n as unknown as number), WrongTypeError, 'not-number');
});

test('uint53 is eight bytes big-endian and stops at Number.MAX_SAFE_INTEGER', () => {
  roundTrip(uint53, 0, '0000000000000000');
  roundTrip(uint53, 1, '0000000000000001');
  roundTrip(uint53, 2 ** 32, '0000000100000000');
  roundTrip(uint53, 1_700_000_000_000, '0000018bcfe56800');
  roundTrip(uint53, Number.MAX_SAFE_INTEGER, '001fffffffffffff');
  badDecode(uint53, '0020000000000000', 'out-of-range', /offset 0/);
  badDecode(uint53, 'ffffffffffffffff', 'out-of-range');
  rejects(() => encode(uint53, 2 ** 53), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(uint53, -1), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(uint53, 0.5), InvalidEncodingError, 'out-of-range');
  // The same bytes as u64 for every safe value, so either may read what the other wrote.
  assert.equal(toHex(encode(u64, 123456789012345n)), toHex(encode(uint53, 123456789012345)));
});

test('u64 and u128 are big-endian bigints with exact bounds', () => {
  roundTrip(u64, 0n, '0000000000000000');
  roundTrip(u64, 2n ** 64n - 1n, 'ffffffffffffffff');
  roundTrip(u128, 1n, '00000000000000000000000000000001');
  roundTrip(u128, 2n ** 64n, '00000000000000010000000000000000');
  roundTrip(u128, 2n ** 128n - 1n, 'ff'.repeat(16));
  rejects(() => encode(u64, 2n ** 64n), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(u64, -1n), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(u128, 2n ** 128n), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(u128, -1n), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(u128, 5 as unknown as bigint), WrongTypeError, 'not-bigint');
});

test('i128 is sixteen-byte two-complement big-endian', () => {
  roundTrip(i128, 0n, '00'.repeat(16));
  roundTrip(i128, 1n, `${'00'.repeat(15)}01`);
  roundTrip(i128, -1n, 'ff'.repeat(16));
  roundTrip(i128, -(2n ** 127n), `80${'00'.repeat(15)}`);
  roundTrip(i128, 2n ** 127n - 1n, `7f${'ff'.repeat(15)}`);
  rejects(() => encode(i128, 2n ** 127n), InvalidEncodingError, 'out-of-range');
  rejects(() => encode(i128, -(2n ** 127n) - 1n), InvalidEncodingError, 'out-of-range');
});

test('bool is one byte, only 0 or 1', () => {
  roundTrip(bool, false, '00');
  roundTrip(bool, true, '01');
  badDecode(bool, '02', 'bad-bool', /offset 0/);
  badDecode(bool, 'ff', 'bad-bool');
  rejects(() => encode(bool, 1 as unknown as boolean), WrongTypeError, 'not-boolean');
});

test('f64 is a finite binary64, big-endian, with one encoding for zero', () => {
  roundTrip(f64, 1.5, '3ff8000000000000');
  roundTrip(f64, -2, 'c000000000000000');
  roundTrip(f64, 0, '0000000000000000');
  roundTrip(f64, Number.MIN_VALUE, '0000000000000001');
  roundTrip(f64, -Number.MAX_VALUE, 'ffefffffffffffff');
  assert.equal(toHex(encode(f64, -0)), '0000000000000000', '-0 is written as 0');
  assert.isTrue(Object.is(decode(f64, encode(f64, -0)), 0));
  badDecode(f64, '8000000000000000', 'negative-zero', /offset 0/);
  badDecode(f64, '7ff8000000000000', 'not-finite');
  badDecode(f64, 'fff0000000000001', 'not-finite');
  badDecode(f64, '7ff0000000000000', 'not-finite');
  badDecode(f64, 'fff0000000000000', 'not-finite');
  badDecode(f64, '3ff80000000000', 'truncated');
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    rejects(() => encode(f64, bad), InvalidEncodingError, 'not-finite', /^f64: /);
  }
  rejects(() => encode(f64, 1n as unknown as number), WrongTypeError, 'not-number');
});

test('fixedBytes writes raw bytes of exactly its length', () => {
  const b = new Uint8Array(32).map((_, i) => i);
  roundTrip(bytes32, b, toHex(b));
  assert.equal(encode(bytes64, new Uint8Array(64)).length, 64);
  roundTrip(fixedBytes(0), new Uint8Array(0), '');
  rejects(() => encode(bytes32, new Uint8Array(31)), InvalidEncodingError, 'wrong-length', /32 bytes, got 31/);
  rejects(() => encode(bytes32, new Uint8Array(33)), InvalidEncodingError, 'wrong-length');
  rejects(() => encode(bytes32, 'ab'.repeat(32) as unknown as Uint8Array), WrongTypeError, 'not-bytes');
  badDecode(bytes32, '00'.repeat(31), 'truncated', /needs 32 bytes at offset 0 but only 31 remain/);
});

test('decoded bytes are copies, never views of the input', () => {
  const input = encode(bytes32, new Uint8Array(32).fill(7));
  const out = decode(bytes32, input);
  input[0] = 0;
  assert.equal(out[0], 7);
  const v = decode(varBytes(8), fromHex('0000000201020304').subarray(0, 6));
  assert.deepEqual([...v], [1, 2]);
});

test('decode reads from a subarray at a non-zero offset', () => {
  const backing = fromHex('ffff00000000000000ffee');
  assert.equal(decode(uint53, backing.subarray(2, 10)), 255);
});

test('varBytes has a u32 length prefix and a maximum', () => {
  const c = varBytes(4);
  roundTrip(c, new Uint8Array([]), '00000000');
  roundTrip(c, new Uint8Array([1, 2, 3, 4]), '0000000401020304');
  rejects(() => encode(c, new Uint8Array(5)), InvalidEncodingError, 'too-long');
  badDecode(c, '0000000501020304ff', 'too-long', /offset 0 declares 5/);
  badDecode(c, '00000003aabb', 'truncated');
  badDecode(c, '000000', 'truncated');
});

test('a huge length prefix is refused before anything is allocated', () => {
  const started = Date.now();
  badDecode(varBytes(0xffffffff), 'ffffffff00', 'truncated', /declares 4294967295/);
  badDecode(utf8(0xffffffff), 'ffffffff', 'truncated');
  badDecode(array(u64, 0xffffffff), 'ffffffff0000000000000000', 'truncated', /at least 34359738360 bytes/);
  badDecode(array(fixedBytes(0), 10), 'ffffffff', 'too-long');
  assert.isBelow(Date.now() - started, 100);
});

test('utf8 writes UTF-8 with a byte-length prefix', () => {
  const c = utf8(16);
  roundTrip(c, '', '00000000');
  roundTrip(c, 'hi', '000000026869');
  roundTrip(c, 'é€😀', '00000009c3a9e282acf09f9880');
  roundTrip(c, '\u0000', '0000000100');
  rejects(() => encode(utf8(3), 'abcd'), InvalidEncodingError, 'too-long');
  rejects(() => encode(utf8(3), '😀'), InvalidEncodingError, 'too-long', /4 UTF-8 bytes/);
  rejects(() => encode(c, 5 as unknown as string), WrongTypeError, 'not-string');
});

test('utf8 refuses lone surrogates on encode (they have no UTF-8 form)', () => {
  rejects(() => encode(utf8(16), 'a\ud800'), InvalidEncodingError, 'bad-utf8', /surrogate/);
  rejects(() => encode(utf8(16), '\udc00b'), InvalidEncodingError, 'bad-utf8');
});

test('utf8 decoding is fatal on malformed UTF-8', () => {
  const c = utf8(16);
  badDecode(c, '00000001ff', 'bad-utf8', /offset 4/);
  badDecode(c, '00000002c080', 'bad-utf8'); // overlong NUL
  badDecode(c, '00000003eda080', 'bad-utf8'); // an encoded surrogate
  badDecode(c, '00000002e282', 'bad-utf8'); // a truncated sequence
  badDecode(c, '00000004f4908080', 'bad-utf8'); // above U+10FFFF
});

test('utf8 keeps a leading byte-order mark (stripping it would give two encodings one value)', () => {
  const c = utf8(16);
  const withBom = '\ufeffx';
  roundTrip(c, withBom, '00000004efbbbf78');
  assert.notEqual(toHex(encode(c, 'x')), toHex(encode(c, withBom)));
});

test('option is tag 0 for null or tag 1 and the value; other tags are rejected', () => {
  const c = option(u16);
  roundTrip(c, null, '00');
  roundTrip(c, 258, '010102');
  badDecode(c, '02', 'bad-option-tag', /offset 0 is 2/);
  badDecode(c, '0001', 'trailing-bytes');
  badDecode(c, '01', 'truncated');
});

test('option of option is refused as a schema (null would have two encodings)', () => {
  rejects(() => option(option(u8)), MeshError, 'bad-schema');
});

test('array has a u32 count and a maximum', () => {
  const c = array(u16, 3);
  roundTrip(c, [], '00000000');
  roundTrip(c, [1, 2, 3], '00000003000100020003');
  rejects(() => encode(c, [1, 2, 3, 4]), InvalidEncodingError, 'too-long');
  rejects(() => encode(c, 'abc' as unknown as number[]), WrongTypeError, 'not-array');
  badDecode(c, '00000004', 'too-long');
  badDecode(c, '0000000200010002ff', 'trailing-bytes', /1 trailing bytes .*offset 8/);
  badDecode(c, '00000002000100', 'truncated');
});

test('sortedSet requires strictly ascending encodings, both ways', () => {
  const c = sortedSet(u16, 4);
  roundTrip(c, [], '00000000');
  roundTrip(c, [1, 2, 300], '0000000300010002012c');
  rejects(() => encode(c, [2, 1]), InvalidEncodingError, 'not-sorted', /\[1\]/);
  rejects(() => encode(c, [1, 1]), InvalidEncodingError, 'not-sorted', /duplicates/);
  badDecode(c, '0000000200020001', 'not-sorted', /offset 6/);
  badDecode(c, '0000000200010001', 'not-sorted', /duplicates/);
  // Order is by encoding, not by value: for strings a prefix sorts first.
  const s = sortedSet(utf8(8), 4);
  assert.deepEqual(decode(s, encode(s, ['a', 'b', 'ab'])), ['a', 'b', 'ab']);
  rejects(() => encode(s, ['ab', 'b']), InvalidEncodingError, 'not-sorted');
});

test('trailing bytes are rejected with the offset', () => {
  badDecode(u32, '0000000100', 'trailing-bytes', /1 trailing bytes after the value, at offset 4/);
  badDecode(u8, '', 'truncated');
});

test('decode and Reader reject non-bytes with WrongTypeError', () => {
  rejects(() => decode(u8, [1] as unknown as Uint8Array), WrongTypeError, 'not-bytes');
  rejects(() => new Reader('00' as unknown as Uint8Array), WrongTypeError, 'not-bytes');
});

test('Writer grows from a small buffer and Reader tracks its position', () => {
  const w = new Writer(1);
  const chunk = new Uint8Array(1000).map((_, i) => i & 0xff);
  for (let i = 0; i < 50; i++) w.bytes(chunk);
  w.u8(7);
  w.u16(0x0809);
  w.u32(0x0a0b0c0d);
  w.u64(0x0e0f101112131415n);
  assert.equal(w.length, 50_015);
  const out = w.finish();
  assert.equal(out.length, 50_015);
  assert.isTrue(bytesEqual(out.subarray(49_000, 50_000), chunk));
  const r = new Reader(out);
  assert.equal(r.remaining, 50_015);
  r.bytes(50_000);
  assert.equal(r.offset, 50_000);
  assert.equal(r.u8(), 7);
  assert.equal(r.u16(), 0x0809);
  assert.equal(r.u32(), 0x0a0b0c0d);
  assert.equal(r.u64(), 0x0e0f101112131415n);
  assert.equal(r.remaining, 0);
  rejects(() => r.u8('height'), InvalidEncodingError, 'truncated', /height needs 1 bytes at offset 50015/);
});

test('property: big-endian integers sort in numeric order as byte strings', () => {
  fc.assert(
    fc.property(fc.maxSafeNat(), fc.maxSafeNat(), (a, b) => {
      assert.equal(Math.sign(compareBytes(encode(uint53, a), encode(uint53, b))), Math.sign(a - b));
    }),
    RUNS,
  );
  const big = fc.bigInt({ min: 0n, max: 2n ** 128n - 1n });
  fc.assert(
    fc.property(big, big, (a, b) => {
      assert.equal(Math.sign(compareBytes(encode(u128, a), encode(u128, b))), a < b ? -1 : a > b ? 1 : 0);
    }),
    RUNS,
  );
});

// ---------------------------------------------------------------------------------------------
// Structs and variants

const everything = struct(
  {
    a: u8,
    b: u16,
    c: u32,
    height: uint53,
    d: u64,
    amount: u128,
    balance: i128,
    flag: bool,
    hash: bytes32,
    sig: bytes64,
    blob: varBytes(16),
    memo: utf8(24),
    maybe: option(u128),
    list: array(u16, 4),
  },
  'everything',
);

const transfer = struct({ to: bytes32, amount: u128, memo: option(utf8(8)) }, 'transfer');
const tx = variant(
  'type',
  {
    Transfer: [0, transfer],
    Bond: [1, struct({ amount: u128 })],
    Ping: [7, struct({})],
    Tags: [255, struct({ tags: sortedSet(utf8(4), 3), at: uint53 })],
  },
  'tx',
);

// Compile-time checks of the inferred types: a wrong type here fails `tsc`.
type Tx = Infer<typeof tx>;
const sampleTx: Tx = { type: 'Transfer', to: new Uint8Array(32), amount: 1n, memo: null };
const sampleBond: Tx = { type: 'Bond', amount: 2n };
// @ts-expect-error Bond has no memo
const badBond: Tx = { type: 'Bond', amount: 2n, memo: null };
// @ts-expect-error an unknown case name
const badCase: Tx = { type: 'Burn', amount: 2n };
type Everything = Infer<typeof everything>;
// @ts-expect-error amount is a bigint
const badField: Pick<Everything, 'amount'> = { amount: 1 };
void badBond;
void badCase;
void badField;

test('struct writes fields in declaration order with no framing', () => {
  const point = struct({ y: u8, x: u16 }, 'point');
  roundTrip(point, { y: 1, x: 2 }, '010002');
  roundTrip(struct({}), {}, '');
});

test('encodeFrame is the encoding behind its length as a u32 big-endian, and fails as encode does', () => {
  const point = struct({ y: u8, name: utf8(8) }, 'point');
  assert.equal(toHex(encodeFrame(point, { y: 1, name: 'ab' })), '00000007' + '01' + '00000002' + '6162');
  assert.equal(toHex(encodeFrame(struct({}), {})), '00000000');
  // The writer is reused: a frame after a plain encoding (and the other way) owns its bytes.
  const plain = encode(point, { y: 2, name: 'c' });
  const framed = encodeFrame(point, { y: 3, name: 'de' });
  assert.equal(toHex(plain), '02' + '00000001' + '63');
  assert.equal(toHex(framed.subarray(4)), toHex(encode(point, { y: 3, name: 'de' })));
  rejects(() => encodeFrame(point, { y: 256, name: '' }), InvalidEncodingError, 'out-of-range', /^point\.y: /);
});

test('variant writes one tag byte then the case fields', () => {
  roundTrip(tx, sampleBond, `01${'00'.repeat(15)}02`);
  roundTrip(tx, { type: 'Ping' }, '07');
  roundTrip(tx, sampleTx, `00${'00'.repeat(32)}${'00'.repeat(15)}0100`);
  const decoded = decode(tx, encode(tx, sampleBond));
  assert.equal(decoded.type, 'Bond');
  assert.deepEqual(Object.keys(decoded), ['type', 'amount']);
});

test('variant rejects unknown tags both ways', () => {
  badDecode(tx, '02', 'bad-variant-tag', /offset 0 is 2/);
  badDecode(tx, '', 'truncated');
  rejects(() => encode(tx, { type: 'Burn', amount: 1n } as unknown as Tx), InvalidEncodingError, 'bad-variant-tag', /Transfer, Bond, Ping, Tags/);
  rejects(() => encode(tx, { type: 'toString' } as unknown as Tx), InvalidEncodingError, 'bad-variant-tag');
  rejects(() => encode(tx, { amount: 1n } as unknown as Tx), InvalidEncodingError, 'bad-variant-tag');
  rejects(() => encode(tx, null as unknown as Tx), WrongTypeError, 'not-object');
});

test('encode errors name the field path', () => {
  rejects(
    () => encode(tx, { type: 'Transfer', to: new Uint8Array(32), amount: -1n, memo: null }),
    InvalidEncodingError,
    'out-of-range',
    /^tx\.Transfer\.amount: /,
  );
  rejects(() => encode(transfer, { to: new Uint8Array(31), amount: 1n, memo: null }), InvalidEncodingError, 'wrong-length', /^transfer\.to: /);
  rejects(
    () => encode(array(tx, 4), [sampleBond, { type: 'Tags', tags: ['b', 'a'], at: 1 }]),
    InvalidEncodingError,
    'not-sorted',
    /^array<tx>\[1\]\.Tags\.tags\[1\]: /,
  );
  rejects(() => encode(transfer, { to: new Uint8Array(32), amount: 1n, memo: 'x'.repeat(9) }), InvalidEncodingError, 'too-long', /^transfer\.memo: /);
  rejects(
    () => encode(transfer, { to: new Uint8Array(32), amount: '1', memo: null } as unknown as Infer<typeof transfer>),
    WrongTypeError,
    'not-bigint',
    /^transfer\.amount: /,
  );
});

test('encode rejects missing and unknown fields', () => {
  rejects(
    () => encode(transfer, { to: new Uint8Array(32), amount: 1n } as unknown as Infer<typeof transfer>),
    InvalidEncodingError,
    'missing-field',
    /^transfer\.memo: /,
  );
  rejects(
    () => encode(transfer, { to: new Uint8Array(32), amount: 1n, memo: undefined } as unknown as Infer<typeof transfer>),
    InvalidEncodingError,
    'missing-field',
  );
  rejects(
    () => encode(transfer, { to: new Uint8Array(32), amount: 1n, memo: null, fee: 1n } as Infer<typeof transfer>),
    InvalidEncodingError,
    'unknown-field',
    /"fee"/,
  );
  rejects(() => encode(tx, { ...sampleBond, memo: null } as Tx), InvalidEncodingError, 'unknown-field', /^tx\.Bond: /);
  rejects(() => encode(transfer, [] as unknown as Infer<typeof transfer>), WrongTypeError, 'not-object');
});

test('decode errors name the field path and the byte offset', () => {
  const bytes = encode(tx, sampleTx);
  rejects(() => decode(tx, bytes.subarray(0, 40)), InvalidEncodingError, 'truncated', /^tx\.Transfer\.amount: .*offset 33/);
  const badMemo = bytes.slice();
  badMemo[49] = 2;
  rejects(() => decode(tx, badMemo), InvalidEncodingError, 'bad-option-tag', /^tx\.Transfer\.memo: .*offset 49/);
});

test('bad schemas are refused when built', () => {
  rejects(() => struct({ 1: u8 }), MeshError, 'bad-schema');
  rejects(() => struct(JSON.parse('{"__proto__": 1}') as Record<string, Codec<unknown>>), MeshError, 'bad-schema');
  rejects(() => struct({ 'a-b': u8 }), MeshError, 'bad-schema');
  rejects(() => variant('t', { A: [1, struct({})], B: [1, struct({})] }), MeshError, 'bad-schema');
  rejects(() => variant('t', { A: [256, struct({})] }), MeshError, 'bad-schema');
  rejects(() => variant('t', { A: [0, struct({ t: u8 })] }), MeshError, 'bad-schema');
  rejects(() => varBytes(-1), MeshError, 'bad-schema');
  rejects(() => array(u8, 2 ** 32), MeshError, 'bad-schema');
});

test('a block of 1,024 transactions encodes and decodes', () => {
  const block = struct({ height: uint53, txs: array(tx, 1024) }, 'block');
  const txs: Tx[] = [];
  for (let i = 0; i < 1024; i++) {
    txs.push({ type: 'Transfer', to: new Uint8Array(32).fill(i & 0xff), amount: BigInt(i) * 10n ** 18n, memo: i % 3 ? null : `m${i}` });
  }
  const bytes = encode(block, { height: 9, txs });
  assert.deepEqual(decode(block, bytes), { height: 9, txs });
});

// ---------------------------------------------------------------------------------------------
// Properties: round trip and canonicality

const bytesN = (n: number): fc.Arbitrary<Uint8Array> => fc.uint8Array({ minLength: n, maxLength: n });
const text = (maxBytes: number): fc.Arbitrary<string> =>
  fc
    .oneof(fc.string({ maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom('\ufeff', '\ufeffa', '\u0000'))
    .filter((s) => new TextEncoder().encode(s).length <= maxBytes);

const everythingArb: fc.Arbitrary<Everything> = fc.record({
  a: fc.integer({ min: 0, max: 255 }),
  b: fc.integer({ min: 0, max: 65535 }),
  c: fc.integer({ min: 0, max: 0xffffffff }),
  height: fc.maxSafeNat(),
  d: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  amount: fc.bigInt({ min: 0n, max: 2n ** 128n - 1n }),
  balance: fc.bigInt({ min: -(2n ** 127n), max: 2n ** 127n - 1n }),
  flag: fc.boolean(),
  hash: bytesN(32),
  sig: bytesN(64),
  blob: fc.uint8Array({ maxLength: 16 }),
  memo: text(24),
  maybe: fc.option(fc.bigInt({ min: 0n, max: 2n ** 128n - 1n }), { nil: null }),
  list: fc.array(fc.integer({ min: 0, max: 65535 }), { maxLength: 4 }),
});

function sortedBy<T>(codec: Codec<T>, items: T[]): T[] {
  return items
    .map((v) => ({ v, k: encode(codec, v) }))
    .sort((x, y) => compareBytes(x.k, y.k))
    .map((x) => x.v);
}

const tagsArb = fc.uniqueArray(text(4), { maxLength: 3 }).map((tags) => sortedBy(utf8(4), tags));

const txArb: fc.Arbitrary<Tx> = fc.oneof(
  fc.record({
    type: fc.constant('Transfer' as const),
    to: bytesN(32),
    amount: fc.bigInt({ min: 0n, max: 2n ** 128n - 1n }),
    memo: fc.option(text(8), { nil: null }),
  }),
  fc.record({ type: fc.constant('Bond' as const), amount: fc.bigInt({ min: 0n, max: 2n ** 128n - 1n }) }),
  fc.record({ type: fc.constant('Ping' as const) }),
  fc.record({ type: fc.constant('Tags' as const), tags: tagsArb, at: fc.maxSafeNat() }),
);

const entry = struct({ k: u8, v: option(bool) }, 'entry');
const setCodec = sortedSet(entry, 5);
const setArb = fc
  .uniqueArray(fc.record({ k: fc.integer({ min: 0, max: 255 }), v: fc.option(fc.boolean(), { nil: null }) }), {
    maxLength: 5,
    selector: (e) => toHex(encode(entry, e)),
  })
  .map((items) => sortedBy(entry, items));

const nested = struct({ txs: array(tx, 3), set: setCodec, note: option(varBytes(4)) }, 'nested');
const nestedArb = fc.record({
  txs: fc.array(txArb, { maxLength: 3 }),
  set: setArb,
  note: fc.option(fc.uint8Array({ maxLength: 4 }), { nil: null }),
});

interface Subject<T> {
  readonly codec: Codec<T>;
  readonly arb: fc.Arbitrary<T>;
}

const subjects: Subject<unknown>[] = [
  { codec: everything, arb: everythingArb },
  { codec: tx, arb: txArb },
  { codec: array(tx, 3), arb: fc.array(txArb, { maxLength: 3 }) },
  { codec: setCodec, arb: setArb },
  { codec: nested, arb: nestedArb },
  { codec: option(utf8(6)), arb: fc.option(text(6), { nil: null }) },
  // Every finite double but -0, which decodes as 0.
  {
    codec: array(f64, 4),
    arb: fc.array(
      fc.double({ noNaN: true, noDefaultInfinity: true }).filter((v) => !Object.is(v, -0)),
      { maxLength: 4 },
    ),
  },
  { codec: sortedSet(u16, 4), arb: fc.uniqueArray(fc.integer({ min: 0, max: 65535 }), { maxLength: 4 }).map((a) => a.sort((x, y) => x - y)) },
] as Subject<unknown>[];

// decode either throws InvalidEncodingError or returns a value whose encoding is the input.
function checkCanonical(codec: Codec<unknown>, input: Uint8Array): void {
  let value: unknown;
  try {
    value = decode(codec, input);
  } catch (error) {
    assert.instanceOf(error, InvalidEncodingError, `${codec.name}: ${String(error)}`);
    assert.equal((error as InvalidEncodingError).name, 'InvalidEncodingError');
    assert.isString((error as InvalidEncodingError).code);
    return;
  }
  assert.equal(toHex(encode(codec, value)), toHex(input), `${codec.name} decoded ${toHex(input)} non-canonically`);
}

type Mutation =
  | { kind: 'flip'; at: number; xor: number }
  | { kind: 'set'; at: number; to: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'extend'; tail: Uint8Array }
  | { kind: 'insert'; at: number; byte: number }
  | { kind: 'delete'; at: number };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), to: fc.constantFrom(0, 1, 2, 0x7f, 0x80, 0xff) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('extend' as const), tail: fc.uint8Array({ minLength: 1, maxLength: 4 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
);

function mutate(bytes: Uint8Array, m: Mutation): Uint8Array {
  const n = bytes.length;
  switch (m.kind) {
    case 'flip': {
      if (n === 0) return bytes;
      const out = bytes.slice();
      out[m.at % n] = out[m.at % n]! ^ m.xor;
      return out;
    }
    case 'set': {
      if (n === 0) return bytes;
      const out = bytes.slice();
      out[m.at % n] = m.to;
      return out;
    }
    case 'truncate':
      return bytes.slice(0, n === 0 ? 0 : m.at % n);
    case 'extend': {
      const out = new Uint8Array(n + m.tail.length);
      out.set(bytes);
      out.set(m.tail, n);
      return out;
    }
    case 'insert': {
      const at = m.at % (n + 1);
      const out = new Uint8Array(n + 1);
      out.set(bytes.subarray(0, at));
      out[at] = m.byte;
      out.set(bytes.subarray(at), at + 1);
      return out;
    }
    case 'delete': {
      if (n === 0) return bytes;
      const at = m.at % n;
      const out = new Uint8Array(n - 1);
      out.set(bytes.subarray(0, at));
      out.set(bytes.subarray(at + 1), at);
      return out;
    }
  }
}

test('property: decode(encode(v)) deep-equals v for composite codecs', () => {
  for (const { codec, arb } of subjects) {
    fc.assert(
      fc.property(arb, (v) => {
        const bytes = encode(codec, v);
        assert.deepEqual(decode(codec, bytes), v);
        assert.equal(toHex(encode(codec, decode(codec, bytes))), toHex(bytes));
      }),
      { numRuns: 150 },
    );
  }
});

test('property: random byte strings decode only to values that re-encode identically', () => {
  const small: Codec<unknown>[] = [bool, f64, uint53, option(u8), option(utf8(4)), array(bool, 3), sortedSet(u8, 3), sortedSet(option(u8), 3), utf8(6), tx];
  for (const codec of [...small, ...subjects.map((s) => s.codec)]) {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 24 }), (bytes) => checkCanonical(codec, bytes)),
      { numRuns: 150 },
    );
  }
  // Any eight bytes: a finite double's one encoding, or refused (NaN, infinities, -0).
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 8, maxLength: 8 }), (bytes) => checkCanonical(f64, bytes)),
    { numRuns: 300 },
  );
  // Random bytes behind a plausible length prefix reach the UTF-8 decoder and the sort check.
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 8 }), (body) => {
      const framed = new Uint8Array(4 + body.length);
      new DataView(framed.buffer).setUint32(0, body.length);
      framed.set(body, 4);
      checkCanonical(utf8(8), framed);
    }),
    { numRuns: 300 },
  );
});

test('property: mutated, truncated and extended encodings decode canonically or not at all', () => {
  for (const { codec, arb } of subjects) {
    fc.assert(
      fc.property(arb, fc.array(mutationArb, { minLength: 1, maxLength: 3 }), (v, mutations) => {
        let bytes = encode(codec, v);
        for (const m of mutations) bytes = mutate(bytes, m);
        checkCanonical(codec, bytes);
      }),
      { numRuns: 200 },
    );
  }
});

test('property: any trailing byte after a valid encoding is rejected', () => {
  fc.assert(
    fc.property(txArb, fc.uint8Array({ minLength: 1, maxLength: 3 }), (v, tail) => {
      const bytes = encode(tx, v);
      const extended = new Uint8Array(bytes.length + tail.length);
      extended.set(bytes);
      extended.set(tail, bytes.length);
      rejects(() => decode(tx, extended), InvalidEncodingError, 'trailing-bytes');
      for (let cut = 0; cut < bytes.length; cut++) {
        rejects(() => decode(tx, bytes.subarray(0, cut)), InvalidEncodingError, 'truncated');
      }
    }),
    RUNS,
  );
});
