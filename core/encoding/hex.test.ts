import { assert } from 'chai';
import fc from 'fast-check';
import { rejects } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { InvalidHexError, WrongTypeError } from '../errors.ts';
import { fromHex, isId, parseId, toHex } from './hex.ts';

const RUNS = { numRuns: 200 };

test('toHex writes lowercase, two digits per byte', () => {
  assert.equal(toHex(new Uint8Array([])), '');
  assert.equal(toHex(new Uint8Array([0, 1, 0x0f, 0x10, 0xab, 0xff])), '00010f10abff');
  const all = new Uint8Array(256).map((_, i) => i);
  const hex = toHex(all);
  assert.equal(hex.length, 512);
  assert.match(hex, /^[0-9a-f]+$/);
  assert.deepEqual(fromHex(hex), all);
});

test('toHex gives the same digits whether it writes character codes (short inputs) or decodes them at once (long ones)', () => {
  for (const length of [0, 1, 32, 63, 64, 65, 66, 1_000, 65_536]) {
    const bytes = new Uint8Array(length).map((_, i) => (i * 37 + 11) & 0xff);
    const expected = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    assert.equal(toHex(bytes), expected, String(length));
    assert.equal(toHex(bytes.subarray(1)), expected.slice(2), `a view of ${length - 1}`);
  }
});

test('toHex rejects non-bytes with WrongTypeError', () => {
  rejects(() => toHex('00' as unknown as Uint8Array), WrongTypeError, 'not-bytes');
  rejects(() => toHex([0] as unknown as Uint8Array), WrongTypeError, 'not-bytes');
});

test('fromHex decodes lowercase hex', () => {
  assert.deepEqual(fromHex(''), new Uint8Array([]));
  assert.deepEqual(fromHex('00ff7f80'), new Uint8Array([0, 255, 127, 128]));
  assert.deepEqual(fromHex('abcdef', 3), new Uint8Array([0xab, 0xcd, 0xef]));
});

test('fromHex rejects an odd length', () => {
  rejects(() => fromHex('abc'), InvalidHexError, 'odd-length', /odd/);
  rejects(() => fromHex('0'), InvalidHexError, 'odd-length');
});

test('fromHex rejects uppercase, saying hex must be lowercase', () => {
  rejects(() => fromHex('AB'), InvalidHexError, 'bad-character', /lowercase/);
  rejects(() => fromHex('aB'), InvalidHexError, 'bad-character', /position 1/);
  rejects(() => fromHex('00fF'), InvalidHexError, 'bad-character', /position 3/);
});

test('fromHex rejects stray characters and names the first and its position', () => {
  rejects(() => fromHex('0g'), InvalidHexError, 'bad-character', /"g" at position 1/);
  rejects(() => fromHex('0x00'), InvalidHexError, 'bad-character', /"x" at position 1/);
  rejects(() => fromHex(' 0'), InvalidHexError, 'bad-character', /position 0/);
  rejects(() => fromHex('00\n'.padEnd(4, '0')), InvalidHexError, 'bad-character', /position 2/);
  rejects(() => fromHex('zz', undefined, 'block hash'), InvalidHexError, 'bad-character', /^block hash/);
  // Characters whose code points alias digits after truncation must not slip through.
  rejects(() => fromHex('\u0130\u0131'), InvalidHexError, 'bad-character');
  rejects(() => fromHex('٠١'), InvalidHexError, 'bad-character');
});

test('fromHex with a byte length rejects any other length', () => {
  rejects(() => fromHex('00', 2), InvalidHexError, 'wrong-length', /4 hex characters, got 2/);
  rejects(() => fromHex('000000', 2), InvalidHexError, 'wrong-length');
  rejects(() => fromHex('000', 2), InvalidHexError, 'wrong-length');
});

test('fromHex rejects non-strings with WrongTypeError', () => {
  for (const bad of [null, 12, new Uint8Array(1), undefined]) {
    rejects(() => fromHex(bad as unknown as string), WrongTypeError, 'not-string');
  }
});

test('parseId takes exactly 64 lowercase hex characters; isId agrees', () => {
  const id = 'ab'.repeat(32);
  assert.deepEqual(parseId(id), new Uint8Array(32).fill(0xab));
  assert.isTrue(isId(id));
  rejects(() => parseId('ab'.repeat(31), 'tx_id'), InvalidHexError, 'wrong-length', /^tx_id/);
  rejects(() => parseId('AB'.repeat(32)), InvalidHexError, 'bad-character');
  assert.isFalse(isId('AB'.repeat(32)));
  assert.isFalse(isId('ab'.repeat(33)));
  assert.isFalse(isId(`${'ab'.repeat(32)}\n`));
  assert.isFalse(isId(null));
  assert.isFalse(isId(new Uint8Array(32)));
});

test('property: fromHex(toHex(bytes)) round-trips and toHex is lowercase of twice the length', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      const hex = toHex(bytes);
      assert.equal(hex.length, bytes.length * 2);
      assert.match(hex, /^[0-9a-f]*$/);
      assert.deepEqual(fromHex(hex), bytes);
      assert.deepEqual(fromHex(hex, bytes.length), bytes);
    }),
    RUNS,
  );
});

test('property: any string outside the lowercase hex grammar is rejected with InvalidHexError', () => {
  const near = fc.stringMatching(/^[0-9a-fA-Fgx \n]{0,12}$/);
  fc.assert(
    fc.property(fc.oneof(near, fc.string({ maxLength: 12 })), (text) => {
      if (/^([0-9a-f]{2})*$/.test(text)) {
        assert.equal(toHex(fromHex(text)), text);
      } else {
        assert.throws(() => fromHex(text), InvalidHexError);
      }
    }),
    RUNS,
  );
});
