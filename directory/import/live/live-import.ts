/**
 * `mesh directory import` without input files: the dataset fetched from the public sources, US
 * EPA FRS (frs-pages.ts) and Wikidata (wikidata-pages.ts), a page at a time (Node: files).
 *
 * Every page fetched is kept in a staging folder beside the dataset (`<out>.import/`), written
 * whole before the next request, so an import stopped by a failure, Ctrl-C or kill -9 resumes
 * where it stopped: running the same command again reads the pages already there and fetches the
 * rest. Only when every page of every source is in does the dataset file change, written whole
 * through a temporary file (dataset-file.ts): a failed or killed import leaves the previous
 * dataset as it was, and a finished one replaces it at once, never a mix. The staging folder is
 * removed once the dataset is written. A row the importers refuse is reported with its source and
 * position and skipped; a page that is not the source's format at all fails the import.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { writeAtomically } from '../../../host-node/atomic-file.ts';
import { fileExists } from '../../../host-node/file-exists.ts';
import { writeMerged } from '../dataset-file.ts';
import { importEpaFrs } from '../epa-frs.ts';
import type { NaicsMap } from '../evidence.ts';
import type { ImportResult } from '../source.ts';
import { importWikidata } from '../wikidata.ts';
import { frsPageUrl, normalizeFrsPage } from './frs-pages.ts';
import { FetchFailedError, type PoliteFetchOptions, politeFetch } from './polite-fetch.ts';
import { industriesQuery, queryTimedOut, readIndustries, SPARQL_JSON, sparqlForm, wikidataQuery } from './wikidata-pages.ts';

export type LiveSource = 'epa-frs' | 'wikidata';
export const LIVE_SOURCES: readonly LiveSource[] = ['epa-frs', 'wikidata'];

export interface LiveImportOptions {
  /** The dataset file to write (merged into, as the file imports do, unless `fresh`). */
  readonly out: string;
  readonly sources: readonly LiveSource[];
  /** The Envirofacts base (frs-pages.ts ENVIROFACTS_BASE) and the SPARQL endpoint. */
  readonly frsBase: string;
  readonly wikidataEndpoint: string;
  /** NAICS codes to fetch from the FRS. */
  readonly naicsCodes: readonly string[];
  /**
   * The codes were chosen (`--naics`), not the map's whole list: the FRS records fetched replace
   * the dataset's FRS evidence for those codes alone, and the FRS records of other codes stay.
   */
  readonly onlyTheseCodes?: boolean;
  readonly naicsMap: NaicsMap;
  /** Rows per FRS page and bindings per Wikidata page. */
  readonly pageSize: number;
  /** YYYY-MM-DD the run is dated by; a resumed run keeps the date its first part recorded. */
  readonly retrieved: string;
  readonly fresh: boolean;
  /** The dataset's date; default the latest retrieval date of its sources. */
  readonly generated?: string | undefined;
  readonly fetch?: PoliteFetchOptions;
}

/** What identifies a run: a resume continues only a run asked for the same way. */
interface Manifest {
  retrieved: string;
  sources: readonly LiveSource[];
  frsBase: string;
  wikidataEndpoint: string;
  naicsCodes: readonly string[];
  pageSize: number;
}

/** One page to fetch: where it comes from, where it is kept, how to read it. */
interface Page {
  readonly source: LiveSource;
  /** Source and position, for progress and problems: `epa-frs NAICS 332710 rows 0-999`. */
  readonly label: string;
  readonly url: string;
  /** A form to POST (a SPARQL query); none: GET. */
  readonly form?: string;
  readonly file: string;
  readonly accept: string;
}

/** A page of records. */
interface RecordPage extends Page {
  read(text: string): ImportResult;
}

/** The staging folder of a dataset file. */
export function stagingDir(out: string): string {
  return join(dirname(out), `${basename(out)}.import`);
}

/** No rows at all: a page past the end may come back empty, header and all. */
const EMPTY: ImportResult = { sources: [], records: [], rows: 0, problems: [] };

const sameRun = (a: Manifest, b: Manifest): boolean => JSON.stringify({ ...a, retrieved: '' }) === JSON.stringify({ ...b, retrieved: '' });

async function readManifest(path: string): Promise<Manifest | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
}

/** A stream of pages: the page whose first row is `first`. A stream ends at its first short page. */
type Stream = (first: number) => RecordPage;

function frsStreams(options: LiveImportOptions, manifest: Manifest, dir: string): Stream[] {
  return manifest.naicsCodes.map((code) => (first) => ({
    source: 'epa-frs',
    label: `epa-frs NAICS ${code} rows ${first}-${first + manifest.pageSize - 1}`,
    url: frsPageUrl(manifest.frsBase, code, first, manifest.pageSize),
    file: join(dir, `epa-frs-${code}-${first}.csv`),
    accept: 'text/csv',
    read: (text) => {
      const result = withUrl(importEpaFrs(normalizeFrsPage(text), { retrieved: manifest.retrieved, naicsMap: options.naicsMap }), manifest.frsBase);
      return options.onlyTheseCodes ? { ...result, scope: { property: 'NAICS_CODE', values: manifest.naicsCodes } } : result;
    },
  }));
}

/** Wikidata's first step (wikidata-pages.ts): the industries whose companies are paged through. */
async function wikidataIndustries(manifest: Manifest, dir: string, options: LiveImportOptions, say: (line: string) => void): Promise<string[]> {
  const page: Page = {
    source: 'wikidata',
    label: 'wikidata industries',
    url: manifest.wikidataEndpoint,
    form: sparqlForm(industriesQuery()),
    file: join(dir, 'wikidata-industries.json'),
    accept: SPARQL_JSON,
  };
  const kept = await fileExists(page.file);
  const text = kept ? await readFile(page.file, 'utf8') : await fetchPage(page, options.fetch, say);
  let industries: string[];
  try {
    industries = readIndustries(text);
  } catch (error) {
    await rm(page.file, { force: true });
    throw new FetchFailedError(`${page.label}: not the source's format: ${(error as Error).message}`);
  }
  say(`${page.label}: ${industries.length} industries name an activity of the directory${kept ? ' (kept from the earlier run)' : ''}`);
  if (industries.length === 0) throw new FetchFailedError('wikidata: no industry names an activity of the directory; nothing written');
  return industries;
}

function wikidataStream(manifest: Manifest, dir: string, industries: readonly string[]): Stream {
  return (offset) => ({
    source: 'wikidata',
    label: `wikidata offset ${offset}`,
    url: manifest.wikidataEndpoint,
    form: sparqlForm(wikidataQuery(industries, manifest.pageSize, offset)),
    file: join(dir, `wikidata-${offset}.json`),
    accept: SPARQL_JSON,
    read: (text) => withUrl(importWikidata(text, { retrieved: manifest.retrieved }), manifest.wikidataEndpoint),
  });
}

/** The source entry names the service the records came from. */
function withUrl(result: ImportResult, url: string): ImportResult {
  return { ...result, sources: result.sources.map((s) => ({ ...s, url })) };
}

/** Runs the import; resolves when the dataset is written, rejects (dataset untouched, pages kept) when it cannot be. */
export async function liveImport(given: LiveImportOptions, say: (line: string) => void): Promise<void> {
  // The hosts this run has reached: one that never answered is not retried (SourceUnreachableError).
  const options: LiveImportOptions = { ...given, fetch: { ...given.fetch, reached: new Set() } };
  const dir = stagingDir(options.out);
  const manifestPath = join(dir, 'manifest.json');
  let manifest: Manifest = {
    retrieved: options.retrieved,
    sources: options.sources,
    frsBase: options.frsBase,
    wikidataEndpoint: options.wikidataEndpoint,
    naicsCodes: options.naicsCodes,
    pageSize: options.pageSize,
  };
  const earlier = await readManifest(manifestPath);
  if (earlier !== undefined && sameRun(earlier, manifest)) {
    manifest = earlier;
    say(`resuming the import begun ${earlier.retrieved} (pages kept in ${dir})`);
  } else {
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await writeAtomically(manifestPath, (file) => file.writeFile(JSON.stringify(manifest)));
  }
  // In source order; Wikidata's stream needs its industries first, asked for when its turn comes.
  const streams: (() => Promise<Stream>)[] = [
    ...(manifest.sources.includes('epa-frs') ? frsStreams(options, manifest, dir).map((stream) => () => Promise.resolve(stream)) : []),
    ...(manifest.sources.includes('wikidata') ? [async () => wikidataStream(manifest, dir, await wikidataIndustries(manifest, dir, options, say))] : []),
  ];
  const results: ImportResult[] = [];
  const bySource = new Map<LiveSource, { rows: number; records: number; problems: number }>();
  for (const next of streams) {
    const stream = await next();
    for (let first = 0; ; first += manifest.pageSize) {
      const page = stream(first);
      const kept = await fileExists(page.file);
      const text = kept ? await readFile(page.file, 'utf8') : await fetchPage(page, options.fetch, say);
      const result = text.trim() === '' ? EMPTY : page.read(text);
      // A page read only in part (an unclosed quote) would pass for a short last page: it fails too.
      const fatal = result.problems.find((p) => p.stopped) ?? (result.rows === 0 ? result.problems[0] : undefined);
      if (fatal !== undefined) {
        await rm(page.file, { force: true });
        throw new FetchFailedError(`${page.label}, line ${fatal.line}: not the source's format: ${fatal.message}`);
      }
      const totals = bySource.get(page.source) ?? { rows: 0, records: 0, problems: 0 };
      totals.rows += result.rows;
      totals.records += result.records.length;
      totals.problems += result.problems.length;
      bySource.set(page.source, totals);
      say(`${page.label}: ${result.rows} rows${kept ? ' (kept from the earlier run)' : ''}; ${page.source} so far ${totals.rows} rows`);
      for (const p of result.problems) say(`  ${page.label}, line ${p.line}: ${p.message} (skipped)`);
      results.push(result);
      if (result.rows < manifest.pageSize) break;
    }
  }
  for (const source of manifest.sources) {
    const totals = bySource.get(source);
    if (totals === undefined || totals.records === 0) {
      // Never write a source's contribution as empty: that would remove all its records.
      throw new FetchFailedError(`${source} gave no records; nothing written`);
    }
    say(`${source}: ${totals.rows} rows, ${totals.problems} skipped, retrieved ${manifest.retrieved}`);
  }
  await writeMerged(options.out, results, { fresh: options.fresh, generated: options.generated }, say);
  await rm(dir, { recursive: true, force: true });
}

/** Fetches a page and keeps it (whole, before the next request), saying what it waits for. */
async function fetchPage(page: Page, options: PoliteFetchOptions = {}, say: (line: string) => void): Promise<string> {
  const request =
    page.form === undefined ? { headers: { accept: page.accept } } : { headers: { accept: page.accept }, form: page.form, stopRetrying: queryTimedOut };
  const text = await politeFetch(page.url, request, {
    ...options,
    onRetry: (reason, waitMs) => say(`${page.label}: ${reason}; retrying in ${Math.ceil(waitMs / 1000)} s`),
  });
  await writeAtomically(page.file, (file) => file.writeFile(text));
  return text;
}
