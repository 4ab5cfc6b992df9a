/**
 * The records of a loaded directory, kept as their JSON bytes in a few large buffers rather than
 * as a million small objects: the JavaScript heap holds almost nothing per record, so the garbage
 * collector, which walks every live object on each full collection, no longer walks fifteen
 * million of them while requests wait (that walk set the 99th percentile under load). The HTTP
 * answers are assembled from these bytes as they are (http/reads.ts); a record is parsed back
 * only where an object is needed (the MCP tools, an exact-name check).
 */
import type { FactoryRecord } from './record.ts';

// Copied records are packed into buffers of up to this size; a record never spans two.
const CHUNK_BYTES = 16 << 20;
// Bytes in a buffer of at least this size are kept in it rather than copied.
const KEEP_FROM = 256 << 10;
// `{"id":"` opens every stored record (the store is given canonical JSON): the id follows.
const ID_PREFIX = '{"id":"';
const ID_PREFIX_BYTES = new TextEncoder().encode(ID_PREFIX);

function startsWithIdPrefix(json: Uint8Array): boolean {
  if (json.length < ID_PREFIX_BYTES.length) return false;
  for (let i = 0; i < ID_PREFIX_BYTES.length; i++) if (json[i] !== ID_PREFIX_BYTES[i]) return false;
  return true;
}

function grow<T extends Int32Array | Uint16Array>(array: T, make: (length: number) => T): T {
  const grown = make(array.length * 2);
  grown.set(array);
  return grown;
}

export class RecordStore {
  /** Every buffer records live in: packs of copied records, and buffers kept as they were given. */
  private readonly chunks: Uint8Array[] = [];
  /** The pack being filled, its index in `chunks` (-1: none yet) and the bytes it holds. */
  private pack = new Uint8Array(0);
  private packIndex = -1;
  private used = 0;
  /** The buffer records were last kept in, and its index in `chunks`. */
  private kept: ArrayBufferLike | undefined;
  private keptIndex = -1;
  private chunkOf = new Uint16Array(1024);
  private start = new Int32Array(1024);
  private length = new Int32Array(1024);
  private count = 0;
  private readonly decoder = new TextDecoder();

  /** Records stored. */
  get size(): number {
    return this.count;
  }

  /**
   * Stores a record's JSON bytes, which must begin `{"id":"…"` (canonical member order) and must
   * never change afterwards; returns its position. Bytes that are a view into a large buffer (a
   * chunk of the dataset file as read) are kept where they are: copying 650 MB costs seconds here,
   * mostly in first touches of new memory. Others are copied into packs.
   */
  append(json: Uint8Array): number {
    if (!startsWithIdPrefix(json)) throw new RangeError('a stored record must begin with its id');
    if (this.count === this.start.length) {
      this.chunkOf = grow(this.chunkOf, (n) => new Uint16Array(n));
      this.start = grow(this.start, (n) => new Int32Array(n));
      this.length = grow(this.length, (n) => new Int32Array(n));
    }
    let chunk: number;
    let at: number;
    if (json.buffer.byteLength >= KEEP_FROM) {
      if (json.buffer !== this.kept) {
        this.kept = json.buffer;
        this.keptIndex = this.addChunk(new Uint8Array(json.buffer));
      }
      chunk = this.keptIndex;
      at = json.byteOffset;
    } else {
      if (this.packIndex < 0 || this.used + json.length > this.pack.length) {
        // Full: keep this pack as it stands and start another, twice as large (up to a bound).
        this.pack = new Uint8Array(Math.max(Math.min(CHUNK_BYTES, Math.max(64 << 10, this.pack.length * 2)), json.length));
        this.used = 0;
        this.packIndex = this.addChunk(this.pack);
      }
      this.pack.set(json, this.used);
      chunk = this.packIndex;
      at = this.used;
      this.used += json.length;
    }
    const i = this.count++;
    this.chunkOf[i] = chunk;
    this.start[i] = at;
    this.length[i] = json.length;
    return i;
  }

  private addChunk(chunk: Uint8Array): number {
    // Chunks are numbered in a Uint16Array: 65,535 of them, at least 64 KiB each.
    if (this.chunks.length === 0xffff) throw new RangeError('too many buffers for one record store');
    return this.chunks.push(chunk) - 1;
  }

  /** Ends appending: the last pack is copied down to what it holds. */
  seal(): void {
    if (this.packIndex >= 0) this.chunks[this.packIndex] = this.pack.slice(0, this.used);
    this.pack = new Uint8Array(0);
    this.packIndex = -1;
    this.kept = undefined;
  }

  /** Reorders the records: the one at position `order[k]` moves to position k. */
  permute(order: Int32Array): void {
    const chunkOf = new Uint16Array(this.count);
    const start = new Int32Array(this.count);
    const length = new Int32Array(this.count);
    for (let k = 0; k < this.count; k++) {
      const from = order[k]!;
      chunkOf[k] = this.chunkOf[from]!;
      start[k] = this.start[from]!;
      length[k] = this.length[from]!;
    }
    this.chunkOf = chunkOf;
    this.start = start;
    this.length = length;
  }

  /** The record at position `i`, as its stored JSON bytes: a view into the store, not to be changed. */
  bytes(i: number): Uint8Array {
    const at = this.start[i]!;
    return this.chunks[this.chunkOf[i]!]!.subarray(at, at + this.length[i]!);
  }

  /** The record at position `i`, as JSON. */
  json(i: number): string {
    return this.decoder.decode(this.bytes(i));
  }

  /** The record at position `i`: a new object each call. */
  get(i: number): FactoryRecord {
    return JSON.parse(this.json(i)) as FactoryRecord;
  }

  /** The id of the record at position `i`, read without parsing the record. */
  id(i: number): string {
    const bytes = this.bytes(i);
    const end = bytes.indexOf(0x22, ID_PREFIX.length);
    // Ids are ASCII: one byte, one character.
    return String.fromCharCode(...bytes.subarray(ID_PREFIX.length, end));
  }
}
