/**
 * The read operations, shared by the HTTP routes and the MCP tools so that both give the same
 * answers: search, one record, statistics. Each body that carries records carries attribution.
 *
 * The HTTP routes take the `…Json` forms: the body's bytes, assembled from the records' stored
 * JSON (search.ts keeps each record as the bytes `JSON.stringify` gives it), so a request never
 * parses a record only to serialize it again. They are byte for byte `JSON.stringify` of the object
 * forms, which the MCP tools use (a test holds the two together).
 */
import type { FactoryRecord } from '../record.ts';
import type { DirectoryStats, SearchQuery, SearchResult } from '../search.ts';
import type { Attribution } from './attribution.ts';
import type { LoadedData } from './data-source.ts';
import { type FixedBody, fixedBody } from './fixed-body.ts';
import { ProblemError } from './problem.ts';

export type SearchBody = SearchResult & { attribution: Attribution };
export type StatsBody = DirectoryStats & { attribution: Attribution };

const encoder = new TextEncoder();

/** searchFactories / search_factories. */
export function searchFactories(data: LoadedData, query: SearchQuery): SearchBody {
  return { ...data.index.search(query), attribution: data.attribution };
}

// What a loaded dataset's bodies share, made once per dataset: a dataset never changes once loaded.
interface Cached {
  /** `],"attribution":{…}}`: the end of every search body. */
  readonly searchTail: Uint8Array;
  stats?: FixedBody;
}
const cache = new WeakMap<LoadedData, Cached>();

function cached(data: LoadedData): Cached {
  let entry = cache.get(data);
  if (entry === undefined) {
    entry = { searchTail: encoder.encode(`],"attribution":${JSON.stringify(data.attribution)}}`) };
    cache.set(data, entry);
  }
  return entry;
}

// Where search bodies are assembled, grown as needed. A Response copies its body when it is made
// (the fetch standard says so, and Node and Deno do), so one buffer serves every request and each
// body costs one allocation, the Response's own, instead of two.
let assembly = new Uint8Array(64 * 1024);

/**
 * searchFactories as the JSON bytes of its body: a view of a buffer the next call overwrites, so
 * make the Response (which copies it) before anything else runs.
 */
export function searchFactoriesJson(data: LoadedData, query: SearchQuery): Uint8Array {
  const { total, next_offset, positions } = data.index.page(query);
  // ASCII only (digits, null, punctuation): as many bytes as characters.
  const head = `{"total":${total},"next_offset":${next_offset},"factories":[`;
  const tail = cached(data).searchTail;
  const index = data.index;
  let length = head.length + Math.max(0, positions.length - 1) + tail.length;
  for (const p of positions) length += index.recordLength(p);
  if (assembly.length < length) assembly = new Uint8Array(Math.max(length, assembly.length * 2));
  const body = assembly.subarray(0, length);
  encoder.encodeInto(head, body);
  let at = head.length;
  for (let i = 0; i < positions.length; i++) {
    if (i > 0) body[at++] = 0x2c; // ,
    at = index.recordInto(positions[i]!, body, at);
  }
  body.set(tail, at);
  return body;
}

/** getFactory / get_factory: the record, or the 404 problem for a well-formed unknown id. */
export function factoryById(data: LoadedData, id: string): FactoryRecord {
  const record = data.index.get(id);
  if (record === undefined) throw notFound(id);
  return record;
}

/** factoryById as the JSON bytes of the record. */
export function factoryByIdJson(data: LoadedData, id: string): Uint8Array {
  const position = data.index.position(id);
  if (position < 0) throw notFound(id);
  return data.index.recordJson(position);
}

function notFound(id: string): ProblemError {
  return new ProblemError('not-found', `the directory has no record ${id}`);
}

/** registryStats / registry_stats. */
export function registryStats(data: LoadedData): StatsBody {
  return { ...data.index.stats(), attribution: data.attribution };
}

/** registryStats as the JSON body, counted once per dataset, with its ETag. */
export function registryStatsJson(data: LoadedData): FixedBody {
  const entry = cached(data);
  return (entry.stats ??= fixedBody(JSON.stringify(registryStats(data))));
}
