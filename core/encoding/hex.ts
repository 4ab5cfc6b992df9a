import { InvalidHexError, WrongTypeError } from '../errors.ts';
import { describe, ensureBytes } from './bytes.ts';

// Hex on the wire is strict lowercase: one spelling per byte string, so ids compare as strings.
const BYTE_TO_HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

// A character code's digit value, -1 for anything but 0-9 and a-f (a table: payloads are long).
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) NIBBLE['0123456789abcdef'.charCodeAt(i)] = i;

function nibble(code: number): number {
  return code < 128 ? NIBBLE[code]! : -1;
}

const HEX_DIGITS = new TextEncoder().encode('0123456789abcdef');
const ascii = new TextDecoder('latin1');
// Up to this many bytes, concatenation is the faster way; beyond it, one decode of the digits.
const CONCAT_MAX_BYTES = 64;

/**
 * Lowercase hex of `bytes`. Long inputs are written as ASCII digits and decoded at once: the
 * result is one flat string, where concatenation would leave a rope of a node per byte (for a
 * 64 KiB payload, megabytes held for as long as the string is).
 */
export function toHex(bytes: Uint8Array): string {
  ensureBytes(bytes, 'bytes');
  if (bytes.length <= CONCAT_MAX_BYTES) {
    let out = '';
    for (let i = 0; i < bytes.length; i++) out += BYTE_TO_HEX[bytes[i]!];
    return out;
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
