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
 * and within a tier by id. Filters (country, city, category, contact) combine with AND.
 */
import { CATEGORIES, CONTACT_KINDS, type Category, type ContactKind, type FactoryRecord } from './record.ts';
import { type Dataset, type DatasetHeader, datasetRecordLine, streamDataset } from './dataset.ts';
import { hashPhrase, IndexBuilder, type IndexOptions, type IndexParts } from './index-builder.ts';
import type { RecordStore } from './record-store.ts';
import {
  type Bitset,
  differenceWindow,
  EMPTY,
  intersectAll,
  type Postings,
  PostingsCache,
  ScratchPool,
  unionAll,
} from './postings.ts';
import { foldPhrase, words } from './text.ts';

/** A search, already validated by the caller (limit 1..100, offset >= 0, enums checked). */
export interface SearchQuery {
  q?: string;
  /** ISO 3166-1 alpha-2, upper case. */
  country?: string;
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

// A query word this short only matches whole words: expanding "a" or "co" to every word it
// begins would match most of the directory and tell the user nothing.
const MIN_PREFIX = 3;

function sortedCounts(entries: Iterable<[string, number]>): Record<string, number> {
  return Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function countsOf(map: Map<string, Postings>, keys: readonly string[] = []): Record<string, number> {
  const counts = new Map<string, number>(keys.map((k) => [k, 0]));
  for (const [key, list] of map) counts.set(key, list.length);
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
  /** Word → records holding it in name, city or evidence. */
  private readonly anyWord: Map<string, Postings>;
  /** Word → records holding it in the name. */
  private readonly nameWord: Map<string, Postings>;
  /** Word → records whose name begins with it. */
  private readonly firstWord: Map<string, Postings>;
  /** Every indexed word, sorted, for prefix expansion. */
  private readonly vocabulary: string[];
  /** A hash of each record's folded name, to find exact-name matches without reading records. */
  private readonly nameHash: Uint32Array;
  private readonly byCountry: Map<string, Postings>;
  private readonly byCity: Map<string, Postings>;
  private readonly byCategory: Map<string, Postings>;
  private readonly byContact: Map<string, Postings>;
  private readonly bySource: Map<string, Postings>;
  /** Bit sets of the long lists, so intersecting with them costs a bit test per candidate. */
  private readonly bits: Map<Postings, Bitset>;
  private readonly bitsOf = (list: Postings): Bitset | undefined => this.bits.get(list);
  /** Room for the lists one query makes, reused by the next. */
  private readonly scratch = new ScratchPool();
  /** The unions prefixes stand for, kept for the next query: twice the records' worth at most. */
  private readonly unions: PostingsCache;

  /**
   * Indexes a dataset held in memory. `options.bitsetFrom` is for tests (see IndexOptions). For a
   * dataset file, `DirectoryIndex.load` indexes while reading and needs far less memory.
   */
  constructor(dataset: Dataset | { generated: string; parts: IndexParts }, options: IndexOptions = {}) {
    let parts: IndexParts;
    if ('parts' in dataset) parts = dataset.parts;
    else {
      const builder = new IndexBuilder();
      for (const record of dataset.records) builder.add(record, datasetRecordLine(record));
      parts = builder.finish(options);
    }
    this.generated = dataset.generated;
    this.size = parts.size;
    this.store = parts.store;
    this.anyWord = parts.anyWord;
    this.nameWord = parts.nameWord;
    this.firstWord = parts.firstWord;
    this.vocabulary = parts.vocabulary;
    this.nameHash = parts.nameHash;
    this.byCountry = parts.byCountry;
    this.byCity = parts.byCity;
    this.byCategory = parts.byCategory;
    this.byContact = parts.byContact;
    this.bySource = parts.bySource;
    this.bits = parts.bits;
    this.unions = new PostingsCache(2 * Math.max(this.size, 1024), 256);
  }

  /**
   * Reads a dataset file (see dataset.ts) and indexes it record by record, never holding the
   * records as objects: a million records load in about half the time and a third of the peak
   * memory of `readDataset` followed by the constructor. Rejects with InvalidDatasetError.
   */
  static async load(
    body: ReadableStream<Uint8Array>,
    options: IndexOptions = {},
  ): Promise<{ index: DirectoryIndex; header: DatasetHeader }> {
    const { header, records } = await streamDataset(body);
    const builder = new IndexBuilder();
    for await (const { record, json } of records) {
      // A line as our writers put it is used as it is; any other spelling is written again.
      const canonical = json.startsWith(`{"id":${JSON.stringify(record.id)},"name":`) ? json : datasetRecordLine(record);
      builder.add(record, canonical);
    }
    return { index: new DirectoryIndex({ generated: header.generated, parts: builder.finish(options) }), header };
  }

  /** The record with this id, if the directory has one. */
  get(id: string): FactoryRecord | undefined {
    // Records are in id order: a binary search needs no second copy of a million ids.
    let low = 0;
    let high = this.size;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const midId = this.store.id(mid);
      if (midId === id) return this.store.get(mid);
      if (midId < id) low = mid + 1;
      else high = mid;
    }
    return undefined;
  }

  /** Every record in id order (for the streamed export), read one at a time. */
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
    this.scratch.reset();
    const filters = this.filterLists(query);
    const terms = words(query.q ?? '');
    // Tiers in rank order: each a sorted list, the later ones supersets of the earlier (the
    // page takes from each what the earlier ones did not hold).
    let tiers: Postings[];
    if (terms.length === 0) {
      // No words (absent, or only punctuation): every record passes, in id order.
      tiers = [filters.length > 0 ? intersectAll(filters, this.bitsOf, this.scratch.alloc) : this.all()];
    } else {
      tiers = this.rankedTiers(terms, filters);
    }
    const total = tiers[tiers.length - 1]!.length;
    const page: number[] = [];
    let skip = query.offset;
    let previous: Postings = EMPTY;
    for (const tier of tiers) {
      const own = tier.length - previous.length;
      if (page.length >= query.limit) break;
      if (skip >= own) skip -= own;
      else {
        const wanted = query.limit - page.length;
        const positions =
          previous.length === 0 ? Array.from(tier.subarray(skip, skip + wanted)) : differenceWindow(tier, previous, skip, wanted);
        page.push(...positions);
        skip = 0;
      }
      previous = tier;
    }
    const end = query.offset + page.length;
    return {
      total,
      next_offset: end < total && page.length > 0 ? end : null,
      factories: page.map((p) => this.store.get(p)),
    };
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

  private lookup(map: Map<string, Postings>, expansions: readonly string[]): Postings {
    const lists: Postings[] = [];
    for (const w of expansions) {
      const list = map.get(w);
      if (list !== undefined) lists.push(list);
    }
    if (lists.length <= 1) return lists[0] ?? EMPTY;
    const field = map === this.anyWord ? 'any' : map === this.nameWord ? 'name' : 'first';
    return this.unions.get(`${field}\u0000${expansions.join('\u0000')}`, () =>
      unionAll(lists, this.size, this.scratch.alloc, this.scratch.bits),
    );
  }

  /**
   * The nested tiers, best first: exact name; name beginning with the first word and holding
   * every word; name holding every word; the same with the last word completed as a prefix;
   * anywhere (name, city, evidence).
   */
  private rankedTiers(terms: readonly string[], filters: readonly Postings[]): Postings[] {
    const last = terms.length - 1;
    const expansions = terms.map((t, i) => this.expand(t, i === last));
    const anywhere = intersectAll([...expansions.map((e) => this.lookup(this.anyWord, e)), ...filters], this.bitsOf, this.scratch.alloc);
    if (anywhere.length === 0) return [EMPTY];
    // Each name tier is a subset of the one after it, and a word in the name is also in
    // "anywhere". With one word and no filter the tiers are the posting lists themselves.
    const simple = terms.length === 1 && filters.length === 0;
    const completed = simple
      ? this.lookup(this.nameWord, expansions[0]!)
      : intersectAll([anywhere, ...expansions.map((e) => this.lookup(this.nameWord, e))], this.bitsOf, this.scratch.alloc);
    const expanded = expansions[last]!.length > 1 || expansions[last]![0] !== terms[last];
    const exactLast = this.nameWord.get(terms[last]!) ?? EMPTY;
    const whole = !expanded ? completed : simple ? exactLast : intersectAll([completed, exactLast], this.bitsOf, this.scratch.alloc);
    const first = this.firstWord.get(terms[0]!) ?? EMPTY;
    const startsWith = simple ? first : whole.length === 0 ? EMPTY : intersectAll([whole, first], this.bitsOf, this.scratch.alloc);
    const phrase = terms.join(' ');
    const hash = hashPhrase(phrase);
    const exact: number[] = [];
    for (const p of startsWith) {
      // The hash rules out nearly every candidate; the few left are read to be sure.
      if (this.nameHash[p] === hash && foldPhrase(this.store.get(p).name) === phrase) exact.push(p);
    }
    return [Int32Array.from(exact), startsWith, whole, completed, anywhere];
  }
}
