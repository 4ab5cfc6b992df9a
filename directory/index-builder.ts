/**
 * Builds the parts of a DirectoryIndex from records fed one at a time, so a dataset can be
 * indexed while it is read (`DirectoryIndex.load`) without a million record objects alive at
 * once. Records normally arrive in id order, as every writer of the format writes them; if they
 * do not, the positions are renumbered in id order at the end.
 */

import { type BitsetStore, newBitsetStore, storeBuffer } from './bitset-simd.ts';
import { InvalidDatasetError } from './dataset.ts';
import { type Bitset, type Postings, PostingsBuilder, type PostingsTable, setBits } from './postings.ts';
import { type FactoryRecord, regionCode } from './record.ts';
import { type RecordStore, RecordStoreBuilder } from './record-store.ts';
import { words } from './text.ts';

/** What a DirectoryIndex is made of (see the fields of DirectoryIndex). */
export interface IndexParts {
  readonly size: number;
  readonly store: RecordStore;
  readonly anyWord: PostingsTable;
  readonly nameWord: PostingsTable;
  readonly firstWord: PostingsTable;
  readonly nameHash: Uint32Array;
  readonly byCountry: PostingsTable;
  /** ISO 3166-2 code → records: `US-OH` for a record of country US and region OH. */
  readonly byRegion: PostingsTable;
  readonly byCity: PostingsTable;
  readonly byCategory: PostingsTable;
  readonly byContact: PostingsTable;
  readonly bySource: PostingsTable;
}

/** The tables of IndexParts, by name: what an index file holds besides the records and name hashes. */
export const TABLES = ['anyWord', 'nameWord', 'firstWord', 'byCountry', 'byRegion', 'byCity', 'byCategory', 'byContact', 'bySource'] as const;

/** The tables whose long lists also get bit sets (every one a search intersects). */
const SEARCHED: readonly (typeof TABLES)[number][] = ['anyWord', 'nameWord', 'firstWord', 'byCountry', 'byRegion', 'byCity', 'byCategory', 'byContact'];

// Bytes before the first bit set: the store's length word, padded to a vector's 16 bytes.
const BITSETS_HEADER = 16;

/**
 * The bit sets of the long lists of `parts`' searched tables: a list of at least `bitsetFrom`
 * positions (default a 64th of the records, at least 64) is at most half its bit set's size already.
 * They are made in one store, shared where the runtime can share memory, so that the threads of a
 * server keep one copy (tens of MB at a million records): a shared WebAssembly memory, where their
 * intersections run in SIMD (bitset-simd.ts), else a SharedArrayBuffer. Given `memory`, made so for
 * the same parts and `bitsetFrom`, the bit sets are views of it and nothing is computed.
 */
export function bitsetsOf(parts: IndexParts, bitsetFrom?: number, memory?: BitsetStore): { bits: Map<Postings, Bitset>; memory: BitsetStore } {
  const long = bitsetFrom ?? Math.max(64, parts.size / 64);
  const lists = SEARCHED.flatMap((name) => parts[name].keep(long));
  const words = (parts.size + 31) >>> 5;
  const bytes = BITSETS_HEADER + lists.length * words * 4;
  const made = memory ?? newBitsetStore(bytes);
  const buffer = storeBuffer(made);
  // The store's first word says how many bytes of bit sets it holds: a memory grows past them by
  // the threads' scratch pages, so its length alone cannot tell another index's bit sets.
  const header = new Int32Array(buffer, 0, Math.min(1, buffer.byteLength >> 2));
  if (memory === undefined) header[0] = bytes;
  else if (header[0] !== bytes) throw new RangeError('the bit sets given were made for another index');
  const bits = new Map<Postings, Bitset>();
  lists.forEach((list, i) => {
    const set = new Uint32Array(buffer, BITSETS_HEADER + i * words * 4, words);
    if (memory === undefined) setBits(set, list);
    bits.set(list, set);
  });
  return { bits, memory: made };
}

export interface IndexOptions {
  /**
   * The length from which a posting list also gets a bit set (default a 64th of the records, at
   * least 64): such a list is at most half the records' bit set's size in memory already.
   */
  bitsetFrom?: number;
  /**
   * The length from which every list of an intersection must be for the search to intersect bit
   * sets rather than lists (default a 64th of the records, at least 64).
   */
  denseFrom?: number;
  /** The bit sets' memory of an index of the same parts (`DirectoryIndex.bitsetMemory`), used in place: see `bitsetsOf`. */
  bitsets?: BitsetStore;
}

/** FNV-1a over the UTF-16 code units: a cheap fingerprint of a folded name. */
export function hashPhrase(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function memo<K, V>(f: (key: K) => V): (key: K) => V {
  const cache = new Map<K, V>();
  return (key) => {
    let value = cache.get(key);
    if (value === undefined) {
      value = f(key);
      cache.set(key, value);
    }
    return value;
  };
}

export class IndexBuilder {
  private readonly store = new RecordStoreBuilder();
  private readonly anyWord = new PostingsBuilder();
  private readonly nameWord = new PostingsBuilder();
  private readonly firstWord = new PostingsBuilder();
  private readonly country = new PostingsBuilder();
  private readonly region = new PostingsBuilder();
  private readonly city = new PostingsBuilder();
  private readonly category = new PostingsBuilder();
  private readonly contact = new PostingsBuilder();
  private readonly source = new PostingsBuilder();
  private nameHash = new Uint32Array(1024);
  private previousId = '';
  private sorted = true;
  // Cities and evidence repeat across records: fold each once.
  private readonly cityWords = memo((c: string) => words(c));
  private readonly evidenceWords = memo((text: string) => words(text));

  /** Adds a (validated) record; `json` is its JSON as DatasetEntry.json describes, kept as RecordStore.append says. */
  add(record: FactoryRecord, json: Uint8Array): void {
    const i = this.store.append(json);
    if (record.id <= this.previousId) this.sorted = false;
    this.previousId = record.id;
    if (i === this.nameHash.length) {
      const grown = new Uint32Array(i * 2);
      grown.set(this.nameHash);
      this.nameHash = grown;
    }
    const name = words(record.name);
    this.nameHash[i] = hashPhrase(name.join(' '));
    if (name.length > 0) this.firstWord.add(name[0]!, i);
    for (const w of name) {
      this.nameWord.add(w, i);
      this.anyWord.add(w, i);
    }
    if (record.city !== null) {
      const c = this.cityWords(record.city);
      for (const w of c) this.anyWord.add(w, i);
      this.city.add(c.join(' '), i);
    }
    for (const e of record.category_evidence) {
      for (const w of this.evidenceWords(`${e.category} ${e.value} ${e.label}`)) this.anyWord.add(w, i);
    }
    this.country.add(record.country, i);
    if (record.region !== null) this.region.add(regionCode(record.country, record.region), i);
    for (const c of record.categories) this.category.add(c, i);
    for (const c of record.contacts) this.contact.add(c.kind, i);
    for (const s of record.sources) this.source.add(s.key, i);
  }

  /** The finished parts. The builder is spent. */
  finish(): IndexParts {
    let store = this.store.finish();
    const size = store.size;
    let nameHash: Uint32Array = this.nameHash.slice(0, size);
    const tables = {
      anyWord: this.anyWord.build(),
      nameWord: this.nameWord.build(),
      firstWord: this.firstWord.build(),
      byCountry: this.country.build(),
      byRegion: this.region.build(),
      byCity: this.city.build(),
      byCategory: this.category.build(),
      byContact: this.contact.build(),
      bySource: this.source.build(),
    };
    if (!this.sorted) ({ store, nameHash } = renumber(store, nameHash, Object.values(tables)));
    return { size, store, nameHash, ...tables };
  }
}

/** Puts positions in id order (records came out of order); refuses a repeated id. */
function renumber(store: RecordStore, nameHash: Uint32Array, tables: PostingsTable[]): { store: RecordStore; nameHash: Uint32Array } {
  const size = store.size;
  const ids = Array.from({ length: size }, (_, i) => store.id(i));
  const order = Int32Array.from({ length: size }, (_, i) => i).sort((a, b) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0));
  for (let k = 1; k < size; k++) {
    if (ids[order[k]!] === ids[order[k - 1]!]) {
      throw new InvalidDatasetError('duplicate-id', `the dataset holds ${ids[order[k]!]} more than once`);
    }
  }
  const rank = new Int32Array(size);
  for (let k = 0; k < size; k++) rank[order[k]!] = k;
  for (const table of tables) {
    const { positions, offsets } = table.parts;
    for (let j = 0; j < positions.length; j++) positions[j] = rank[positions[j]!]!;
    for (let k = 0; k + 1 < offsets.length; k++) positions.subarray(offsets[k]!, offsets[k + 1]!).sort();
  }
  const renumbered = new Uint32Array(size);
  for (let k = 0; k < size; k++) renumbered[k] = nameHash[order[k]!]!;
  return { store: store.permute(order), nameHash: renumbered };
}
