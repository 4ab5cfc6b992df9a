import { assert } from 'chai';
import fc from 'fast-check';
import { rejects } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { InvalidAmountError, WrongTypeError } from '../errors.ts';
import {
  assertI128,
  assertU128,
  CREDIT,
  formatAmount,
  formatBalance,
  formatCredits,
  I128_MAX,
  I128_MIN,
  parseAmount,
  parseBalance,
  parseCredits,
  U128_MAX,
} from './amount.ts';

const RUNS = { numRuns: 300 };

const CANONICAL = /^(0|[1-9][0-9]*)$/;
const CANONICAL_SIGNED = /^(0|-?[1-9][0-9]*)$/;

test('constants', () => {
  assert.equal(CREDIT, 1_000_000_000_000_000_000n);
  assert.equal(U128_MAX.toString(), '340282366920938463463374607431768211455');
  assert.equal(I128_MIN.toString(), '-170141183460469231731687303715884105728');
  assert.equal(I128_MAX.toString(), '170141183460469231731687303715884105727');
});

test('parseAmount accepts canonical decimal strings and safe integers', () => {
  assert.equal(parseAmount('0'), 0n);
  assert.equal(parseAmount('7'), 7n);
  assert.equal(parseAmount('1500000000000000000'), 15n * 10n ** 17n);
  assert.equal(parseAmount(0), 0n);
  assert.equal(parseAmount(42), 42n);
  assert.equal(parseAmount(Number.MAX_SAFE_INTEGER), 2n ** 53n - 1n);
});

test('parseAmount bounds: U128_MAX is accepted, U128_MAX + 1 is not', () => {
  assert.equal(parseAmount(U128_MAX.toString()), U128_MAX);
  rejects(() => parseAmount((U128_MAX + 1n).toString()), InvalidAmountError, 'out-of-range', /u128/);
  rejects(() => parseAmount('999999999999999999999999999999999999999'), InvalidAmountError, 'out-of-range');
  rejects(() => parseAmount('1'.padEnd(40, '0')), InvalidAmountError, 'out-of-range');
});

test('parseAmount rejects a megabyte of digits without converting it', () => {
  const huge = '9'.repeat(1 << 20);
  const started = Date.now();
  rejects(() => parseAmount(huge), InvalidAmountError, 'out-of-range', /characters/);
  assert.isBelow(Date.now() - started, 200);
});

test('parseAmount rejects each malformed string form with its code', () => {
  const cases: [string, string][] = [
    ['', 'empty'],
    ['-1', 'sign'],
    ['+1', 'sign'],
    ['-0', 'sign'],
    ['00', 'leading-zero'],
    ['01', 'leading-zero'],
    ['000000000000000000001', 'leading-zero'],
    ['1.5', 'fraction'],
    ['1.0', 'fraction'],
    ['1.', 'fraction'],
    ['.5', 'fraction'],
    ['0.0', 'fraction'],
    ['1e3', 'exponent'],
    ['1E3', 'exponent'],
    ['1e+3', 'exponent'],
    ['e3', 'not-decimal'],
    [' 1', 'not-decimal'],
    ['1 ', 'not-decimal'],
    ['1\n', 'not-decimal'],
    ['\t1', 'not-decimal'],
    ['1_000', 'not-decimal'],
    ['1,000', 'not-decimal'],
    ['0x10', 'not-decimal'],
    ['0b1', 'not-decimal'],
    ['Infinity', 'not-decimal'],
    ['NaN', 'not-decimal'],
    ['١', 'not-decimal'],
    ['１', 'not-decimal'],
    ['1-', 'not-decimal'],
    ['10n', 'not-decimal'],
  ];
  for (const [text, code] of cases) {
    rejects(() => parseAmount(text, 'fee'), InvalidAmountError, code, /^fee/);
  }
});

test('parseAmount names the offending position', () => {
  rejects(() => parseAmount('12x4'), InvalidAmountError, 'not-decimal', /"x" at position 2/);
});

test('parseAmount rejects numbers that are not safe non-negative integers', () => {
  rejects(() => parseAmount(1.5), InvalidAmountError, 'not-integer');
  rejects(() => parseAmount(0.1), InvalidAmountError, 'not-integer');
  rejects(() => parseAmount(Number.NaN), InvalidAmountError, 'not-integer');
  rejects(() => parseAmount(Number.POSITIVE_INFINITY), InvalidAmountError, 'not-integer');
  rejects(() => parseAmount(-1), InvalidAmountError, 'sign');
  rejects(() => parseAmount(-0), InvalidAmountError, 'sign');
  rejects(() => parseAmount(1e21), InvalidAmountError, 'unsafe-integer');
  rejects(() => parseAmount(2 ** 53), InvalidAmountError, 'unsafe-integer');
  rejects(() => parseAmount(Number.MAX_SAFE_INTEGER + 2), InvalidAmountError, 'unsafe-integer');
});

test('parseAmount rejects other types with WrongTypeError', () => {
  for (const bad of [1n, null, undefined, true, false, {}, ['1'], new Uint8Array(1), new String('1')]) {
    rejects(() => parseAmount(bad), WrongTypeError, 'not-string-or-number');
  }
});

test('formatAmount writes plain digits and enforces u128', () => {
  assert.equal(formatAmount(0n), '0');
  assert.equal(formatAmount(1234n), '1234');
  assert.equal(formatAmount(U128_MAX), '340282366920938463463374607431768211455');
  rejects(() => formatAmount(U128_MAX + 1n), InvalidAmountError, 'out-of-range');
  rejects(() => formatAmount(-1n), InvalidAmountError, 'out-of-range');
  rejects(() => formatAmount(1 as unknown as bigint), WrongTypeError, 'not-bigint');
});

test('assertU128 and assertI128 check bounds exactly', () => {
  assert.equal(assertU128(0n, 'x'), 0n);
  assert.equal(assertU128(U128_MAX, 'x'), U128_MAX);
  rejects(() => assertU128(U128_MAX + 1n, 'stake'), InvalidAmountError, 'out-of-range', /^stake/);
  rejects(() => assertU128(-1n, 'stake'), InvalidAmountError, 'out-of-range');
  assert.equal(assertI128(I128_MIN, 'x'), I128_MIN);
  assert.equal(assertI128(I128_MAX, 'x'), I128_MAX);
  rejects(() => assertI128(I128_MIN - 1n, 'delta'), InvalidAmountError, 'out-of-range', /^delta/);
  rejects(() => assertI128(I128_MAX + 1n, 'delta'), InvalidAmountError, 'out-of-range');
  rejects(() => assertI128('1' as unknown as bigint, 'delta'), WrongTypeError, 'not-bigint');
});

test('parseBalance and formatBalance handle i128 with an optional minus', () => {
  assert.equal(parseBalance('0'), 0n);
  assert.equal(parseBalance('-5'), -5n);
  assert.equal(parseBalance('17'), 17n);
  assert.equal(parseBalance(-3), -3n);
  assert.equal(parseBalance(I128_MIN.toString()), I128_MIN);
  assert.equal(parseBalance(I128_MAX.toString()), I128_MAX);
  assert.equal(formatBalance(-5n), '-5');
  assert.equal(formatBalance(0n), '0');
  assert.equal(formatBalance(I128_MIN), '-170141183460469231731687303715884105728');
  rejects(() => formatBalance(I128_MAX + 1n), InvalidAmountError, 'out-of-range');
  rejects(() => formatBalance(I128_MIN - 1n), InvalidAmountError, 'out-of-range');
});

test('parseBalance rejects every non-canonical form', () => {
  const cases: [unknown, string][] = [
    ['', 'empty'],
    ['-', 'empty'],
    ['-0', 'negative-zero'],
    ['+1', 'sign'],
    ['--1', 'sign'],
    ['-+1', 'sign'],
    ['-01', 'leading-zero'],
    ['00', 'leading-zero'],
    ['-1.5', 'fraction'],
    ['1e3', 'exponent'],
    [' -1', 'not-decimal'],
    ['- 1', 'not-decimal'],
    ['1-', 'not-decimal'],
    [(I128_MAX + 1n).toString(), 'out-of-range'],
    [(I128_MIN - 1n).toString(), 'out-of-range'],
    [`-${'9'.repeat(1000)}`, 'out-of-range'],
    [-0, 'negative-zero'],
    [0.5, 'not-integer'],
    [-(2 ** 53), 'unsafe-integer'],
  ];
  for (const [input, code] of cases) {
    rejects(() => parseBalance(input), InvalidAmountError, code);
  }
  rejects(() => parseBalance(5n), WrongTypeError, 'not-string-or-number');
  rejects(() => parseBalance(null), WrongTypeError, 'not-string-or-number');
});

test('formatCredits shows credits for people', () => {
  assert.equal(formatCredits(0n), '0');
  assert.equal(formatCredits(CREDIT), '1');
  assert.equal(formatCredits(15n * 10n ** 17n), '1.5');
  assert.equal(formatCredits(1n), '0.000000000000000001');
  assert.equal(formatCredits(-2n * CREDIT), '-2');
  assert.equal(formatCredits(-1n), '-0.000000000000000001');
  assert.equal(formatCredits(1000n * CREDIT + 10n ** 16n), '1000.01');
  assert.equal(formatCredits(U128_MAX), '340282366920938463463.374607431768211455');
  rejects(() => formatCredits(1 as unknown as bigint), WrongTypeError, 'not-bigint');
});

test('property: parseAmount(formatAmount(x)) === x for every u128', () => {
  const u128 = fc.oneof(fc.bigInt({ min: 0n, max: U128_MAX }), fc.bigInt({ min: 0n, max: 2n ** 64n }), fc.constantFrom(0n, 1n, U128_MAX, U128_MAX - 1n));
  fc.assert(
    fc.property(u128, (x) => {
      const text = formatAmount(x);
      assert.match(text, CANONICAL);
      assert.equal(parseAmount(text), x);
    }),
    RUNS,
  );
});

test('property: a string is accepted exactly when it is canonical decimal within u128', () => {
  const near = fc.stringMatching(/^[-+0-9.eE x]{0,42}$/);
  const digits = fc.stringMatching(/^[0-9]{1,41}$/);
  fc.assert(
    fc.property(fc.oneof(near, digits, fc.string({ maxLength: 8 })), (text) => {
      const valid = CANONICAL.test(text) && BigInt(text) <= U128_MAX;
      if (valid) {
        assert.equal(parseAmount(text), BigInt(text));
      } else {
        assert.throws(() => parseAmount(text), InvalidAmountError);
      }
    }),
    RUNS,
  );
});

test('property: a number is accepted exactly when it is a safe integer >= 0 (not -0)', () => {
  const numbers = fc.oneof(fc.double(), fc.integer(), fc.maxSafeInteger(), fc.constantFrom(-0, 2 ** 53, 1e21));
  fc.assert(
    fc.property(numbers, (n) => {
      if (Number.isSafeInteger(n) && n >= 0 && !Object.is(n, -0)) {
        assert.equal(parseAmount(n), BigInt(n));
      } else {
        assert.throws(() => parseAmount(n), InvalidAmountError);
      }
    }),
    RUNS,
  );
});

test('property: balances round-trip and only the canonical signed grammar is accepted', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: I128_MIN, max: I128_MAX }), (x) => {
      const text = formatBalance(x);
      assert.match(text, CANONICAL_SIGNED);
      assert.equal(parseBalance(text), x);
    }),
    RUNS,
  );
  fc.assert(
    fc.property(fc.stringMatching(/^[-+0-9.e ]{0,41}$/), (text) => {
      const valid = CANONICAL_SIGNED.test(text) && BigInt(text) >= I128_MIN && BigInt(text) <= I128_MAX;
      if (valid) assert.equal(parseBalance(text), BigInt(text));
      else assert.throws(() => parseBalance(text), InvalidAmountError);
    }),
    RUNS,
  );
});

test('property: formatCredits is exact (reading it back gives the same base units)', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: I128_MIN, max: U128_MAX }), (x) => {
      const text = formatCredits(x);
      assert.match(text, /^-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$/);
      const negative = text.startsWith('-');
      const [whole, fraction = ''] = (negative ? text.slice(1) : text).split('.');
      const abs = BigInt(whole!) * CREDIT + BigInt(fraction.padEnd(18, '0'));
      assert.equal(negative ? -abs : abs, x);
    }),
    RUNS,
  );
});

test('parseCredits reads credits as decimals into base units', () => {
  assert.equal(parseCredits('1'), CREDIT);
  assert.equal(parseCredits('1.5'), 15n * 10n ** 17n);
  assert.equal(parseCredits('0.000000000000000001'), 1n);
  assert.equal(parseCredits('0'), 0n);
  assert.equal(parseCredits('1000.01'), 1000n * CREDIT + 10n ** 16n);
  assert.equal(parseCredits('340282366920938463463.374607431768211455'), U128_MAX);
});

test('parseCredits refuses signs, exponents, stray points, more than 18 places and more than u128', () => {
  const cases: [string, string][] = [
    ['', 'empty'],
    ['-1', 'sign'],
    ['+1.5', 'sign'],
    ['-.5', 'sign'],
    ['1e3', 'exponent'],
    ['1.5e3', 'exponent'],
    ['.5', 'fraction'],
    ['5.', 'fraction'],
    ['1.2.3', 'not-decimal'],
    ['01.5', 'leading-zero'],
    [' 1', 'not-decimal'],
    ['1,5', 'not-decimal'],
    ['0.0000000000000000001', 'fraction-digits'],
    ['340282366920938463463.374607431768211456', 'out-of-range'],
    ['1000000000000000000000000', 'out-of-range'],
  ];
  for (const [text, code] of cases) rejects(() => parseCredits(text), InvalidAmountError, code);
  // The message names the amount as given, not its whole part.
  rejects(() => parseCredits('-1.5'), InvalidAmountError, 'sign', /"-1\.5" has a sign/);
});

test('property: parseCredits(formatCredits(x)) === x for every u128', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: U128_MAX }), (x) => {
      assert.equal(parseCredits(formatCredits(x)), x);
    }),
    RUNS,
  );
});
