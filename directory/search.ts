/**
 * The directory's in-memory index: free-text search, filters, lookup by id and statistics over
 * one dataset. Built once at start-up; every query then works on posting lists (sorted Int32Arrays
 * of record positions), never by scanning the records, so it stays fast at a million records.
 *
 * Matching: the query's words (folded: case and accents ignored, see text.ts) must all occur in
 * the record's name, city or category evidence (category slug, code, label); the last word also
 * matches words it begins, once it has three characters ("machin" finds "machining").
 * Ranking, a total order so that paging never repeats or skips a record:
 *   0. the name is exactly the query;
 *   1. the name begins with the query's first word and holds every word;
 *   2. the name holds every word;
 *   3. the name holds every word, the last one completed ("chem" → "chemical");
 *   4. the words are found elsewhere (city, evidence) too;
 * and within a tier by id. Filters (country, region, city, category, contact) combine with AND.
 */

import type { BitsetStore } from './bitset-simd.ts';
import { type Dataset, type DatasetHeader, datasetRecordLine, streamDataset } from './dataset.ts';
import { bitsetsOf, hashPhrase, IndexBuilder, type IndexOptions, type IndexParts } from './index-builder.ts';
import {
  andBits,
  andBits3,
  type Bitset,
  bitsInto,
  bitsWindow,
  differenceWindow,
  EMPTY,
  intersectAll,
  listOf,
  type Postings,
  PostingsCache,
  type PostingsTable,
  ScratchPool,
  toBitset,
  unionAll,
} from './postings.ts';
import { CATEGORIES, type Category, CONTACT_KINDS, type ContactKind, type FactoryRecord } from './record.ts';
import type { RecordStore } from './record-store.ts';
import { foldPhrase, words } from './text.ts';

/** A search, already validated by the caller (limit 1..100, offset >= 0, enums checked). */
export interface SearchQuery {
  q?: string;
  /** ISO 3166-1 alpha-2, upper case. */
  country?: string;
  /** ISO 3166-2, upper case: the record's country and region (`US-OH`). */
  region?: string;
  /** Compared case- and accent-insensitively, as a whole. */
  city?: string;
  category?: Category;
  /** Records with at least one contact of this kind. */
  contact?: ContactKind;
  limit: number;
  offset: number;
}

export interface SearchResult {
  total: number;
  /** The offset of the following page; null on the last page. */
  next_offset: number | null;
  factories: FactoryRecord[];
}

/** A page of a search as record positions, for reading the records' stored JSON (`recordJson`). */
export interface SearchPage {
  total: number;
  next_offset: number | null;
  positions: number[];
}

/** Counts over the whole directory; every category and contact kind is listed, zeros included. */
export interface DirectoryStats {
  dataset_date: string;
  total: number;
  by_country: Record<string, number>;
  /** Records assigned each category. */
  by_category: Record<string, number>;
  /** Records with at least one contact of each kind. */
  by_contact: Record<string, number>;
  /** Records per source key. */
  by_source: Record<string, number>;
}

/**
 * A large set of positions as a bit set and its count. Intersecting two of them costs a step per
 * 32 records of the directory, where intersecting lists costs a step per member of the shorter:
 * past a few tens of thousands of members, bit sets win (see `denseFrom`).
 */
interface DenseSet {
  readonly bits: Bitset;
  readonly size: number;
}

/** One tier of a ranking: a sorted list, or (for a query over large sets) a dense set. */
type Tier = Postings | DenseSet;

/** A query's tiers in rank order, each made when the page reaches it, and how many records the widest holds. */
interface RankedTiers {
  readonly total: number;
  readonly tiers: readonly (() => Tier)[];
}

/** Tiers made already. */
function madeTiers(tiers: readonly Tier[]): RankedTiers {
  return { total: sizeOf(tiers[tiers.length - 1]!), tiers: tiers.map((tier) => () => tier) };
}

/** `make`, run once, on first use. */
function once<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}

const sizeOf = (tier: Tier): number => (tier instanceof Int32Array ? tier.length : tier.size);

// No position: its bits are never read (a page skips an empty tier, and subtracts nothing for one).
const EMPTY_DENSE: DenseSet = { bits: new Uint32Array(0), size: 0 };

// A query word this short only matches whole words: expanding "a" or "co" to every word it
// begins would match most of the directory and tell the user nothing.
const MIN_PREFIX = 3;

function sortedCounts(entries: Iterable<[string, number]>): Record<string, number> {
  return Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function countsOf(table: PostingsTable, keys: readonly string[] = []): Record<string, number> {
  const counts = new Map<string, number>(keys.map((k) => [k, 0]));
  for (const [key, length] of table.counts()) counts.set(key, length);
  return sortedCounts(counts);
}

/** The index over one dataset. */
export class DirectoryIndex {
  /** The dataset's date (YYYY-MM-DD). */
  readonly generated: string;
  /** Number of records. */
  readonly size: number;

  /** The records themselves, as compact JSON (see record-store.ts). */
  private readonly store: RecordStore;
  /** What the index is made of, as built or as read from an index file (index-file.ts). */
  readonly parts: IndexParts;
  /** Word → records holding it in name, city or evidence. */
  private readonly anyWord: PostingsTable;
  /** Word → records holding it in the name. */
  private readonly nameWord: PostingsTable;
  /** Word → records whose name begins with it. */
  private readonly firstWord: PostingsTable;
  /** Every indexed word, sorted, for prefix expansion (anyWord's keys). */
  private readonly vocabulary: readonly string[];
  /** A hash of each record's folded name, to find exact-name matches without reading records. */
  private readonly nameHash: Uint32Array;
  private readonly byCountry: PostingsTable;
  /** ISO 3166-2 code (country, hyphen, region) → records. */
  private readonly byRegion: PostingsTable;
  private readonly byCity: PostingsTable;
  private readonly byCategory: PostingsTable;
  private readonly byContact: PostingsTable;
  private readonly bySource: PostingsTable;
  /** Bit sets of the long lists, so intersecting with them costs a bit test per candidate. */
  private readonly bits: Map<Postings, Bitset>;
  /** The store holding every bit set: another thread's index of the same parts can use it (IndexOptions.bitsets). */
  readonly bitsetMemory: BitsetStore;
  private readonly bitsOf = (list: Postings): Bitset | undefined => this.bits.get(list);
  /** Room for the lists one query makes, reused by the next. */
  private readonly scratch: ScratchPool;
  /** The unions prefixes stand for, kept for the next query: twice the records' worth at most. */
  private readonly unions: PostingsCache;
  /** Bit sets of kept unions, made when a dense query first needs one (they go with the union). */
  private readonly unionBits = new WeakMap<Postings, Bitset>();
  /** Intersections whose every list holds at least this many positions are made of bit sets. */
  private readonly denseFrom: number;

  /**
   * Indexes a dataset held in memory. `options.bitsetFrom` is for tests (see IndexOptions). For a
   * dataset file, `DirectoryIndex.load` indexes while reading and needs far less memory.
   */
  constructor(dataset: Dataset | { generated: string; parts: IndexParts }, options: IndexOptions = {}) {
    let parts: IndexParts;
    if ('parts' in dataset) parts = dataset.parts;
    else {
      const builder = new IndexBuilder();
      const encoder = new TextEncoder();
      for (const record of dataset.records) builder.add(record, encoder.encode(datasetRecordLine(record)));
      parts = builder.finish();
    }
    this.parts = parts;
    this.generated = dataset.generated;
    this.size = parts.size;
    this.store = parts.store;
    this.anyWord = parts.anyWord;
    this.nameWord = parts.nameWord;
    this.firstWord = parts.firstWord;
    this.vocabulary = parts.anyWord.keys;
    this.nameHash = parts.nameHash;
    this.byCountry = parts.byCountry;
    this.byRegion = parts.byRegion;
    this.byCity = parts.byCity;
    this.byCategory = parts.byCategory;
    this.byContact = parts.byContact;
    this.bySource = parts.bySource;
    const bitsets = bitsetsOf(parts, options.bitsetFrom, options.bitsets);
    this.bits = bitsets.bits;
    this.bitsetMemory = bitsets.memory;
    this.scratch = new ScratchPool(bitsets.memory);
    this.unions = new PostingsCache(2 * Math.max(this.size, 1024), 256);
    this.denseFrom = options.denseFrom ?? Math.max(64, this.size / 64);
  }

  /**
   * Reads a dataset file (see dataset.ts) and indexes it record by record, never holding the
   * records as objects: a million records load in about half the time and a third of the peak
   * memory of `readDataset` followed by the constructor. Rejects with InvalidDatasetError.
   */
  static async load(body: ReadableStream<Uint8Array>, options: IndexOptions = {}): Promise<{ index: DirectoryIndex; header: DatasetHeader }> {
    const { header, records } = await streamDataset(body);
    const builder = new IndexBuilder();
    for await (const { record, json } of records) builder.add(record, json);
    return { index: new DirectoryIndex({ generated: header.generated, parts: builder.finish() }, options), header };
  }

  /** The record with this id, if the directory has one. */
  get(id: string): FactoryRecord | undefined {
    const position = this.position(id);
    return position < 0 ? undefined : this.store.get(position);
  }

  /** The position of the record with this id, or -1. */
  position(id: string): number {
    // Records are in id order: a binary search needs no second copy of a million ids.
    let low = 0;
    let high = this.size;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const midId = this.store.id(mid);
      if (midId === id) return mid;
      if (midId < id) low = mid + 1;
      else high = mid;
    }
    return -1;
  }

  /**
   * The record at `position` as JSON bytes, exactly `JSON.stringify` of what `get` returns (records
   * are stored that way): new bytes each call.
   */
  recordJson(position: number): Uint8Array {
    return this.store.bytes(position);
  }

  /** The length in bytes of `recordJson(position)`. */
  recordLength(position: number): number {
    return this.store.byteLengthOf(position);
  }

  /** Writes `recordJson(position)` into `out` at `at`, without making it on its own; returns where it ends. */
  recordInto(position: number, out: Uint8Array, at: number): number {
    return this.store.decodeInto(position, out, at);
  }

  /** Every record in id order, read one at a time. */
  *records(): Generator<FactoryRecord> {
    for (let i = 0; i < this.size; i++) yield this.store.get(i);
  }

  /** Counts by country, category, contact kind and source, and the dataset's date. */
  stats(): DirectoryStats {
    return {
      dataset_date: this.generated,
      total: this.size,
      by_country: countsOf(this.byCountry),
      by_category: countsOf(this.byCategory, CATEGORIES),
      by_contact: countsOf(this.byContact, CONTACT_KINDS),
      by_source: countsOf(this.bySource),
    };
  }

  /** One page of the records matching `query`, in rank order (see the module comment). */
  search(query: SearchQuery): SearchResult {
    const { total, next_offset, positions } = this.page(query);
    return { total, next_offset, factories: positions.map((p) => this.store.get(p)) };
  }

  /** `search`, with the page as record positions instead of records. */
  page(query: SearchQuery): SearchPage {
    this.scratch.reset();
    this.unions.settle();
    const filters = this.filterLists(query);
    const terms = words(query.q ?? '');
    // Tiers in rank order, each a superset of the one before (the page takes from each what the
    // earlier ones did not hold); all lists, or all dense sets.
    let ranked: RankedTiers;
    if (terms.length === 0) {
      // No words (absent, or only punctuation): every record passes, in id order.
      if (filters.length === 0) ranked = madeTiers([this.all()]);
      else ranked = madeTiers([this.isDense(filters) ? this.and(filters) : intersectAll(filters, this.bitsOf, this.scratch.alloc)]);
    } else {
      ranked = this.rankedTiers(terms, filters);
    }
    const { total } = ranked;
    const page: number[] = [];
    let skip = query.offset;
    let previous: Tier = EMPTY;
    for (const make of ranked.tiers) {
      if (page.length >= query.limit) break;
      const tier = make();
      const own = sizeOf(tier) - sizeOf(previous);
      if (skip >= own) skip -= own;
      else {
        page.push(...this.window(tier, previous, skip, query.limit - page.length));
        skip = 0;
      }
      previous = tier;
    }
    const end = query.offset + page.length;
    return { total, next_offset: end < total && page.length > 0 ? end : null, positions: page };
  }

  /** Up to `wanted` positions of `tier` not in `previous` (the tier before it), skipping `skip`. */
  private window(tier: Tier, previous: Tier, skip: number, wanted: number): number[] {
    if (!(tier instanceof Int32Array)) {
      return bitsWindow(tier.bits, sizeOf(previous) === 0 ? undefined : (previous as DenseSet).bits, skip, wanted);
    }
    if (sizeOf(previous) === 0) return Array.from(tier.subarray(skip, skip + wanted));
    return differenceWindow(tier, previous as Postings, skip, wanted);
  }

  /** True when intersecting `lists` is cheaper on bit sets: two or more, each long. */
  private isDense(lists: readonly Postings[]): boolean {
    return lists.length >= 2 && lists.every((list) => list.length >= this.denseFrom);
  }

  /** `list` as a bit set: its own (long lists), its union's, or one made for this query. */
  private bitsFor(list: Postings): Bitset {
    const own = this.bits.get(list) ?? this.unionBits.get(list);
    if (own !== undefined) return own;
    if (this.unions.holds(list)) {
      const bits = toBitset(list, this.size);
      this.unionBits.set(list, bits);
      return bits;
    }
    return bitsInto(list, this.scratch.allocBits((this.size + 31) >>> 5));
  }

  /** The positions in every one of `sets` (lists or dense sets), as a dense set. */
  private and(sets: readonly (Postings | DenseSet)[]): DenseSet {
    if (sets.some((set) => sizeOf(set) === 0)) return EMPTY_DENSE;
    const bits = sets.map((set) => (set instanceof Int32Array ? this.bitsFor(set) : set.bits));
    const out = this.scratch.allocBits((this.size + 31) >>> 5);
    // Three at a time where there are three: one pass over the words instead of two.
    let size = bits.length >= 3 ? andBits3(bits[0]!, bits[1]!, bits[2]!, out) : andBits(bits[0]!, bits[1] ?? bits[0]!, out);
    for (let k = 3; k < bits.length && size > 0; k += 2) {
      size = k + 1 < bits.length ? andBits3(out, bits[k]!, bits[k + 1]!, out) : andBits(out, bits[k]!, out);
    }
    return { bits: out, size };
  }

  private allPositions: Postings | undefined;

  private all(): Postings {
    if (this.allPositions === undefined) {
      this.allPositions = new Int32Array(this.size);
      for (let i = 0; i < this.size; i++) this.allPositions[i] = i;
    }
    return this.allPositions;
  }

  private filterLists(query: SearchQuery): Postings[] {
    const lists: Postings[] = [];
    if (query.country !== undefined) lists.push(this.byCountry.get(query.country) ?? EMPTY);
    if (query.region !== undefined) lists.push(this.byRegion.get(query.region) ?? EMPTY);
    if (query.city !== undefined) lists.push(this.byCity.get(foldPhrase(query.city)) ?? EMPTY);
    if (query.category !== undefined) lists.push(this.byCategory.get(query.category) ?? EMPTY);
    if (query.contact !== undefined) lists.push(this.byContact.get(query.contact) ?? EMPTY);
    return lists;
  }

  /** The words `term` stands for: itself, and for the last query word every word it begins. */
  private expand(term: string, isLast: boolean): string[] {
    if (!isLast || term.length < MIN_PREFIX) return [term];
    const out: string[] = [];
    let low = 0;
    let high = this.vocabulary.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.vocabulary[mid]! < term) low = mid + 1;
      else high = mid;
    }
    for (let i = low; i < this.vocabulary.length && this.vocabulary[i]!.startsWith(term); i++) out.push(this.vocabulary[i]!);
    return out.length > 0 ? out : [term];
  }

  private lookup(map: PostingsTable, expansions: readonly string[]): Postings {
    const lists: Postings[] = [];
    for (const w of expansions) {
      const list = map.get(w);
      if (list !== undefined) lists.push(list);
    }
    if (lists.length <= 1) return lists[0] ?? EMPTY;
    const field = map === this.anyWord ? 'any' : map === this.nameWord ? 'name' : 'first';
    return this.unions.get(`${field}\u0000${expansions.join('\u0000')}`, () => unionAll(lists, this.size, this.scratch.alloc, this.scratch.bits));
  }

  /**
   * The nested tiers, best first: exact name; name beginning with the first word and holding
   * every word; name holding every word; the same with the last word completed as a prefix;
   * anywhere (name, city, evidence).
   */
  private rankedTiers(terms: readonly string[], filters: readonly Postings[]): RankedTiers {
    const last = terms.length - 1;
    const expansions = terms.map((t, i) => this.expand(t, i === last));
    const inputs = [...expansions.map((e) => this.lookup(this.anyWord, e)), ...filters];
    let anywhere: Postings;
    if (this.isDense(inputs)) {
      const dense = this.and(inputs);
      // Still large: the narrower tiers are made of bit sets too. Small now: lists are cheaper.
      if (dense.size >= this.denseFrom) return this.denseTiers(terms, expansions, dense);
      anywhere = listOf(dense.bits, dense.size, this.scratch.alloc);
    } else {
      anywhere = intersectAll(inputs, this.bitsOf, this.scratch.alloc);
    }
    if (anywhere.length === 0) return madeTiers([EMPTY]);
    // Each name tier is a subset of the one after it, and a word in the name is also in
    // "anywhere". With one word and no filter the tiers are the posting lists themselves.
    const simple = terms.length === 1 && filters.length === 0;
    const completed = simple
      ? this.lookup(this.nameWord, expansions[0]!)
      : intersectAll([anywhere, ...expansions.map((e) => this.lookup(this.nameWord, e))], this.bitsOf, this.scratch.alloc);
    const expanded = this.isExpanded(terms, expansions);
    const exactLast = this.nameWord.get(terms[last]!) ?? EMPTY;
    const whole = !expanded ? completed : simple ? exactLast : intersectAll([completed, exactLast], this.bitsOf, this.scratch.alloc);
    const first = this.firstWord.get(terms[0]!) ?? EMPTY;
    const startsWith = simple ? first : whole.length === 0 ? EMPTY : intersectAll([whole, first], this.bitsOf, this.scratch.alloc);
    return madeTiers([Int32Array.from(this.exactNames(terms, startsWith)), startsWith, whole, completed, anywhere]);
  }

  /**
   * The tiers of `rankedTiers` as dense sets, when even the widest holds many records. Each is
   * made from `anywhere` and the sets that narrow it, when the page reaches it: a first page
   * usually fills from the narrowest tiers, and each tier is a pass over a million bits.
   */
  private denseTiers(terms: readonly string[], expansions: readonly string[][], anywhere: DenseSet): RankedTiers {
    const names = expansions.map((e) => this.lookup(this.nameWord, e));
    const exactLast = this.isExpanded(terms, expansions) ? [this.nameWord.get(terms[terms.length - 1]!) ?? EMPTY] : [];
    const completed = once(() => this.and([anywhere, ...names]));
    const whole = exactLast.length === 0 ? completed : once(() => this.and([anywhere, ...names, ...exactLast]));
    const startsWith = once(() => this.and([anywhere, ...names, ...exactLast, this.firstWord.get(terms[0]!) ?? EMPTY]));
    const exact = (): DenseSet => {
      const { bits, size } = startsWith();
      const list = size === 0 ? [] : this.exactNames(terms, listOf(bits, size, this.scratch.alloc));
      return list.length === 0 ? EMPTY_DENSE : { bits: bitsInto(Int32Array.from(list), this.scratch.allocBits(bits.length)), size: list.length };
    };
    return { total: anywhere.size, tiers: [exact, startsWith, whole, completed, () => anywhere] };
  }

  /** True when the last word stands for more than itself (it was completed as a prefix). */
  private isExpanded(terms: readonly string[], expansions: readonly string[][]): boolean {
    const last = expansions[expansions.length - 1]!;
    return last.length > 1 || last[0] !== terms[terms.length - 1];
  }

  /** The candidates whose folded name is exactly the query's words. */
  private exactNames(terms: readonly string[], candidates: Postings): number[] {
    const phrase = terms.join(' ');
    const hash = hashPhrase(phrase);
    const exact: number[] = [];
    for (const p of candidates) {
      // The hash rules out nearly every candidate; the few left are read to be sure.
      if (this.nameHash[p] === hash && foldPhrase(this.store.get(p).name) === phrase) exact.push(p);
    }
    return exact;
  }
}
