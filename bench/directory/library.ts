/**
 * The directory's own index side by side with a maintained in-memory search library, MiniSearch,
 * on the same records: build time, memory, and the time of the same queries (same words, same
 * filters, same page). Each engine is built and queried in a process of its own (this file, run
 * with `--engine`), so that one's memory and collections do not weigh on the other's figures.
 *
 * Matching is made as alike as the library allows: the same words (the directory's folding and
 * word rules, text.ts, as MiniSearch's tokenizer), every word required, the last one completed as
 * a prefix from three letters; filters as MiniSearch's `filter` on stored fields; a page as the
 * slice of its results. MiniSearch ranks by BM25 where the directory ranks by tiers, so the order
 * of a page differs; the records found are the same.
 */
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import MiniSearch from 'minisearch';
import { fileDataSource, nodeSha256 } from '../../directory/adapter/node-data.ts';
import { streamDataset } from '../../directory/dataset.ts';
import { indexSource } from '../../directory/http/data-source.ts';
import type { Category, ContactKind } from '../../directory/record.ts';
import type { SearchQuery } from '../../directory/search.ts';
import { foldPhrase, words } from '../../directory/text.ts';
import { percentile } from '../lib/timing.ts';

export type Engine = 'directory' | 'minisearch';
export const ENGINES: readonly Engine[] = ['directory', 'minisearch'];

/** One query case: its name, and the paths it takes in turn (one, or a rotation). */
export interface LibraryCase {
  readonly name: string;
  readonly paths: readonly string[];
}

export interface EngineCaseResult {
  readonly name: string;
  readonly queries: number;
  readonly medianMs: number;
  readonly p99Ms: number;
  /** `total` of the first query: the engines must agree. */
  readonly total: number;
}

export interface EngineResult {
  readonly engine: Engine;
  readonly buildSeconds: number;
  /** Resident memory, JavaScript heap and array buffers (off the heap) once built, after a full collection. */
  readonly rssMb: number;
  readonly heapMb: number;
  readonly arrayBuffersMb?: number;
  readonly cases: readonly EngineCaseResult[];
}

/** The query of a search path (`/api/v1/factories?...`), as the router validates it. */
export function queryOf(path: string): SearchQuery {
  const params = new URL(path, 'http://x').searchParams;
  const text = (name: string): string | undefined => params.get(name) ?? undefined;
  return {
    ...(text('q') !== undefined ? { q: text('q')! } : {}),
    ...(text('country') !== undefined ? { country: text('country')! } : {}),
    ...(text('city') !== undefined ? { city: text('city')! } : {}),
    ...(text('category') !== undefined ? { category: text('category') as Category } : {}),
    ...(text('contact') !== undefined ? { contact: text('contact') as ContactKind } : {}),
    limit: Number(params.get('limit') ?? 20),
    offset: Number(params.get('offset') ?? 0),
  };
}

/** A search engine as this comparison drives it: a page of a query, and how many records match. */
interface Searcher {
  search(query: SearchQuery): { total: number; page: readonly number[] };
}

async function buildDirectory(path: string): Promise<Searcher> {
  // The whole build from the dataset file, as a server without its index file does.
  const { index } = await indexSource(fileDataSource(path), nodeSha256);
  return {
    search: (query) => {
      const { total, positions } = index.page(query);
      return { total, page: positions };
    },
  };
}

interface Doc {
  id: number;
  name: string;
  city: string;
  evidence: string;
  country: string;
  cityKey: string;
  categories: readonly string[];
  contacts: readonly string[];
}

async function buildMiniSearch(path: string): Promise<Searcher> {
  const mini = new MiniSearch<Doc>({
    fields: ['name', 'city', 'evidence'],
    storeFields: ['country', 'cityKey', 'categories', 'contacts'],
    // The directory's words: folded, split on anything but letters and digits, CJK one by one.
    tokenize: (text) => words(text),
    processTerm: (term) => term,
  });
  const { records } = await streamDataset(Readable.toWeb(createReadStream(path, { highWaterMark: 1 << 20 })) as ReadableStream<Uint8Array>);
  let id = 0;
  for await (const { record } of records) {
    mini.add({
      id: id++,
      name: record.name,
      city: record.city ?? '',
      evidence: record.category_evidence.map((e) => `${e.category} ${e.value} ${e.label}`).join(' '),
      country: record.country,
      cityKey: record.city === null ? '' : foldPhrase(record.city),
      categories: record.categories,
      contacts: [...new Set(record.contacts.map((c) => c.kind))],
    });
  }
  return {
    search: (query) => {
      const city = query.city === undefined ? undefined : foldPhrase(query.city);
      const filter = (r: Record<string, unknown>): boolean =>
        (query.country === undefined || r.country === query.country) &&
        (city === undefined || r.cityKey === city) &&
        (query.category === undefined || (r.categories as string[]).includes(query.category)) &&
        (query.contact === undefined || (r.contacts as string[]).includes(query.contact));
      const terms = words(query.q ?? '');
      const hasFilter = query.country !== undefined || city !== undefined || query.category !== undefined || query.contact !== undefined;
      const results =
        terms.length === 0
          ? mini.search(MiniSearch.wildcard, hasFilter ? { filter } : {})
          : mini.search(terms.join(' '), {
              combineWith: 'AND',
              prefix: (term, i, all) => i === all.length - 1 && term.length >= 3,
              ...(hasFilter ? { filter } : {}),
            });
      return { total: results.length, page: results.slice(query.offset, query.offset + query.limit).map((r) => r.id as number) };
    },
  };
}

/** Builds `engine` over the dataset at `path` and times `cases`, `perCase` queries each (fewer past `budgetMs`). */
async function runEngine(engine: Engine, path: string, cases: readonly LibraryCase[], perCase: number, budgetMs: number): Promise<EngineResult> {
  const started = performance.now();
  const searcher = engine === 'directory' ? await buildDirectory(path) : await buildMiniSearch(path);
  const buildSeconds = (performance.now() - started) / 1000;
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const memory = process.memoryUsage();
  const results: EngineCaseResult[] = [];
  for (const c of cases) {
    const queries = c.paths.map(queryOf);
    const total = searcher.search(queries[0]!).total;
    for (let i = 0; i < Math.min(5, perCase); i++) searcher.search(queries[queries.length - 1 - (i % queries.length)]!);
    const times: number[] = [];
    const caseStart = performance.now();
    for (let i = 0; i < perCase && (i < 10 || performance.now() - caseStart < budgetMs); i++) {
      const t = performance.now();
      searcher.search(queries[i % queries.length]!);
      times.push(performance.now() - t);
    }
    results.push({ name: c.name, queries: times.length, medianMs: percentile(times, 50), p99Ms: percentile(times, 99), total });
  }
  return { engine, buildSeconds, rssMb: memory.rss / 1e6, heapMb: memory.heapUsed / 1e6, arrayBuffersMb: memory.arrayBuffers / 1e6, cases: results };
}

/** Runs one engine in a process of its own (with room for the library's heap) and reads its result. */
export function compareEngine(engine: Engine, path: string, cases: readonly LibraryCase[], perCase: number, budgetMs: number): Promise<EngineResult> {
  const args = ['--expose-gc', '--max-old-space-size=12000', fileURLToPath(import.meta.url), engine, path, JSON.stringify({ cases, perCase, budgetMs })];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`the ${engine} comparison failed: ${stderr.trim() || error.message}`));
      else resolve(JSON.parse(stdout) as EngineResult);
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [engine, path, json] = process.argv.slice(2) as [Engine, string, string];
  const { cases, perCase, budgetMs } = JSON.parse(json) as { cases: LibraryCase[]; perCase: number; budgetMs: number };
  process.stdout.write(JSON.stringify(await runEngine(engine, path, cases, perCase, budgetMs)));
}
