import { InvalidAmountError, WrongTypeError } from '../errors.ts';
import { describe } from './bytes.ts';

/** Base units in one credit: amounts are integers of 10^-18 credit. */
export const CREDIT: bigint = 10n ** 18n;

/** The largest amount (u128). */
export const U128_MAX: bigint = 2n ** 128n - 1n;

/** The smallest balance (i128). */
export const I128_MIN: bigint = -(2n ** 127n);

/** The largest balance (i128). */
export const I128_MAX: bigint = 2n ** 127n - 1n;

// Digits in U128_MAX (340282366920938463463374607431768211455) and in |I128_MIN|
// (170141183460469231731687303715884105728): a longer string is out of range whatever it holds,
// so it is refused before any scan or BigInt conversion.
const U128_DIGITS = 39;
const I128_DIGITS = 39;

function checkString(text: string, what: string, maxDigits: number): void {
  if (text.length === 0) throw new InvalidAmountError('empty', `${what} is an empty string`);
  if (text.length > maxDigits) {
    throw new InvalidAmountError('out-of-range', `${what} has ${text.length} characters, more than the ${maxDigits} digits of the largest value`);
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) continue; // 0-9
    const ch = text[i]!;
    if (ch === '.') {
      throw new InvalidAmountError('fraction', `${what} ${JSON.stringify(text)} has a fraction at position ${i}; amounts are integers of base units`);
    }
    if ((ch === 'e' || ch === 'E') && i > 0) {
      throw new InvalidAmountError('exponent', `${what} ${JSON.stringify(text)} has an exponent at position ${i}; write all digits`);
    }
    if ((ch === '+' || ch === '-') && i === 0) {
      throw new InvalidAmountError('sign', `${what} ${JSON.stringify(text)} has a sign; write the digits only`);
    }
    throw new InvalidAmountError('not-decimal', `${what} has ${JSON.stringify(ch)} at position ${i}, not a decimal digit`);
  }
  if (text.length > 1 && text.charCodeAt(0) === 48) {
    throw new InvalidAmountError('leading-zero', `${what} ${JSON.stringify(text)} has a leading zero`);
  }
}

function fromNumber(value: number, what: string, allowNegative: boolean): bigint {
  if (!Number.isFinite(value) || !Number.isInteger(value)) {
    throw new InvalidAmountError('not-integer', `${what} ${value} is not an integer`);
  }
  if (Object.is(value, -0)) {
    throw new InvalidAmountError(allowNegative ? 'negative-zero' : 'sign', `${what} is -0`);
  }
  if (value < 0 && !allowNegative) {
    throw new InvalidAmountError('sign', `${what} ${value} is negative`);
  }
  if (!Number.isSafeInteger(value)) {
    throw new InvalidAmountError('unsafe-integer', `${what} ${value} is beyond 2^53 - 1 and may have lost digits; send it as a decimal string`);
  }
  return BigInt(value);
}

/**
 * Parses an amount from the wire: a canonical decimal string of base units (`"0"` or digits
 * without a leading zero, at most U128_MAX), or a JSON integer that is a safe integer ≥ 0.
 * Floats, exponents, signs, leading zeros, whitespace and anything beyond u128 throw
 * InvalidAmountError; other types throw WrongTypeError.
 *
 * @example parseAmount('1500000000000000000') // 1.5 credits
 */
export function parseAmount(input: unknown, what = 'amount'): bigint {
  if (typeof input === 'number') return fromNumber(input, what, false);
  if (typeof input !== 'string') {
    throw new WrongTypeError('not-string-or-number', `${what} must be a decimal string, got ${describe(input)}`);
  }
  checkString(input, what, U128_DIGITS);
  const value = BigInt(input);
  if (value > U128_MAX) throw new InvalidAmountError('out-of-range', `${what} ${input} is above u128`);
  return value;
}

/** The wire form of an amount: its decimal digits. Throws unless 0 ≤ value ≤ U128_MAX. */
export function formatAmount(value: bigint): string {
  return assertU128(value, 'amount').toString();
}

/**
 * Parses an i128 balance: the canonical decimal grammar of {@link parseAmount} with an optional
 * leading `-` (never `-0`, never `+`), or a safe-integer JSON number (not -0).
 */
export function parseBalance(text: unknown, what = 'balance'): bigint {
  if (typeof text === 'number') return fromNumber(text, what, true);
  if (typeof text !== 'string') {
    throw new WrongTypeError('not-string-or-number', `${what} must be a decimal string, got ${describe(text)}`);
  }
  const negative = text.charCodeAt(0) === 45; // '-'
  const digits = negative ? text.slice(1) : text;
  const label = negative ? `${what} (after its '-')` : what;
  if (negative && digits.length === 0) throw new InvalidAmountError('empty', `${what} is a '-' without digits`);
  if (negative && (digits[0] === '-' || digits[0] === '+')) {
    throw new InvalidAmountError('sign', `${what} ${JSON.stringify(text)} has two signs`);
  }
  checkString(digits, label, I128_DIGITS);
  if (negative && digits === '0') throw new InvalidAmountError('negative-zero', `${what} is "-0"; write "0"`);
  const value = negative ? -BigInt(digits) : BigInt(digits);
  if (value < I128_MIN || value > I128_MAX) {
    throw new InvalidAmountError('out-of-range', `${what} ${text} is outside i128`);
  }
  return value;
}

/** The wire form of an i128 balance: decimal digits with a leading `-` when negative. */
export function formatBalance(value: bigint): string {
  return assertI128(value, 'balance').toString();
}

function ensureBigint(value: unknown, what: string): bigint {
  if (typeof value !== 'bigint') {
    throw new WrongTypeError('not-bigint', `${what} must be a bigint, got ${describe(value)}`);
  }
  return value;
}

/** Returns `value` if it is a bigint in 0..U128_MAX; else throws (InvalidAmountError 'out-of-range'). */
export function assertU128(value: bigint, what = 'amount'): bigint {
  ensureBigint(value, what);
  if (value < 0n || value > U128_MAX) {
    throw new InvalidAmountError('out-of-range', `${what} ${value} is outside u128 (0..2^128-1)`);
  }
  return value;
}

/** Returns `value` if it is a bigint in I128_MIN..I128_MAX; else throws (InvalidAmountError 'out-of-range'). */
export function assertI128(value: bigint, what = 'balance'): bigint {
  ensureBigint(value, what);
  if (value < I128_MIN || value > I128_MAX) {
    throw new InvalidAmountError('out-of-range', `${what} ${value} is outside i128 (-2^127..2^127-1)`);
  }
  return value;
}

/**
 * Base units as credits for people: a decimal point only when needed, no trailing zeros.
 *
 * @example formatCredits(15n * 10n ** 17n) // "1.5"
 * @example formatCredits(1n) // "0.000000000000000001"
 * @example formatCredits(-2n * CREDIT) // "-2"
 */
export function formatCredits(value: bigint): string {
  ensureBigint(value, 'amount');
  const sign = value < 0n ? '-' : '';
  const abs = value < 0n ? -value : value;
  const whole = abs / CREDIT;
  const fraction = (abs % CREDIT).toString().padStart(18, '0').replace(/0+$/, '');
  return fraction === '' ? `${sign}${whole}` : `${sign}${whole}.${fraction}`;
}

// Digits before the point in U128_MAX as credits (340282366920938463463): a longer whole part is
// out of range whatever it holds.
const CREDIT_WHOLE_DIGITS = 21;

/**
 * Parses credits as people write them, a decimal with at most 18 fraction digits (`1.5`, `0.25`,
 * `1000`), into base units. No sign, exponent, whitespace, leading zero (`0.5`, not `.5` or `00.5`),
 * or trailing point; within u128. Throws InvalidAmountError with the code of what is wrong
 * (`fraction-digits` for more than 18 places).
 *
 * @example parseCredits('1.5') // 1500000000000000000n
 */
export function parseCredits(text: string, what = 'credits'): bigint {
  // Checked on the whole text, so `-1.5` is named as given rather than as its whole part.
  if (/^[+-]/.test(text)) throw new InvalidAmountError('sign', `${what} ${JSON.stringify(text)} has a sign; write the digits only`);
  const point = text.indexOf('.');
  const whole = point < 0 ? text : text.slice(0, point);
  const fraction = point < 0 ? '' : text.slice(point + 1);
  if (point >= 0) {
    if (whole === '' || fraction === '') {
      throw new InvalidAmountError('fraction', `${what} ${JSON.stringify(text)} needs digits on both sides of its point`);
    }
    if (fraction.length > 18) {
      throw new InvalidAmountError(
        'fraction-digits',
        `${what} ${JSON.stringify(text)} has more than 18 decimal places (the smallest amount is 0.000000000000000001)`,
      );
    }
    const stray = /[^0-9]/.exec(fraction);
    if (stray !== null) {
      throw new InvalidAmountError(
        /[eE]/.test(stray[0]) ? 'exponent' : 'not-decimal',
        `${what} ${JSON.stringify(text)} has ${JSON.stringify(stray[0])} after its point`,
      );
    }
  }
  checkString(whole, what, CREDIT_WHOLE_DIGITS);
  const value = BigInt(whole) * CREDIT + BigInt(fraction.padEnd(18, '0') || '0');
  if (value > U128_MAX) throw new InvalidAmountError('out-of-range', `${what} ${text} is above the largest amount, ${formatCredits(U128_MAX)}`);
  return value;
}
