import { InvalidHexError, WrongTypeError } from '../errors.ts';
import { describe, ensureBytes } from './bytes.ts';

// A character code's digit value, -1 for anything but 0-9 and a-f (a table: payloads are long).
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) NIBBLE['0123456789abcdef'.charCodeAt(i)] = i;

function nibble(code: number): number {
  return code < 128 ? NIBBLE[code]! : -1;
}

// Hex on the wire is strict lowercase: one spelling per byte string, so ids compare as strings.
const HEX_DIGITS = new TextEncoder().encode('0123456789abcdef');
const ascii = new TextDecoder('latin1');
// Up to this many bytes, character codes passed at once are the faster way; beyond it, one decode of the digits.
const CODES_MAX_BYTES = 64;

/**
 * Lowercase hex of `bytes`, always one flat string. Concatenating two digits at a time would leave
 * a rope of a node per byte: a 32-byte id held as 870 bytes of heap instead of 90 (a simulation of
 * a thousand nodes holds millions of ids), and for a 64 KiB payload megabytes. Short inputs are made
 * from their character codes, long ones written as ASCII digits and decoded at once.
 */
export function toHex(bytes: Uint8Array): string {
  ensureBytes(bytes, 'bytes');
  if (bytes.length <= CODES_MAX_BYTES) {
    const codes = new Array<number>(2 * bytes.length);
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!;
      codes[2 * i] = HEX_DIGITS[b >> 4]!;
      codes[2 * i + 1] = HEX_DIGITS[b & 15]!;
    }
    return String.fromCharCode.apply(null, codes);
  }
  const digits = new Uint8Array(bytes.length * 2);
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    digits[2 * i] = HEX_DIGITS[b >> 4]!;
    digits[2 * i + 1] = HEX_DIGITS[b & 15]!;
  }
  return ascii.decode(digits);
}

/**
 * Decodes strict lowercase hex. With `byteLength`, the result must have exactly that many bytes.
 * Throws InvalidHexError naming the problem (odd length, the first bad character and its
 * position, or the wrong size); never returns a partial value.
 */
export function fromHex(text: string, byteLength?: number, what = 'hex'): Uint8Array {
  if (typeof text !== 'string') {
    throw new WrongTypeError('not-string', `${what} must be a string, got ${describe(text)}`);
  }
  if (byteLength !== undefined && text.length !== byteLength * 2) {
    throw new InvalidHexError('wrong-length', `${what} must be ${byteLength * 2} hex characters, got ${text.length}`);
  }
  if (text.length % 2 !== 0) {
    throw new InvalidHexError('odd-length', `${what} has an odd number of hex characters (${text.length})`);
  }
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) {
    const hi = nibble(text.charCodeAt(2 * i));
    const lo = nibble(text.charCodeAt(2 * i + 1));
    if ((hi | lo) < 0) {
      const at = hi < 0 ? 2 * i : 2 * i + 1;
      const ch = text[at]!;
      const hint = /[A-F]/.test(ch) ? ' (hex must be lowercase)' : '';
      throw new InvalidHexError('bad-character', `${what} has ${JSON.stringify(ch)} at position ${at}, not a lowercase hex digit${hint}`);
    }
    out[i] = (hi << 4) | lo;
  }
  return out;
}

/** Decodes a 32-byte id (NodeId, tx id, block hash, job id): exactly 64 lowercase hex characters. */
export function parseId(text: string, what = 'id'): Uint8Array {
  return fromHex(text, 32, what);
}

/** True when `text` is a well-formed 64-character lowercase hex id. */
export function isId(text: unknown): text is string {
  return typeof text === 'string' && /^[0-9a-f]{64}$/.test(text);
}
