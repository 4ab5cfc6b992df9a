/**
 * The canonical binary encoding of everything that is hashed or signed.
 *
 * A schema is a value: small codecs (`u32`, `bytes32`, `utf8(64)`) compose into `struct`s,
 * `array`s, `option`s and tagged `variant`s, and `Infer<typeof codec>` gives the value type.
 * Every value has exactly one encoding and `decode` accepts only such encodings: integers are
 * fixed-width big-endian (so encoded heights sort numerically as store keys), lengths and counts
 * are u32 prefixes bounded by the schema, tags and booleans accept only their defined bytes,
 * and set entries must be strictly ascending.
 *
 * @example
 * const transfer = struct({ to: bytes32, amount: u128, nonce: uint53 }, 'transfer');
 * type Transfer = Infer<typeof transfer>; // { to: Uint8Array; amount: bigint; nonce: number }
 * const bytes = encode(transfer, { to, amount: 5n, nonce: 1 });
 * decode(transfer, bytes); // deep-equals the input
 */
import { type ENCODING_CODES, InvalidEncodingError, MeshError, type TYPE_CODES, WrongTypeError } from '../errors.ts';
import { I128_MAX, I128_MIN, U128_MAX } from './amount.ts';
import { compareBytes, describe, ensureBytes } from './bytes.ts';

/** Writes and reads one kind of value. `minBytes` is the least any encoding of it takes. */
export interface Codec<T> {
  readonly name: string;
  /** The fewest bytes an encoding takes; lets `array` refuse impossible counts up front. */
  readonly minBytes?: number;
  write(w: Writer, value: T): void;
  read(r: Reader): T;
}

/** The value type of a codec. */
export type Infer<C> = C extends Codec<infer T> ? T : never;

// ---------------------------------------------------------------------------------------------
// Errors carry the field path where they happened. Codecs throw with a detail; each composite
// that a failure passes through prepends its segment (`.field`, `[3]`), and encode/decode put the
// root codec's name in front, so the final message reads `transfer.amount: ...`.

const PATHS = new WeakMap<MeshError, { path: string; detail: string }>();

function invalid(code: (typeof ENCODING_CODES)[number], detail: string): InvalidEncodingError {
  return new InvalidEncodingError(code, detail);
}

function wrongType(code: (typeof TYPE_CODES)[number], detail: string): WrongTypeError {
  return new WrongTypeError(code, detail);
}

function withSegment(error: unknown, segment: string): unknown {
  if (error instanceof MeshError) {
    const known = PATHS.get(error);
    if (known) known.path = segment + known.path;
    else PATHS.set(error, { path: segment, detail: error.message });
  }
  return error;
}

function withRoot(error: unknown, root: string): unknown {
  if (!(error instanceof MeshError)) return error;
  const where = PATHS.get(error) ?? { path: '', detail: error.message };
  const Class = error.constructor as new (code: string, message: string) => MeshError;
  return new Class(error.code, `${root}${where.path}: ${where.detail}`);
}

// ---------------------------------------------------------------------------------------------

/** An append-only byte buffer that grows as needed. Raw writes: codecs check values first. */
export class Writer {
  #bytes: Uint8Array;
  #view: DataView;
  #pos = 0;

  constructor(initialCapacity = 256) {
    this.#bytes = new Uint8Array(Math.max(16, initialCapacity));
    this.#view = new DataView(this.#bytes.buffer);
  }

  /** Bytes written so far. */
  get length(): number {
    return this.#pos;
  }

  /** Bytes the buffer holds before it must grow. */
  get capacity(): number {
    return this.#bytes.length;
  }

  /** Forgets what was written, keeping the buffer for the next value. */
  reset(): void {
    this.#pos = 0;
  }

  // Claims n bytes and returns their offset. It may replace the buffer, so callers must call it
  // before reading #bytes or #view.
  #reserve(n: number): number {
    const at = this.#pos;
    const need = at + n;
    if (need > this.#bytes.length) {
      const grown = new Uint8Array(Math.max(need, this.#bytes.length * 2));
      grown.set(this.#bytes.subarray(0, at));
      this.#bytes = grown;
      this.#view = new DataView(grown.buffer);
    }
    this.#pos = need;
    return at;
  }

  u8(value: number): void {
    const at = this.#reserve(1);
    this.#view.setUint8(at, value);
  }

  u16(value: number): void {
    const at = this.#reserve(2);
    this.#view.setUint16(at, value);
  }

  u32(value: number): void {
    const at = this.#reserve(4);
    this.#view.setUint32(at, value);
  }

  u64(value: bigint): void {
    const at = this.#reserve(8);
    this.#view.setBigUint64(at, value);
  }

  f64(value: number): void {
    const at = this.#reserve(8);
    this.#view.setFloat64(at, value);
  }

  bytes(value: Uint8Array): void {
    const at = this.#reserve(value.length);
    this.#bytes.set(value, at);
  }

  /** A view of bytes already written (valid until the next write). */
  view(start: number, end: number): Uint8Array {
    return this.#bytes.subarray(start, end);
  }

  /** A copy of everything written. */
  finish(): Uint8Array {
    return this.#bytes.slice(0, this.#pos);
  }
}

/** Reads from a byte string front to back; every read checks that the bytes are there. */
export class Reader {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  #pos = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = ensureBytes(bytes, 'bytes');
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Position of the next byte to read. */
  get offset(): number {
    return this.#pos;
  }

  /** Bytes left to read. */
  get remaining(): number {
    return this.#bytes.length - this.#pos;
  }

  /** Claims `n` bytes and returns their offset, or throws 'truncated' naming `what`. */
  take(n: number, what: string): number {
    const at = this.#pos;
    if (n > this.#bytes.length - at) {
      throw invalid('truncated', `${what} needs ${n} bytes at offset ${at} but only ${this.#bytes.length - at} remain`);
    }
    this.#pos = at + n;
    return at;
  }

  u8(what = 'u8'): number {
    return this.#view.getUint8(this.take(1, what));
  }

  u16(what = 'u16'): number {
    return this.#view.getUint16(this.take(2, what));
  }

  u32(what = 'u32'): number {
    return this.#view.getUint32(this.take(4, what));
  }

  u64(what = 'u64'): bigint {
    return this.#view.getBigUint64(this.take(8, what));
  }

  f64(what = 'f64'): number {
    return this.#view.getFloat64(this.take(8, what));
  }

  /** A copy of the next `n` bytes, so decoded values never alias the input. */
  bytes(n: number, what = 'bytes'): Uint8Array {
    const at = this.take(n, what);
    return this.#bytes.slice(at, at + n);
  }

  /** A view of input bytes (no copy). */
  view(start: number, end: number): Uint8Array {
    return this.#bytes.subarray(start, end);
  }
}

// One writer reused by `encode`: allocating a buffer per call cost more than writing most values
// (the ledger encodes several per transaction). Taken while in use, so an `encode` nested inside a
// codec's write gets a fresh writer; kept only while small, so one large value does not pin memory.
let spareWriter: Writer | null = null;
const SPARE_WRITER_MAX = 64 * 1024;

/** The canonical encoding of `value`. Throws InvalidEncodingError or WrongTypeError naming the field. */
export function encode<T>(codec: Codec<T>, value: T): Uint8Array {
  return encodeAfterPrefix(codec, value, false);
}

/**
 * The canonical encoding of `value` as one frame of a byte stream (core/net/frames.ts): its length
 * as a u32 big-endian, then the encoding, written in place rather than copied behind the length.
 * Throws as `encode`.
 */
export function encodeFrame<T>(codec: Codec<T>, value: T): Uint8Array {
  return encodeAfterPrefix(codec, value, true);
}

function encodeAfterPrefix<T>(codec: Codec<T>, value: T, framed: boolean): Uint8Array {
  const w = spareWriter ?? new Writer();
  spareWriter = null;
  try {
    if (framed) w.u32(0);
    codec.write(w, value);
    const out = w.finish();
    if (framed) new DataView(out.buffer, out.byteOffset).setUint32(0, out.length - 4);
    return out;
  } catch (error) {
    throw withRoot(error, codec.name);
  } finally {
    w.reset();
    if (w.capacity <= SPARE_WRITER_MAX) spareWriter = w;
  }
}

/**
 * Decodes exactly one value spanning all of `bytes`. Throws InvalidEncodingError (with the field
 * path and byte offset) for anything that is not the canonical encoding of a value, including
 * trailing bytes; never returns a partial value.
 */
export function decode<T>(codec: Codec<T>, bytes: Uint8Array): T {
  const r = new Reader(bytes);
  let value: T;
  try {
    value = codec.read(r);
  } catch (error) {
    throw withRoot(error, codec.name);
  }
  if (r.remaining !== 0) {
    throw invalid('trailing-bytes', `${codec.name}: ${r.remaining} trailing bytes after the value, at offset ${r.offset}`);
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// Integers

function checkNumber(value: unknown, name: string, max: number): number {
  if (typeof value !== 'number') throw wrongType('not-number', `${name} must be a number, got ${describe(value)}`);
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw invalid('out-of-range', `${name} value ${value} is not an integer in 0..${max}`);
  }
  return value;
}

function checkBigint(value: unknown, name: string, min: bigint, max: bigint): bigint {
  if (typeof value !== 'bigint') throw wrongType('not-bigint', `${name} must be a bigint, got ${describe(value)}`);
  if (value < min || value > max) {
    throw invalid('out-of-range', `${name} value ${value} is outside ${min}..${max}`);
  }
  return value;
}

function unsigned(name: 'u8' | 'u16' | 'u32', bytes: number, max: number): Codec<number> {
  return {
    name,
    minBytes: bytes,
    write(w, value) {
      w[name](checkNumber(value, name, max));
    },
    read(r) {
      return r[name](name);
    },
  };
}

/** One byte, 0..255. */
export const u8: Codec<number> = unsigned('u8', 1, 0xff);

/** Two bytes big-endian, 0..65535. */
export const u16: Codec<number> = unsigned('u16', 2, 0xffff);

/** Four bytes big-endian, 0..2^32-1. */
export const u32: Codec<number> = unsigned('u32', 4, 0xffffffff);

const TWO_32 = 0x1_0000_0000;

/**
 * A safe integer as a JS number (height, timestamp, nonce): eight bytes big-endian, like `u64`,
 * but decoding rejects values above Number.MAX_SAFE_INTEGER so no value is rounded.
 */
export const uint53: Codec<number> = {
  name: 'uint53',
  minBytes: 8,
  write(w, value) {
    const v = checkNumber(value, 'uint53', Number.MAX_SAFE_INTEGER);
    w.u32(Math.floor(v / TWO_32));
    w.u32(v % TWO_32);
  },
  read(r) {
    const at = r.offset;
    const hi = r.u32('uint53');
    const lo = r.u32('uint53');
    if (hi > 0x1f_ffff) {
      throw invalid('out-of-range', `uint53 at offset ${at} is above Number.MAX_SAFE_INTEGER`);
    }
    return hi * TWO_32 + lo;
  },
};

const U64_MAX = (1n << 64n) - 1n;

/** Eight bytes big-endian, a bigint in 0..2^64-1. */
export const u64: Codec<bigint> = {
  name: 'u64',
  minBytes: 8,
  write(w, value) {
    w.u64(checkBigint(value, 'u64', 0n, U64_MAX));
  },
  read(r) {
    return r.u64('u64');
  },
};

// Amounts mostly fit in 64 bits: those skip the bigint shift and mask (each a new bigint), which
// cost as much as the rest of an account's encoding.
function writeU128(w: Writer, v: bigint): void {
  if (v <= U64_MAX) {
    w.u64(0n);
    w.u64(v);
    return;
  }
  w.u64(v >> 64n);
  w.u64(v & U64_MAX);
}

function readU128(r: Reader, what: string): bigint {
  const hi = r.u64(what);
  const lo = r.u64(what);
  return hi === 0n ? lo : (hi << 64n) | lo;
}

/** Sixteen bytes big-endian, a bigint in 0..2^128-1 (credit amounts). */
export const u128: Codec<bigint> = {
  name: 'u128',
  minBytes: 16,
  write(w, value) {
    writeU128(w, checkBigint(value, 'u128', 0n, U128_MAX));
  },
  read(r) {
    return readU128(r, 'u128');
  },
};

/** Sixteen bytes, two's complement big-endian, a bigint in -2^127..2^127-1 (balances). */
export const i128: Codec<bigint> = {
  name: 'i128',
  minBytes: 16,
  write(w, value) {
    const v = checkBigint(value, 'i128', I128_MIN, I128_MAX);
    writeU128(w, v >= 0n ? v : BigInt.asUintN(128, v));
  },
  read(r) {
    const v = readU128(r, 'i128');
    // Below 2^127 the two's complement reading is the value itself.
    return v <= I128_MAX ? v : BigInt.asIntN(128, v);
  },
};

/**
 * A finite IEEE 754 binary64, eight bytes big-endian (network coordinates). NaN and ±Infinity are
 * refused both ways. -0 is written as 0 and its own bytes are refused when decoding, so every
 * value has one encoding (arithmetic yields -0 readily: 0 × -1).
 */
export const f64: Codec<number> = {
  name: 'f64',
  minBytes: 8,
  write(w, value) {
    if (typeof value !== 'number') throw wrongType('not-number', `f64 must be a number, got ${describe(value)}`);
    if (!Number.isFinite(value)) throw invalid('not-finite', `f64 value ${value} is not a finite number`);
    w.f64(value === 0 ? 0 : value);
  },
  read(r) {
    const at = r.offset;
    const value = r.f64('f64');
    if (!Number.isFinite(value)) throw invalid('not-finite', `f64 at offset ${at} is ${value}, not a finite number`);
    if (Object.is(value, -0)) throw invalid('negative-zero', `f64 at offset ${at} is -0, whose one encoding is that of 0`);
    return value;
  },
};

/** One byte: 0 for false, 1 for true; any other byte is rejected. */
export const bool: Codec<boolean> = {
  name: 'bool',
  minBytes: 1,
  write(w, value) {
    if (typeof value !== 'boolean') throw wrongType('not-boolean', `bool must be a boolean, got ${describe(value)}`);
    w.u8(value ? 1 : 0);
  },
  read(r) {
    const at = r.offset;
    const b = r.u8('bool');
    if (b > 1) throw invalid('bad-bool', `bool at offset ${at} is ${b}, not 0 or 1`);
    return b === 1;
  },
};

// ---------------------------------------------------------------------------------------------
// Bytes and text

function checkBytes(value: unknown, name: string): Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw wrongType('not-bytes', `${name} must be a Uint8Array, got ${describe(value)}`);
  }
  return value;
}

function checkMax(max: number, what: string): void {
  if (!Number.isInteger(max) || max < 0 || max > 0xffffffff) {
    throw new MeshError('bad-schema', `${what} must be an integer in 0..2^32-1, got ${max}`);
  }
}

/** Exactly `n` raw bytes, no prefix. */
export function fixedBytes(n: number): Codec<Uint8Array> {
  checkMax(n, 'fixedBytes length');
  const name = `bytes${n}`;
  return {
    name,
    minBytes: n,
    write(w, value) {
      const b = checkBytes(value, name);
      if (b.length !== n) throw invalid('wrong-length', `${name} needs ${n} bytes, got ${b.length}`);
      w.bytes(b);
    },
    read(r) {
      return r.bytes(n, name);
    },
  };
}

/** 32 raw bytes: hashes, ids, Ed25519 public keys. */
export const bytes32: Codec<Uint8Array> = fixedBytes(32);

/** 64 raw bytes: Ed25519 signatures. */
export const bytes64: Codec<Uint8Array> = fixedBytes(64);

// Reads a u32 length or count, refusing it before anything is allocated if it exceeds the
// schema's bound or could not fit in what is left of the input.
function readLength(r: Reader, name: string, max: number, unit: number): number {
  const at = r.offset;
  const n = r.u32(`${name} length`);
  if (n > max) throw invalid('too-long', `${name} at offset ${at} declares ${n}, more than the limit of ${max}`);
  if (unit > 0 && n * unit > r.remaining) {
    throw invalid('truncated', `${name} at offset ${at} declares ${n} (at least ${n * unit} bytes) but only ${r.remaining} bytes remain`);
  }
  return n;
}

/** Up to `maxLength` bytes, with a u32 length prefix. */
export function varBytes(maxLength: number): Codec<Uint8Array> {
  checkMax(maxLength, 'varBytes maxLength');
  const name = `varBytes(${maxLength})`;
  return {
    name,
    minBytes: 4,
    write(w, value) {
      const b = checkBytes(value, name);
      if (b.length > maxLength) throw invalid('too-long', `${name} got ${b.length} bytes, more than ${maxLength}`);
      w.u32(b.length);
      w.bytes(b);
    },
    read(r) {
      const n = readLength(r, name, maxLength, 1);
      return r.bytes(n, name);
    },
  };
}

const encoder = new TextEncoder();
// fatal: malformed UTF-8 (overlongs, surrogates, truncated sequences) throws instead of becoming
// U+FFFD. ignoreBOM: a leading U+FEFF is kept as text; stripping it would let two byte strings
// decode to the same string.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

interface WellFormed {
  isWellFormed(): boolean;
}

/** A string of at most `maxBytes` UTF-8 bytes, with a u32 byte-length prefix. */
export function utf8(maxBytes: number): Codec<string> {
  checkMax(maxBytes, 'utf8 maxBytes');
  const name = `utf8(${maxBytes})`;
  return {
    name,
    minBytes: 4,
    write(w, value) {
      if (typeof value !== 'string') throw wrongType('not-string', `${name} must be a string, got ${describe(value)}`);
      // A lone surrogate has no UTF-8 form: TextEncoder would silently write U+FFFD instead.
      if (!(value as unknown as WellFormed).isWellFormed()) {
        throw invalid('bad-utf8', `${name} holds a lone surrogate, which has no UTF-8 encoding`);
      }
      const b = encoder.encode(value);
      if (b.length > maxBytes) throw invalid('too-long', `${name} is ${b.length} UTF-8 bytes, more than ${maxBytes}`);
      w.u32(b.length);
      w.bytes(b);
    },
    read(r) {
      const n = readLength(r, name, maxBytes, 1);
      const at = r.take(n, name);
      try {
        return decoder.decode(r.view(at, at + n));
      } catch {
        throw invalid('bad-utf8', `${name} at offset ${at} is not valid UTF-8`);
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Composites

// Codecs whose values include null. option(option(x)) would give the inner null two encodings
// (0, and 1 0) of which decoding returns the same value, so such nesting is refused.
const NULLABLE = new WeakSet<Codec<unknown>>();

/**
 * `null`, or a value: tag byte 0 for null, 1 followed by the value; other tags are rejected.
 * The inner codec must not itself accept null (no `option(option(x))`).
 */
export function option<T>(codec: Codec<T>): Codec<T | null> {
  if (NULLABLE.has(codec)) {
    throw new MeshError('bad-schema', `option<${codec.name}> would give null two encodings`);
  }
  const result: Codec<T | null> = {
    name: `option<${codec.name}>`,
    minBytes: 1,
    write(w, value) {
      if (value === null) {
        w.u8(0);
        return;
      }
      w.u8(1);
      codec.write(w, value);
    },
    read(r) {
      const at = r.offset;
      const tag = r.u8(`option<${codec.name}> tag`);
      if (tag === 0) return null;
      if (tag !== 1) throw invalid('bad-option-tag', `option tag at offset ${at} is ${tag}, not 0 or 1`);
      return codec.read(r);
    },
  };
  NULLABLE.add(result);
  return result;
}

function writeCount<T>(w: Writer, name: string, value: unknown, maxLength: number): T[] {
  if (!Array.isArray(value)) throw wrongType('not-array', `${name} must be an array, got ${describe(value)}`);
  if (value.length > maxLength) throw invalid('too-long', `${name} has ${value.length} entries, more than ${maxLength}`);
  w.u32(value.length);
  return value as T[];
}

/** Up to `maxLength` values, with a u32 count prefix. */
export function array<T>(codec: Codec<T>, maxLength: number): Codec<T[]> {
  checkMax(maxLength, 'array maxLength');
  const name = `array<${codec.name}>`;
  const unit = codec.minBytes ?? 0;
  return {
    name,
    minBytes: 4,
    write(w, value) {
      const items = writeCount<T>(w, name, value, maxLength);
      let i = 0;
      try {
        for (; i < items.length; i++) codec.write(w, items[i]!);
      } catch (error) {
        throw withSegment(error, `[${i}]`);
      }
    },
    read(r) {
      const n = readLength(r, name, maxLength, unit);
      const out: T[] = [];
      let i = 0;
      try {
        for (; i < n; i++) out.push(codec.read(r));
      } catch (error) {
        throw withSegment(error, `[${i}]`);
      }
      return out;
    },
  };
}

/**
 * A set as an array in strictly ascending order of the entries' encodings, with a u32 count
 * prefix. Out-of-order or duplicate entries are rejected when encoding as well as decoding, so
 * the one canonical order is the caller's to produce (sort by `compareBytes` of `encode`).
 */
export function sortedSet<T>(codec: Codec<T>, maxLength: number): Codec<T[]> {
  checkMax(maxLength, 'sortedSet maxLength');
  const name = `sortedSet<${codec.name}>`;
  const unit = codec.minBytes ?? 0;
  const order = (prev: Uint8Array, next: Uint8Array, i: number, where: string): void => {
    const c = compareBytes(prev, next);
    if (c >= 0) {
      throw invalid(
        'not-sorted',
        c === 0
          ? `${name} entry ${i} duplicates entry ${i - 1}${where}`
          : `${name} entry ${i} sorts before entry ${i - 1}${where}; entries must ascend by their encoding`,
      );
    }
  };
  return {
    name,
    minBytes: 4,
    write(w, value) {
      const items = writeCount<T>(w, name, value, maxLength);
      let prevStart = 0;
      let prevEnd = 0;
      let i = 0;
      try {
        for (; i < items.length; i++) {
          const start = w.length;
          codec.write(w, items[i]!);
          const end = w.length;
          if (i > 0) order(w.view(prevStart, prevEnd), w.view(start, end), i, '');
          prevStart = start;
          prevEnd = end;
        }
      } catch (error) {
        throw withSegment(error, `[${i}]`);
      }
    },
    read(r) {
      const n = readLength(r, name, maxLength, unit);
      const out: T[] = [];
      let prevStart = 0;
      let prevEnd = 0;
      let i = 0;
      try {
        for (; i < n; i++) {
          const start = r.offset;
          out.push(codec.read(r));
          const end = r.offset;
          if (i > 0) order(r.view(prevStart, prevEnd), r.view(start, end), i, ` at offset ${start}`);
          prevStart = start;
          prevEnd = end;
        }
      } catch (error) {
        throw withSegment(error, `[${i}]`);
      }
      return out;
    },
  };
}

type Fields = Record<string, Codec<unknown>>;
type Simplify<T> = { [K in keyof T]: T[K] };

/** A struct codec also exposes its fields, so schemas can be extended and variants built from it. */
export interface StructCodec<T extends object> extends Codec<T> {
  readonly fields: Readonly<Fields>;
}

// Field names are identifiers: JS orders integer-like keys before others whatever the
// declaration order, and `__proto__` cannot be assigned as a plain property.
const FIELD_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

interface Layout {
  readonly keys: readonly string[];
  readonly codecs: readonly Codec<unknown>[];
}

function layout(fields: Fields, what: string): Layout {
  const keys = Object.keys(fields);
  for (const key of keys) {
    if (!FIELD_NAME.test(key) || key === '__proto__') {
      throw new MeshError('bad-schema', `${what} field name ${JSON.stringify(key)} is not an identifier`);
    }
  }
  return { keys, codecs: keys.map((k) => fields[k]!) };
}

function sumMin(codecs: readonly Codec<unknown>[]): number {
  let n = 0;
  for (const c of codecs) n += c.minBytes ?? 0;
  return n;
}

// Writes the fields of `value` in declaration order. Every declared field must be present (an
// option field holds null, not undefined) and no other own field may be (bar the variant's tag),
// so nothing a caller believes is signed can be silently left out of the encoding.
function writeFields(w: Writer, name: string, { keys, codecs }: Layout, value: unknown, tagField: string | null): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw wrongType('not-object', `${name} must be an object, got ${describe(value)}`);
  }
  const record = value as Record<string, unknown>;
  let i = 0;
  try {
    for (; i < keys.length; i++) {
      const v = record[keys[i]!];
      if (v === undefined) throw invalid('missing-field', `field is missing`);
      codecs[i]!.write(w, v);
    }
  } catch (error) {
    throw withSegment(error, `.${keys[i]}`);
  }
  const own = Object.keys(record);
  if (own.length !== keys.length + (tagField === null ? 0 : 1)) {
    const extra = own.find((k) => k !== tagField && !keys.includes(k));
    throw invalid('unknown-field', `field ${JSON.stringify(extra)} is not in the schema`);
  }
}

function readFields(r: Reader, { keys, codecs }: Layout, out: Record<string, unknown>): void {
  let i = 0;
  try {
    for (; i < keys.length; i++) out[keys[i]!] = codecs[i]!.read(r);
  } catch (error) {
    throw withSegment(error, `.${keys[i]}`);
  }
}

/**
 * Named fields encoded one after another in declaration order, no tags or lengths.
 *
 * @example const point = struct({ x: u32, y: u32 }, 'point'); // Codec<{ x: number; y: number }>
 */
export function struct<const F extends Fields>(fields: F, name = 'struct'): StructCodec<Simplify<{ -readonly [K in keyof F]: Infer<F[K]> }>> {
  const l = layout(fields, name);
  return {
    name,
    fields,
    minBytes: sumMin(l.codecs),
    write(w, value) {
      writeFields(w, name, l, value, null);
    },
    read(r) {
      const out: Record<string, unknown> = {};
      readFields(r, l, out);
      return out as never;
    },
  };
}

type Cases = Record<string, readonly [number, StructCodec<object>]>;

/** The value type of a variant: each case's fields plus `[tagField]: 'CaseName'`. */
export type VariantValue<K extends string, C extends Cases> = {
  [N in keyof C & string]: Simplify<{ [P in K]: N } & Infer<C[N][1]>>;
}[keyof C & string];

/**
 * A tagged union: one tag byte, then the fields of that case's struct. The value is a flat object
 * with `[tagField]` set to the case name; unknown tags are rejected both ways.
 *
 * @example
 * const tx = variant('type', {
 *   Transfer: [0, struct({ to: bytes32, amount: u128 })],
 *   Bond: [1, struct({ amount: u128 })],
 * }, 'tx');
 * encode(tx, { type: 'Bond', amount: 10n });
 */
export function variant<const K extends string, const C extends Cases>(tagField: K, cases: C, name = 'variant'): Codec<VariantValue<K, C>> {
  interface Case {
    readonly name: string;
    readonly tag: number;
    readonly layout: Layout;
  }
  const byTag: (Case | undefined)[] = new Array<Case | undefined>(256).fill(undefined);
  const byName = new Map<string, Case>();
  let minBytes = Infinity;
  for (const caseName of Object.keys(cases)) {
    const [tag, codec] = cases[caseName]!;
    if (!Number.isInteger(tag) || tag < 0 || tag > 255 || byTag[tag] !== undefined) {
      throw new MeshError('bad-schema', `${name} case ${caseName} has tag ${tag}: tags must be distinct bytes`);
    }
    const l = layout(codec.fields, `${name}.${caseName}`);
    if (l.keys.includes(tagField)) {
      throw new MeshError('bad-schema', `${name} case ${caseName} has a field named like the tag ${tagField}`);
    }
    const entry: Case = { name: caseName, tag, layout: l };
    byTag[tag] = entry;
    byName.set(caseName, entry);
    minBytes = Math.min(minBytes, 1 + sumMin(l.codecs));
  }
  return {
    name,
    minBytes: Number.isFinite(minBytes) ? minBytes : 1,
    write(w, value) {
      if (typeof value !== 'object' || value === null) {
        throw wrongType('not-object', `${name} must be an object, got ${describe(value)}`);
      }
      const tagValue = (value as Record<string, unknown>)[tagField];
      const entry = typeof tagValue === 'string' ? byName.get(tagValue) : undefined;
      if (entry === undefined) {
        throw invalid('bad-variant-tag', `${name}.${tagField} is ${JSON.stringify(tagValue) ?? 'undefined'}, not one of ${[...byName.keys()].join(', ')}`);
      }
      w.u8(entry.tag);
      try {
        writeFields(w, `${name} ${entry.name}`, entry.layout, value, tagField);
      } catch (error) {
        throw withSegment(error, `.${entry.name}`);
      }
    },
    read(r) {
      const at = r.offset;
      const tag = r.u8(`${name} tag`);
      const entry = byTag[tag];
      if (entry === undefined) throw invalid('bad-variant-tag', `${name} tag at offset ${at} is ${tag}, which names no case`);
      const out: Record<string, unknown> = { [tagField]: entry.name };
      try {
        readFields(r, entry.layout, out);
      } catch (error) {
        throw withSegment(error, `.${entry.name}`);
      }
      return out as never;
    },
  };
}
