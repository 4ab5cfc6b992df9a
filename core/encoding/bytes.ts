import { WrongTypeError } from '../errors.ts';

/** Returns `value` if it is a Uint8Array, else throws WrongTypeError naming `what`. */
export function ensureBytes(value: unknown, what: string): Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new WrongTypeError('not-bytes', `${what} must be a Uint8Array, got ${describe(value)}`);
  }
  return value;
}

/** Joins byte arrays into one new array. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * The bytes as a string of one UTF-16 code unit per byte: an exact Map key, cheaper to build and to
 * hash than hex.
 */
export function bytesKey(bytes: Uint8Array): string {
  if (bytes.length === 32) return key32(bytes);
  return String.fromCharCode.apply(null, bytes as unknown as number[]);
}

/** `bytesKey` of one byte `prefix` followed by `bytes`, without joining them first. */
export function prefixedBytesKey(prefix: number, bytes: Uint8Array): string {
  if (bytes.length === 32) return key32(bytes, prefix);
  return String.fromCharCode(prefix) + bytesKey(bytes);
}

// 32 bytes (ids, hashes, public keys: most keys) passed as arguments: a flat string at less than
// half the cost of `apply`, which first copies the bytes into an argument list.
function key32(b: Uint8Array, prefix?: number): string {
  if (prefix === undefined) return String.fromCharCode(b[0]!, b[1]!, b[2]!, b[3]!, b[4]!, b[5]!, b[6]!, b[7]!, b[8]!, b[9]!, b[10]!, b[11]!, b[12]!, b[13]!, b[14]!, b[15]!, b[16]!, b[17]!, b[18]!, b[19]!, b[20]!, b[21]!, b[22]!, b[23]!, b[24]!, b[25]!, b[26]!, b[27]!, b[28]!, b[29]!, b[30]!, b[31]!);
  return String.fromCharCode(prefix, b[0]!, b[1]!, b[2]!, b[3]!, b[4]!, b[5]!, b[6]!, b[7]!, b[8]!, b[9]!, b[10]!, b[11]!, b[12]!, b[13]!, b[14]!, b[15]!, b[16]!, b[17]!, b[18]!, b[19]!, b[20]!, b[21]!, b[22]!, b[23]!, b[24]!, b[25]!, b[26]!, b[27]!, b[28]!, b[29]!, b[30]!, b[31]!);
}

/** Byte-wise equality (not constant time: for public data only). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Lexicographic order of byte strings: negative, zero or positive like a sort comparator. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/** A short description of a value's type for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'an object';
  return typeof value;
}
