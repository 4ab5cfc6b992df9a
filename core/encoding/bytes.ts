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
  if (bytes.length === 32) return key32(bytes, 0);
  // A table byte and a 32-byte id: most ledger state keys.
  if (bytes.length === 33) return key32(bytes, 1, bytes[0]);
  return String.fromCharCode.apply(null, bytes as unknown as number[]);
}

/** `bytesKey` of one byte `prefix` followed by `bytes`, without joining them first. */
export function prefixedBytesKey(prefix: number, bytes: Uint8Array): string {
  if (bytes.length === 32) return key32(bytes, 0, prefix);
  return String.fromCharCode(prefix) + bytesKey(bytes);
}

// The 32 bytes of `b` from `at` (after `prefix`, if any), passed as arguments: a flat string at
// less than half the cost of `apply`, which first copies the bytes into an argument list.
// biome-ignore format: 32 arguments read best as one line each way
function key32(b: Uint8Array, at: number, prefix?: number): string {
  if (prefix === undefined) return String.fromCharCode(b[at]!, b[at + 1]!, b[at + 2]!, b[at + 3]!, b[at + 4]!, b[at + 5]!, b[at + 6]!, b[at + 7]!, b[at + 8]!, b[at + 9]!, b[at + 10]!, b[at + 11]!, b[at + 12]!, b[at + 13]!, b[at + 14]!, b[at + 15]!, b[at + 16]!, b[at + 17]!, b[at + 18]!, b[at + 19]!, b[at + 20]!, b[at + 21]!, b[at + 22]!, b[at + 23]!, b[at + 24]!, b[at + 25]!, b[at + 26]!, b[at + 27]!, b[at + 28]!, b[at + 29]!, b[at + 30]!, b[at + 31]!);
  return String.fromCharCode(prefix, b[at]!, b[at + 1]!, b[at + 2]!, b[at + 3]!, b[at + 4]!, b[at + 5]!, b[at + 6]!, b[at + 7]!, b[at + 8]!, b[at + 9]!, b[at + 10]!, b[at + 11]!, b[at + 12]!, b[at + 13]!, b[at + 14]!, b[at + 15]!, b[at + 16]!, b[at + 17]!, b[at + 18]!, b[at + 19]!, b[at + 20]!, b[at + 21]!, b[at + 22]!, b[at + 23]!, b[at + 24]!, b[at + 25]!, b[at + 26]!, b[at + 27]!, b[at + 28]!, b[at + 29]!, b[at + 30]!, b[at + 31]!);
}

/**
 * Hands out views of shared chunks, for many small byte strings that are dropped together (a
 * range's signed messages, checked and let go). V8 allocates a Uint8Array of more than 64 bytes
 * outside its heap, at about a microsecond each; a view of a chunk costs a twentieth of that. A view
 * keeps its whole chunk alive, so nothing long-lived should come from an arena.
 */
export class ByteArena {
  static readonly CHUNK = 64 * 1024;
  #chunk = new Uint8Array(0);
  #used = 0;

  /** `n` zero bytes (a fresh array past a quarter of a chunk, so a chunk wastes little at its end). */
  take(n: number): Uint8Array {
    if (n > ByteArena.CHUNK / 4) return new Uint8Array(n);
    if (this.#used + n > this.#chunk.length) {
      this.#chunk = new Uint8Array(ByteArena.CHUNK);
      this.#used = 0;
    }
    const out = this.#chunk.subarray(this.#used, this.#used + n);
    this.#used += n;
    return out;
  }
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
