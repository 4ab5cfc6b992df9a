/**
 * The records of a loaded directory, kept as their JSON bytes in a compact encoding rather than as
 * a million small objects or as the raw text: the JavaScript heap holds almost nothing per record,
 * so the garbage collector never walks fifteen million objects while requests wait, and a million
 * records fit in about a quarter of their text (the text alone, 650 MB, is more than a Deno Deploy
 * isolate's 512 MB).
 *
 * The encoding: a record's JSON is cut into the contents of its string values and the text
 * between them (punctuation and member names, `","country":"`). Pieces that repeat across records
 * (member names, countries, dates, cities, evidence, licences, the start of a source URL) are kept
 * once in a table of tokens, and a record is a list of token numbers; pieces that are the record's
 * own (its name, street address, the end of its id and URL, the latter written as "the end of the
 * id again" where the two agree) are kept inline; tokens that often
 * come one after the other are joined into one, so a record is a handful of numbers. Decoding copies the
 * pieces back in order, a microsecond or two a record, and gives back the very bytes stored: the
 * cuts only decide what is shared, never what is written. The HTTP answers are assembled from
 * these bytes as they are (http/reads.ts); a record is parsed only where an object is needed (the
 * MCP tools, an exact-name check).
 */
import type { FactoryRecord } from './record.ts';

// `{"id":"` opens every stored record (the store is given canonical JSON): the id follows.
const ID_PREFIX = '{"id":"';
const ID_PREFIX_BYTES = new TextEncoder().encode(ID_PREFIX);
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

function startsWithIdPrefix(json: Uint8Array): boolean {
  if (json.length < ID_PREFIX_BYTES.length) return false;
  for (let i = 0; i < ID_PREFIX_BYTES.length; i++) if (json[i] !== ID_PREFIX_BYTES[i]) return false;
  return true;
}

function endsWith(bytes: Uint8Array, end: number, suffix: Uint8Array): boolean {
  if (end < suffix.length) return false;
  for (let i = 0; i < suffix.length; i++) if (bytes[end - suffix.length + i] !== suffix[i]) return false;
  return true;
}

const encoder = new TextEncoder();
// Values kept inline (the record's own): a street address. The record's name, its second value,
// is too. Values of these members keep their beginning (up to a last `/`, `=` or `-`) as a token
// and the rest inline: `epa-` + digits, `https://www.wikidata.org/wiki/` + a Q-id.
const OWN_MEMBERS = [encoder.encode('"address":"')];
const SPLIT_MEMBERS = [encoder.encode('"url":"')];
const NAME_VALUE = 1;
// Pairs of tokens seen this often are joined into one token (see RecordStoreBuilder.join); the
// counters are 2^PAIR_BITS bytes; a joined token is at most MAX_JOINED bytes.
const JOIN_AFTER = 32;
const PAIR_BITS = 22;
const MAX_JOINED = 512;
const ID_VALUE = 0;

function lastCut(bytes: Uint8Array, from: number, to: number): number {
  for (let i = to - 1; i > from; i--) {
    const b = bytes[i]!;
    if (b === 0x2f || b === 0x3d || b === 0x2d) return i + 1; // / = -
  }
  return from;
}

/** A growable byte buffer. */
class Bytes {
  buffer = new Uint8Array(1 << 16);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buffer.length) return;
    const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.length + n));
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
  }

  push(bytes: Uint8Array, from: number, to: number): void {
    this.room(to - from);
    this.buffer.set(bytes.subarray(from, to), this.length);
    this.length += to - from;
  }

  varint(value: number): void {
    this.room(5);
    while (value >= 0x80) {
      this.buffer[this.length++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    this.buffer[this.length++] = value;
  }

  take(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }
}

/** A growable Int32Array (Int32, not Uint32: V8 keeps small integers read from it as integers). */
class Numbers {
  array = new Int32Array(1024);
  length = 0;

  push(value: number): void {
    if (this.length === this.array.length) {
      const grown = new Int32Array(this.array.length * 2);
      grown.set(this.array);
      this.array = grown;
    }
    this.array[this.length++] = value;
  }

  take(): Int32Array {
    return this.array.slice(0, this.length);
  }
}

/** The token table being built: byte strings kept once, found by an FNV-1a hash of their bytes. */
class TokenTable {
  readonly bytes = new Bytes();
  /** Token t is bytes[starts[t], starts[t + 1]). */
  readonly starts = new Numbers();
  private slots = new Int32Array(1 << 16);
  private count = 0;

  constructor() {
    this.starts.push(0);
  }

  /** The number of the token `source[from, to)`, added when new. */
  intern(source: Uint8Array, from: number, to: number): number {
    let h = 0x811c9dc5;
    for (let i = from; i < to; i++) h = Math.imul(h ^ source[i]!, 0x01000193);
    const mask = this.slots.length - 1;
    const table = this.bytes.buffer;
    const starts = this.starts.array;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const held = this.slots[slot]!;
      if (held === 0) break;
      const t = held - 1;
      const start = starts[t]!;
      if (starts[t + 1]! - start !== to - from) continue;
      let same = true;
      for (let i = 0; i < to - from; i++) {
        if (table[start + i] !== source[from + i]) {
          same = false;
          break;
        }
      }
      if (same) return t;
    }
    const t = this.count++;
    this.bytes.push(source, from, to);
    this.starts.push(this.bytes.length);
    if (this.count * 2 > this.slots.length) this.rehash();
    else this.place(t, h);
    return t;
  }

  private place(t: number, h: number): void {
    const mask = this.slots.length - 1;
    let slot = h & mask;
    while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
    this.slots[slot] = t + 1;
  }

  private rehash(): void {
    this.slots = new Int32Array(this.slots.length * 2);
    const table = this.bytes.buffer;
    const starts = this.starts.array;
    for (let t = 0; t < this.count; t++) {
      let h = 0x811c9dc5;
      for (let i = starts[t]!; i < starts[t + 1]!; i++) h = Math.imul(h ^ table[i]!, 0x01000193);
      this.place(t, h);
    }
  }
}

/** What a RecordStore is made of: typed arrays only, so it can be written to and read from a file as it is. */
export interface RecordStoreParts {
  /** The tokens' bytes, end to end. */
  readonly tokens: Uint8Array;
  /** Token t is tokens[tokenStarts[t], tokenStarts[t + 1]). */
  readonly tokenStarts: Int32Array;
  /** The encoded records, end to end. */
  readonly data: Uint8Array;
  /** Record i is data[starts[i], starts[i + 1]). */
  readonly starts: Int32Array;
  /** The length of each record's JSON. */
  readonly lengths: Int32Array;
}

/** Takes records one at a time (`append`) and makes a RecordStore of them (`finish`). */
export class RecordStoreBuilder {
  private readonly table = new TokenTable();
  private readonly data = new Bytes();
  private readonly starts = new Numbers();
  private readonly lengths = new Numbers();
  /** Counters of pairs of tokens seen one after the other, by a hash of the pair. */
  private readonly pairs = new Uint8Array(1 << PAIR_BITS);
  /** The token waiting to be written (or joined with the next), -1 for none. */
  private pending = -1;
  private joinBuffer = new Uint8Array(256);
  /** Where the end of the current record's id, kept inline, is in its JSON. */
  private idTailFrom = 0;
  private idTailTo = 0;

  constructor() {
    this.starts.push(0);
  }

  /** Records appended. */
  get size(): number {
    return this.lengths.length;
  }

  /**
   * Stores a record's JSON bytes, which must begin `{"id":"…"` (canonical member order); returns
   * its position. The bytes are encoded at once: the caller may reuse them.
   */
  append(json: Uint8Array): number {
    if (!startsWithIdPrefix(json)) throw new RangeError('a stored record must begin with its id');
    if (this.data.length > 0x7fff_0000) throw new RangeError('too many records for one record store');
    this.idTailFrom = this.idTailTo = 0;
    let piece = 0; // where the text not yet encoded begins
    let value = 0; // string values met so far
    let i = 0;
    while (i < json.length) {
      if (json[i] !== QUOTE) {
        i++;
        continue;
      }
      // A string from the quote at i to its closing quote.
      let end = i + 1;
      while (end < json.length && json[end] !== QUOTE) end += json[end] === BACKSLASH ? 2 : 1;
      if (end >= json.length) break;
      if (json[end + 1] === COLON) {
        i = end + 1; // a member name: part of the text between values
        continue;
      }
      const from = i + 1;
      this.token(json, piece, from);
      if (end > from) this.value(json, from, end, value);
      value++;
      piece = end;
      i = end + 1;
    }
    this.token(json, piece, json.length);
    this.flush();
    this.starts.push(this.data.length);
    this.lengths.push(json.length);
    return this.lengths.length - 1;
  }

  /** A string value's contents, `json[from, to)`: shared, the record's own, or split between the two. */
  private value(json: Uint8Array, from: number, to: number, index: number): void {
    if (index === NAME_VALUE || OWN_MEMBERS.some((m) => endsWith(json, from, m))) {
      this.literal(json, from, to);
    } else if (index === ID_VALUE || SPLIT_MEMBERS.some((m) => endsWith(json, from, m))) {
      const cut = lastCut(json, from, to);
      if (cut > from) this.token(json, from, cut);
      if (index !== ID_VALUE && this.sameAsIdTail(json, cut, to)) this.repeatIdTail();
      else this.literal(json, cut, to);
      if (index === ID_VALUE) [this.idTailFrom, this.idTailTo] = [cut, to];
    } else {
      this.token(json, from, to);
    }
  }

  // A piece is written as a number: 0 then its length and bytes for an inline piece, t + 1 for token t.
  // Tokens that follow one another are held back (`pending`) to be joined into one when the pair
  // has been seen often (see `pairs`).
  private token(json: Uint8Array, from: number, to: number): void {
    if (to <= from) return;
    const t = this.table.intern(json, from, to);
    if (this.pending < 0) {
      this.pending = t;
      return;
    }
    const joined = this.join(this.pending, t);
    if (joined >= 0) this.pending = joined;
    else {
      this.data.varint(this.pending + 1);
      this.pending = t;
    }
  }

  /**
   * The token for `a` followed by `b` when that pair has come often enough to be worth one token of
   * its own, else -1. Pairs are counted in a fixed table of small counters by a hash of the two
   * numbers (a collision only counts a pair too soon): member names, a country and its region, a
   * source's name, URL and licence, a piece of evidence… become one token each, and a record a
   * handful of numbers. Joined tokens join further in turn, up to a bounded length.
   */
  private join(a: number, b: number): number {
    const h = (Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 1, 0x85ebca6b)) >>> (32 - PAIR_BITS);
    const seen = this.pairs[h]!;
    if (seen < JOIN_AFTER) {
      this.pairs[h] = seen + 1;
      return -1;
    }
    const table = this.table;
    const starts = table.starts.array;
    const aLength = starts[a + 1]! - starts[a]!;
    const bLength = starts[b + 1]! - starts[b]!;
    if (aLength + bLength > MAX_JOINED) return -1;
    if (this.joinBuffer.length < aLength + bLength) this.joinBuffer = new Uint8Array(aLength + bLength);
    this.joinBuffer.set(table.bytes.buffer.subarray(starts[a]!, starts[a + 1]!), 0);
    this.joinBuffer.set(table.bytes.buffer.subarray(starts[b]!, starts[b + 1]!), aLength);
    return table.intern(this.joinBuffer, 0, aLength + bLength);
  }

  /** True when `json[from, to)` is the end of the record's id again (an FRS page's registry id, a Wikidata item's Q-id). */
  private sameAsIdTail(json: Uint8Array, from: number, to: number): boolean {
    if (to - from !== this.idTailTo - this.idTailFrom || to === from) return false;
    for (let i = 0; i < to - from; i++) if (json[from + i] !== json[this.idTailFrom + i]) return false;
    return true;
  }

  // An inline piece of length 0 (never written otherwise) stands for the end of the id again.
  private repeatIdTail(): void {
    this.flush();
    this.data.varint(0);
    this.data.varint(0);
  }

  private flush(): void {
    if (this.pending >= 0) this.data.varint(this.pending + 1);
    this.pending = -1;
  }

  private literal(json: Uint8Array, from: number, to: number): void {
    if (to <= from) return;
    this.flush();
    this.data.varint(0);
    this.data.varint(to - from);
    this.data.push(json, from, to);
  }

  /** The store. The builder is spent. */
  finish(): RecordStore {
    return new RecordStore({
      tokens: this.table.bytes.take(),
      tokenStarts: this.table.starts.take(),
      data: this.data.take(),
      starts: this.starts.take(),
      lengths: this.lengths.take(),
    });
  }
}

export class RecordStore {
  readonly parts: RecordStoreParts;
  private readonly tokens: Uint8Array;
  private readonly tokenStarts: Int32Array;
  private readonly data: Uint8Array;
  private readonly starts: Int32Array;
  private readonly lengths: Int32Array;
  private readonly decoder = new TextDecoder();

  constructor(parts: RecordStoreParts) {
    if (parts.starts.length !== parts.lengths.length + 1) throw new RangeError('a record store needs a start for every record and one past the last');
    this.parts = parts;
    ({ tokens: this.tokens, tokenStarts: this.tokenStarts, data: this.data, starts: this.starts, lengths: this.lengths } = parts);
  }

  /** Records stored. */
  get size(): number {
    return this.lengths.length;
  }

  /** Bytes held, for reports. */
  get byteLength(): number {
    return this.tokens.byteLength + this.tokenStarts.byteLength + this.data.byteLength + this.starts.byteLength + this.lengths.byteLength;
  }

  /** The store with its records reordered: the one at position `order[k]` moves to position k. */
  permute(order: Int32Array): RecordStore {
    const data = new Bytes();
    const starts = new Numbers();
    const lengths = new Int32Array(order.length);
    starts.push(0);
    for (let k = 0; k < order.length; k++) {
      const from = order[k]!;
      data.push(this.data, this.starts[from]!, this.starts[from + 1]!);
      starts.push(data.length);
      lengths[k] = this.lengths[from]!;
    }
    return new RecordStore({ tokens: this.tokens, tokenStarts: this.tokenStarts, data: data.take(), starts: starts.take(), lengths });
  }

  /** The length of record `i`'s JSON in bytes. */
  byteLengthOf(i: number): number {
    return this.lengths[i]!;
  }

  /** Writes record `i`'s JSON into `out` at `at`; returns where it ends. */
  decodeInto(i: number, out: Uint8Array, at: number): number {
    const data = this.data;
    const tokens = this.tokens;
    const tokenStarts = this.tokenStarts;
    let p = this.starts[i]!;
    const end = this.starts[i + 1]!;
    // The record's first inline piece, the end of its id: an empty inline piece repeats it.
    let idFrom = -1;
    let idTo = -1;
    while (p < end) {
      let v = 0;
      let shift = 0;
      let b: number;
      do {
        b = data[p++]!;
        v |= (b & 0x7f) << shift;
        shift += 7;
      } while (b & 0x80);
      let from: number;
      let to: number;
      let source: Uint8Array;
      if (v === 0) {
        let n = 0;
        shift = 0;
        do {
          b = data[p++]!;
          n |= (b & 0x7f) << shift;
          shift += 7;
        } while (b & 0x80);
        if (n === 0) {
          from = idFrom;
          to = idTo;
        } else {
          from = p;
          to = p + n;
          p = to;
          if (idFrom < 0) [idFrom, idTo] = [from, to];
        }
        source = data;
      } else {
        from = tokenStarts[v - 1]!;
        to = tokenStarts[v]!;
        source = tokens;
      }
      if (to - from > 24) {
        out.set(source.subarray(from, to), at);
        at += to - from;
      } else {
        for (let k = from; k < to; k++) out[at++] = source[k]!;
      }
    }
    return at;
  }

  /** The record at position `i`, as its JSON bytes (new bytes each call). */
  bytes(i: number): Uint8Array {
    const out = new Uint8Array(this.lengths[i]!);
    this.decodeInto(i, out, 0);
    return out;
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
    const end = bytes.indexOf(QUOTE, ID_PREFIX.length);
    // Ids are ASCII: one byte, one character.
    return String.fromCharCode(...bytes.subarray(ID_PREFIX.length, end));
  }
}
