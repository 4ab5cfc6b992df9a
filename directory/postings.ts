/**
 * Posting lists: strictly increasing Int32Arrays of record positions, and the set operations the
 * search needs on them. Positions are indexes into the id-sorted record array, so ascending
 * position is ascending id.
 *
 * Every operation that makes a list takes its room from an `Alloc`. By default that is a new
 * array; the index passes buffers it reuses from query to query, because a query over a million
 * records would otherwise allocate megabytes, and the collections that follow are what set the
 * 99th percentile.
 */

import { and2Simd, and3Simd, type BitsetStore, scratchBits } from './bitset-simd.ts';

export type Postings = Int32Array;

/** A bit per position: bit p of word p >>> 5 is set when p is in the list. */
export type Bitset = Uint32Array;

/** Room for at least `length` positions (the result is a view of its first n). */
export type Alloc = (length: number) => Int32Array;

export const EMPTY: Postings = new Int32Array(0);

const fresh: Alloc = (length) => new Int32Array(length);

// Past this ratio of lengths, walking the long list is slower than binary-searching it from
// the short one (galloping), as in every search engine's intersection.
const GALLOP_RATIO = 16;

/** First index in `list` from `from` on whose value is >= `value` (exponential then binary search). */
function seek(list: Postings, value: number, from: number): number {
  let step = 1;
  let high = from;
  while (high < list.length && list[high]! < value) {
    from = high + 1;
    high += step;
    step *= 2;
  }
  high = Math.min(high, list.length);
  let low = from;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (list[mid]! < value) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The positions in both lists. */
export function intersect(a: Postings, b: Postings, alloc: Alloc = fresh): Postings {
  if (a.length > b.length) [a, b] = [b, a];
  if (a.length === 0) return EMPTY;
  const out = alloc(a.length);
  let n = 0;
  if (b.length > a.length * GALLOP_RATIO) {
    let j = 0;
    for (let i = 0; i < a.length && j < b.length; i++) {
      const v = a[i]!;
      j = seek(b, v, j);
      if (b[j] === v) out[n++] = v;
    }
  } else {
    let i = 0;
    let j = 0;
    while (i < a.length && j < b.length) {
      const x = a[i]!;
      const y = b[j]!;
      if (x === y) {
        out[n++] = x;
        i++;
        j++;
      } else if (x < y) i++;
      else j++;
    }
  }
  return out.subarray(0, n);
}

/** The bit set of `list` over `universe` positions. */
export function toBitset(list: Postings, universe: number): Bitset {
  return setBits(new Uint32Array((universe + 31) >>> 5), list);
}

/** Sets the bits of `list`'s positions in `bits`, and returns it. */
export function setBits(bits: Bitset, list: Postings): Bitset {
  for (let i = 0; i < list.length; i++) bits[list[i]! >>> 5]! |= 1 << (list[i]! & 31);
  return bits;
}

/** The positions of `list` whose bit is set in `bits`. */
function keepMembers(list: Postings, bits: Bitset, alloc: Alloc): Postings {
  const out = alloc(list.length);
  let n = 0;
  for (let i = 0; i < list.length; i++) {
    const v = list[i]!;
    if ((bits[v >>> 5]! >>> (v & 31)) & 1) out[n++] = v;
  }
  return out.subarray(0, n);
}

/**
 * The positions in every list, smallest list first so the work shrinks fastest. A list that has
 * a bit set (`bitsOf`, kept for the long lists: a country, a category, a common word) is applied
 * by testing each remaining position's bit, so its length costs nothing.
 */
export function intersectAll(lists: readonly Postings[], bitsOf?: (list: Postings) => Bitset | undefined, alloc: Alloc = fresh): Postings {
  if (lists.length === 0) throw new RangeError('intersectAll needs at least one list');
  const sorted = [...lists].sort((a, b) => a.length - b.length);
  let result = sorted[0]!;
  for (let k = 1; k < sorted.length && result.length > 0; k++) {
    const list = sorted[k]!;
    if (list === result) continue;
    const bits = bitsOf?.(list);
    result = bits ? keepMembers(result, bits, alloc) : intersect(result, list, alloc);
  }
  return result;
}

// Up to this many lists a union merges them pairwise; past it, a sort or a bit set is cheaper.
const MERGE_UP_TO = 3;

/** The positions in either list. */
function merge(a: Postings, b: Postings, alloc: Alloc): Postings {
  const out = alloc(a.length + b.length);
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x <= y) {
      out[n++] = x;
      i++;
      if (x === y) j++;
    } else {
      out[n++] = y;
      j++;
    }
  }
  while (i < a.length) out[n++] = a[i++]!;
  while (j < b.length) out[n++] = b[j++]!;
  return out.subarray(0, n);
}

/**
 * The positions in any of the lists. Two or three are merged; more, if short, by sorting; many
 * or long ones through a bit set over all `universe` positions (from `bitsAlloc`, zeroed here), which costs one
 * pass over `universe / 32` words however many lists there are.
 */
export function unionAll(
  lists: readonly Postings[],
  universe: number,
  alloc: Alloc = fresh,
  bitsAlloc: (words: number) => Bitset = (words) => new Uint32Array(words),
): Postings {
  if (lists.length === 0) return EMPTY;
  if (lists.length === 1) return lists[0]!;
  if (lists.length <= MERGE_UP_TO) {
    // A few lists: merging them pairwise touches each position a couple of times at most.
    let result = lists[0]!;
    for (let k = 1; k < lists.length; k++) result = merge(result, lists[k]!, alloc);
    return result;
  }
  let total = 0;
  for (const list of lists) total += list.length;
  if (total * 8 < universe / 32) {
    const all = alloc(total).subarray(0, total);
    let at = 0;
    for (const list of lists) {
      all.set(list, at);
      at += list.length;
    }
    all.sort();
    let n = 0;
    for (let i = 0; i < all.length; i++) if (n === 0 || all[n - 1] !== all[i]) all[n++] = all[i]!;
    return all.subarray(0, n);
  }
  const bits = bitsAlloc((universe + 31) >>> 5).fill(0);
  let count = 0;
  for (const list of lists) {
    for (let i = 0; i < list.length; i++) {
      const v = list[i]!;
      const mask = 1 << (v & 31);
      if ((bits[v >>> 5]! & mask) === 0) {
        bits[v >>> 5]! |= mask;
        count++;
      }
    }
  }
  return listOf(bits, count, alloc);
}

/**
 * Up to `count` positions of `a` that are not in `b`, skipping the first `skip` of them.
 * `b` must be a subset of `a` for the skip to count the right elements (it is: tiers nest).
 */
export function differenceWindow(a: Postings, b: Postings, skip: number, count: number): number[] {
  const out: number[] = [];
  let j = 0;
  for (let i = 0; i < a.length && out.length < count; i++) {
    const v = a[i]!;
    while (j < b.length && b[j]! < v) j++;
    if (j < b.length && b[j] === v) continue;
    if (skip > 0) skip--;
    else out.push(v);
  }
  return out;
}

/** The number of bits set in each 16-bit value: two lookups count a word, faster than arithmetic here. */
const BITS16 = new Uint8Array(1 << 16);
for (let i = 1; i < BITS16.length; i++) BITS16[i] = (i & 1) + BITS16[i >>> 1]!;

/** The number of bits set in a 32-bit word. */
function popcount(x: number): number {
  return BITS16[x & 0xffff]! + BITS16[x >>> 16]!;
}

/**
 * Writes the positions in both `a` and `b` (bit sets over the same universe) to `out`, which may be
 * either of them, and returns how many there are. A word at a time: 32 positions per step, however
 * many of them are set, where walking a list costs a step per member.
 */
export function andBits(a: Bitset, b: Bitset, out: Bitset): number {
  const length = out.length;
  // All three in the index's memory: the whole vectors in WebAssembly SIMD, the last words here.
  const simd = and2Simd(a, b, out);
  let n = simd ?? 0;
  for (let w = simd === undefined ? 0 : length & ~3; w < length; w++) {
    const x = a[w]! & b[w]!;
    out[w] = x;
    // Counted by table, written out: once this function is inlined into its caller, V8 no longer
    // inlines a popcount call here, and the call per word made the loop three times slower.
    n += BITS16[x & 0xffff]! + BITS16[x >>> 16]!;
  }
  return n;
}

/**
 * `andBits` of three bit sets in one pass (`out` may be any of them): an intersection of a word and
 * two filters, or of a tier and two more lists, reads each word once instead of twice.
 */
export function andBits3(a: Bitset, b: Bitset, c: Bitset, out: Bitset): number {
  const length = out.length;
  const simd = and3Simd(a, b, c, out);
  let n = simd ?? 0;
  for (let w = simd === undefined ? 0 : length & ~3; w < length; w++) {
    const x = a[w]! & b[w]! & c[w]!;
    out[w] = x;
    n += BITS16[x & 0xffff]! + BITS16[x >>> 16]!;
  }
  return n;
}

/** The `count` positions set in `bits`, as a list. */
export function listOf(bits: Bitset, count: number, alloc: Alloc = fresh): Postings {
  const out = alloc(count);
  let n = 0;
  for (let w = 0; w < bits.length; w++) {
    let x = bits[w]!;
    while (x !== 0) {
      const low = x & -x;
      out[n++] = (w << 5) | (31 - Math.clz32(low));
      x ^= low;
    }
  }
  return out.subarray(0, n);
}

/** `list` as a bit set, written over `out` (every word of it). */
export function bitsInto(list: Postings, out: Bitset): Bitset {
  out.fill(0);
  for (let i = 0; i < list.length; i++) out[list[i]! >>> 5]! |= 1 << (list[i]! & 31);
  return out;
}

/**
 * Up to `count` positions set in `bits` and not in `minus`, skipping the first `skip` of them,
 * in ascending order: `differenceWindow` for bit sets. Whole words are skipped by their count.
 */
export function bitsWindow(bits: Bitset, minus: Bitset | undefined, skip: number, count: number): number[] {
  const out: number[] = [];
  for (let w = 0; w < bits.length && out.length < count; w++) {
    let x = minus === undefined ? bits[w]! : bits[w]! & ~minus[w]!;
    if (x === 0) continue;
    if (skip > 0) {
      const n = popcount(x);
      if (n <= skip) {
        skip -= n;
        continue;
      }
    }
    while (x !== 0 && out.length < count) {
      const low = x & -x;
      if (skip > 0) skip--;
      else out.push((w << 5) | (31 - Math.clz32(low)));
      x ^= low;
    }
  }
  return out;
}

/**
 * Buffers for one query at a time, handed out by `alloc` and all taken back by `reset`: the
 * lists made while answering a query live only until the next one. Grows to what the busiest
 * query needed, then allocates nothing.
 */
export class ScratchPool {
  private readonly buffers: Int32Array[] = [];
  private used = 0;
  private bitset: Bitset | undefined;
  private readonly bitsets: Bitset[] = [];
  private bitsUsed = 0;

  private readonly store: BitsetStore | undefined;

  /** `store`: the index's bit sets' store; a query's bit sets are made in it where it can grow (bitset-simd.ts). */
  constructor(store?: BitsetStore) {
    this.store = store;
  }

  /** Takes back every buffer; what was made from them must no longer be used. */
  reset(): void {
    this.used = 0;
    this.bitsUsed = 0;
  }

  /** A bit set of `words` words for this query (its content is left over: write every word). */
  readonly allocBits = (words: number): Bitset => {
    let bits = this.bitsets[this.bitsUsed];
    if (bits === undefined || bits.length !== words) {
      bits = (this.store && scratchBits(this.store, words)) ?? new Uint32Array(words);
      this.bitsets[this.bitsUsed] = bits;
    }
    this.bitsUsed++;
    return bits;
  };

  readonly alloc: Alloc = (length) => {
    let buffer = this.buffers[this.used];
    if (buffer === undefined || buffer.length < length) {
      buffer = new Int32Array(Math.max(length, buffer?.length ?? 0));
      this.buffers[this.used] = buffer;
    }
    this.used++;
    return buffer;
  };

  /** One bit set, reused by every union of the query (a union is done with it before the next). */
  readonly bits = (words: number): Bitset => {
    if (this.bitset === undefined || this.bitset.length < words) this.bitset = new Uint32Array(words);
    return this.bitset.subarray(0, words);
  };
}

/**
 * Recently made lists by key, least recently used dropped first, within a budget of positions:
 * the unions a prefix stands for ("mach" → machine ∪ machining), which a user typing, and every
 * user after them, asks for again and again.
 */
export class PostingsCache {
  private readonly entries = new Map<string, Postings>();
  private readonly kept = new WeakSet<Postings>();
  private held = 0;
  private readonly budget: number;
  private readonly maxEntries: number;
  // The buffers of dropped lists, by capacity (a power of two), for the next lists kept: a stream
  // of new prefixes otherwise made a buffer a query, and V8 answers that much new buffer memory
  // with a full collection (measured: one every ~350 ms per thread under the benchmark's new
  // prefixes). A buffer dropped during a query is reused only after it (`settle`), as the query
  // may still read it.
  private readonly spare = new Map<number, Int32Array[]>();
  private released: Int32Array[] = [];
  private spareHeld = 0;

  /**
   * `budget`: positions held at most (4 bytes each; in buffers of up to twice that, and as much
   * again in spare buffers, counted by capacity); `maxEntries`: lists held at most.
   */
  constructor(budget: number, maxEntries: number) {
    this.budget = budget;
    this.maxEntries = maxEntries;
  }

  /** True when `list` is one of the lists held (as `get` returned it). */
  holds(list: Postings): boolean {
    return this.kept.has(list);
  }

  /** Lets the buffers of lists dropped so far be reused: call between queries, never during one. */
  settle(): void {
    for (const buffer of this.released) {
      if (this.spareHeld + buffer.length > this.budget) continue;
      const same = this.spare.get(buffer.length);
      if (same === undefined) this.spare.set(buffer.length, [buffer]);
      else same.push(buffer);
      this.spareHeld += buffer.length;
    }
    this.released = [];
  }

  /** The list for `key`, made by `make` (and kept, copied) when not held. */
  get(key: string, make: () => Postings): Postings {
    const had = this.entries.get(key);
    if (had !== undefined) {
      // Most recently used last: a Map iterates in insertion order.
      this.entries.delete(key);
      this.entries.set(key, had);
      return had;
    }
    const made = make();
    if (made.length > this.budget) return made;
    const kept = this.room(made.length);
    kept.set(made);
    this.entries.set(key, kept);
    this.kept.add(kept);
    this.held += kept.length;
    for (const [oldKey, old] of this.entries) {
      if (this.held <= this.budget && this.entries.size <= this.maxEntries) break;
      this.entries.delete(oldKey);
      this.kept.delete(old);
      this.held -= old.length;
      this.released.push(new Int32Array(old.buffer));
    }
    return kept;
  }

  // Room for `length` positions: a spare buffer of the next power of two, or a new one.
  private room(length: number): Postings {
    const capacity = 2 ** Math.ceil(Math.log2(Math.max(length, 16)));
    const buffer = this.spare.get(capacity)?.pop();
    if (buffer === undefined) return new Int32Array(capacity).subarray(0, length);
    this.spareHeld -= capacity;
    return buffer.subarray(0, length);
  }
}

/**
 * Builds posting lists from ascending pushes; each position is kept once per key. Pairs go into
 * two growing Int32Arrays and are sorted by key at the end (a counting sort, stable, so positions
 * stay ascending); the lists are views into one buffer. A million records push about ten million
 * pairs: this keeps that to two allocations instead of one array per word.
 */
export class PostingsBuilder {
  private readonly ids = new Map<string, number>();
  private lastPosition = new Int32Array(1024).fill(-1);
  private keys = new Int32Array(1 << 16);
  private positions = new Int32Array(1 << 16);
  private length = 0;

  add(key: string, position: number): void {
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.ids.size;
      this.ids.set(key, id);
      if (id >= this.lastPosition.length) {
        const grown = new Int32Array(this.lastPosition.length * 2).fill(-1);
        grown.set(this.lastPosition);
        this.lastPosition = grown;
      }
    }
    if (this.lastPosition[id] === position) return;
    this.lastPosition[id] = position;
    if (this.length === this.keys.length) {
      const keys = new Int32Array(this.length * 2);
      keys.set(this.keys);
      this.keys = keys;
      const positions = new Int32Array(this.length * 2);
      positions.set(this.positions);
      this.positions = positions;
    }
    this.keys[this.length] = id;
    this.positions[this.length] = position;
    this.length++;
  }

  /** The lists, keys sorted. The builder is spent. */
  build(): PostingsTable {
    const keys = [...this.ids.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const counts = new Int32Array(this.ids.size);
    for (let i = 0; i < this.length; i++) counts[this.keys[i]!]!++;
    // Lists laid end to end in key order: offsets[k] is where the k-th key's list begins.
    const offsets = new Uint32Array(keys.length + 1);
    const at = new Int32Array(this.ids.size);
    for (let k = 0; k < keys.length; k++) {
      const id = this.ids.get(keys[k]!)!;
      at[id] = offsets[k]!;
      offsets[k + 1] = offsets[k]! + counts[id]!;
    }
    const positions = new Int32Array(this.length);
    for (let i = 0; i < this.length; i++) positions[at[this.keys[i]!]!++] = this.positions[i]!;
    this.ids.clear();
    this.keys = new Int32Array(0);
    this.positions = new Int32Array(0);
    this.length = 0;
    return new PostingsTable({ keys, offsets, positions });
  }
}

/** What a PostingsTable is made of: its keys, sorted, and their lists end to end. */
export interface PostingsTableParts {
  readonly keys: readonly string[];
  /** The k-th key's list is positions[offsets[k], offsets[k + 1]). */
  readonly offsets: Uint32Array;
  readonly positions: Int32Array;
}

/**
 * Posting lists by key, laid end to end in one array (so a table is three values, whatever its
 * size, and can be written to a file and read back as it is). A list is a view made when asked
 * for; the long ones (`keep`) are made once and kept, so they are the same object every time and
 * can be looked up by identity (their bit sets are).
 */
export class PostingsTable {
  readonly parts: PostingsTableParts;
  private readonly kept = new Map<number, Postings>();

  constructor(parts: PostingsTableParts) {
    if (parts.offsets.length !== parts.keys.length + 1) throw new RangeError('a postings table needs an offset for every key and one past the last');
    this.parts = parts;
  }

  /** The keys, sorted. */
  get keys(): readonly string[] {
    return this.parts.keys;
  }

  /** The position of `key` among the keys, or -1. */
  indexOf(key: string): number {
    const keys = this.parts.keys;
    let low = 0;
    let high = keys.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (keys[mid]! < key) low = mid + 1;
      else high = mid;
    }
    return low < keys.length && keys[low] === key ? low : -1;
  }

  /** The list of the k-th key. */
  at(k: number): Postings {
    const kept = this.kept.get(k);
    if (kept !== undefined) return kept;
    return this.parts.positions.subarray(this.parts.offsets[k]!, this.parts.offsets[k + 1]!);
  }

  /** The list of `key`, if any record has it. */
  get(key: string): Postings | undefined {
    const k = this.indexOf(key);
    return k < 0 ? undefined : this.at(k);
  }

  /** The length of the k-th key's list. */
  lengthAt(k: number): number {
    return this.parts.offsets[k + 1]! - this.parts.offsets[k]!;
  }

  /** Keeps the views of the lists of at least `length` positions, and gives them. */
  keep(length: number): Postings[] {
    const out: Postings[] = [];
    for (let k = 0; k < this.parts.keys.length; k++) {
      if (this.lengthAt(k) < length) continue;
      const list = this.at(k);
      this.kept.set(k, list);
      out.push(list);
    }
    return out;
  }

  /** Each key with the length of its list. */
  *counts(): Generator<[string, number]> {
    for (let k = 0; k < this.parts.keys.length; k++) yield [this.parts.keys[k]!, this.lengthAt(k)];
  }

  /** Bytes held by the lists and offsets, for reports. */
  get byteLength(): number {
    return this.parts.offsets.byteLength + this.parts.positions.byteLength;
  }
}
