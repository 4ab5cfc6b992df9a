/**
 * `mesh directory import`: builds or updates the directory's dataset, fetched live from the public
 * sources (live/live-import.ts) or read from source files (Node only: it reads and writes files;
 * the importers it calls are runtime-neutral).
 */
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { removeStaleTemporaries } from '../../host-node/atomic-file.ts';
import { type Input as CommandInput, command, flag, list, option, UsageError } from '../../host-node/cli/command.ts';
import { runCommand } from '../../host-node/cli/run.ts';
import { integer, oneOf } from '../../host-node/cli/values.ts';
import { fileExists } from '../../host-node/file-exists.ts';
import { DEFAULT_SHARED_ROOT } from '../../host-node/shared-data.ts';
import { defaultDatasetPath } from '../adapter/dataset-path.ts';
import { indexPathOf } from '../adapter/index-cache.ts';
import { isIsoDate } from '../record.ts';
import { writeMerged } from './dataset-file.ts';
import { decodeFrsExport, importEpaFrs } from './epa-frs.ts';
import { NaicsMap } from './evidence.ts';
import { importExhibitors } from './exhibitors.ts';
import { ENVIROFACTS_BASE } from './live/frs-pages.ts';
import { LIVE_SOURCES, type LiveSource, liveImport, stagingDir } from './live/live-import.ts';
import { SourceUnreachableError, userAgent } from './live/polite-fetch.ts';
import { WIKIDATA_SPARQL_ENDPOINT } from './live/wikidata-pages.ts';
import type { ImportResult } from './source.ts';
import { importWikidata } from './wikidata.ts';

export const DEFAULT_NAICS_MAP = new URL('../data/naics-category-map.json', import.meta.url);
/**
 * The last line of a finished import: what a running `mesh directory` does with the new file. It
 * keeps a dataset it has loaded (router.ts: loaded once); without one, it retries the load with a
 * back-off of at most 16 s (DEFAULT_LIMITS.retry).
 */
export const SERVED_NOTE =
  'A running `mesh directory` that has no dataset yet serves this one within 16 s; one already serving a dataset keeps it until restarted.';
// Problems printed per input before the rest are only counted.
const SHOWN_PROBLEMS = 50;

interface Input {
  kind: 'epa' | 'wikidata' | 'exhibitors';
  path: string;
}

interface LiveArgs {
  sources: LiveSource[];
  naics: string[];
  frsUrl: string;
  wikidataUrl: string;
  pageSize: number;
  attempts: number;
  contact: string | undefined;
}

interface ImportArgs {
  out: string;
  /** Files to import; none: fetch from the public sources (`live`). */
  inputs: Input[];
  live: LiveArgs;
  retrieved?: string;
  generated?: string;
  naicsMap?: string;
  fresh: boolean;
}

const isoDate = (text: string, name: string): string => {
  if (!isIsoDate(text)) throw new UsageError(`${name} takes a date YYYY-MM-DD, got ${JSON.stringify(text)}`);
  return text;
};

function naicsCode(text: string, name: string): string {
  if (!/^\d{2,6}$/.test(text)) throw new UsageError(`${name} takes a NAICS code of 2 to 6 digits, got ${JSON.stringify(text)}`);
  return text;
}

const importOptions = {
  out: option({
    value: 'FILE',
    description: 'the dataset file to write (written whole, through a temporary file)',
    shown: '~/.mesh/directory/directory.json, what mesh directory serves',
  }),
  source: list({ value: 'NAME', description: 'without input files: a public source to fetch, epa-frs or wikidata (default both)', parse: oneOf(LIVE_SOURCES) }),
  naics: list({
    value: 'CODE',
    description: 'a NAICS code to fetch from the FRS (default: every code of the NAICS map); the FRS records of codes not given stay as they are',
    parse: naicsCode,
  }),
  'frs-url': option({ value: 'URL', description: 'the Envirofacts Data Service base', default: ENVIROFACTS_BASE }),
  'wikidata-url': option({ value: 'URL', description: 'the Wikidata SPARQL endpoint', default: WIKIDATA_SPARQL_ENDPOINT }),
  'page-size': option({ value: 'N', description: 'rows asked for per request', parse: integer(1, 10_000), default: 1000 }),
  attempts: option({ value: 'N', description: 'attempts per request before the import stops (it resumes when run again)', parse: integer(1, 100), default: 6 }),
  contact: option({ value: 'TEXT', description: 'your e-mail or URL, sent in the User-Agent as the Wikimedia policy asks' }),
  epa: list({ value: 'FILE', description: 'a US EPA FRS CSV export (Latin-1), e.g. a NAICS search or state file' }),
  wikidata: list({ value: 'FILE', description: 'Wikidata SPARQL results (JSON) of the query in docs/directory-data.md' }),
  exhibitors: list({ value: 'FILE', description: 'an exhibitor-list CSV (header in docs/directory-data.md)' }),
  retrieved: option({
    value: 'DATE',
    description:
      "when the --epa and --wikidata files were downloaded (default: each file's own date, its newest entry, else its modification date; exhibitor rows carry their own)",
    parse: isoDate,
  }),
  generated: option({ value: 'DATE', description: "the dataset's date", parse: isoDate, shown: 'the latest retrieval date of its sources' }),
  'naics-map': option({ value: 'FILE', description: 'NAICS → category map', shown: 'directory/data/naics-category-map.json' }),
  fresh: flag('ignore an existing --out file and build from the inputs alone'),
};

/** The import's settings from its parsed options; throws UsageError when there is nothing to import. */
function importArgs({ options, given }: CommandInput<typeof importOptions, Record<never, never>>): ImportArgs {
  // Inputs in the order given: a later one merges onto an earlier one.
  const inputs = given
    .filter((g): g is { name: Input['kind']; text: string } => g.name === 'epa' || g.name === 'wikidata' || g.name === 'exhibitors')
    .map((g) => ({ kind: g.name, path: g.text }));
  const live: LiveArgs = {
    sources: options.source.length > 0 ? [...new Set(options.source)] : [...LIVE_SOURCES],
    naics: options.naics,
    frsUrl: options['frs-url'],
    wikidataUrl: options['wikidata-url'],
    pageSize: options['page-size'],
    attempts: options.attempts,
    contact: options.contact,
  };
  if (inputs.length > 0 && given.some((g) => ['source', 'naics', 'frs-url', 'wikidata-url', 'page-size', 'attempts', 'contact'].includes(g.name))) {
    throw new UsageError('--source, --naics, --frs-url, --wikidata-url, --page-size, --attempts and --contact are for a live import, without input files');
  }
  return {
    out: options.out ?? defaultDatasetPath(),
    inputs,
    live,
    fresh: options.fresh,
    ...(options.retrieved !== undefined && { retrieved: options.retrieved }),
    ...(options.generated !== undefined && { generated: options.generated }),
    ...(options['naics-map'] !== undefined && { naicsMap: options['naics-map'] }),
  };
}

/**
 * How a file is dated when `--retrieved` is not given: by its own date where it carries one (its
 * newest entry: it cannot have been made before it), else by its modification time, which a copy
 * resets to the day it was copied.
 */
async function standInDate(path: string): Promise<string> {
  return (await stat(path)).mtime.toISOString().slice(0, 10);
}

/** Says which date dated a file: the one given, the file's own, or its modification time. */
function sayDate(path: string, given: string | undefined, result: ImportResult, say: (line: string) => void): void {
  const retrieved = result.sources[0]?.retrieved;
  if (retrieved === undefined) return;
  if (given !== undefined) {
    say(`${path}: retrieval date ${retrieved}, from --retrieved`);
    return;
  }
  const own = result.ownDate;
  if (own !== undefined && own.date === retrieved) {
    say(`${path}: retrieval date ${retrieved}, the export's own date (${own.from}, the earliest it can have been made); pass --retrieved to set it`);
  } else {
    say(`${path}: retrieval date ${retrieved} taken from the file's modification time (the file carries no date of its own); pass --retrieved to set it`);
  }
}

/** `mesh directory import`. */
export const importCommand = command({
  description: `Builds the directory's dataset. Without input files it fetches the public sources: the US EPA
Facility Registry Service (facilities by the NAICS codes of the eight categories) and Wikidata
(companies by industry), showing progress, waiting when a service asks (429, Retry-After) and
retrying failures; an interrupted import resumes when run again, and the dataset changes only
once every page is in. With --epa, --wikidata or --exhibitors it reads those files instead.
An existing --out file is merged into (records by id), unless --fresh: the inputs replace what their sources contributed
before, so a record a source no longer lists loses it (and is dropped when no other source lists
it); give every file of one source in the same run. Importing the same files again changes nothing.`,
  options: importOptions,
  notes: `Progress, counts (records added, updated and removed) and every skipped row (its source and position) go to stderr.
Exit 0 when the file was written, 1 when an input could not be read or fetched (the dataset is left
as it was; a live import resumes when run again), 2 for a usage error.`,
  run: (input) => runImportWith(importArgs(input)),
});

/** Runs `mesh directory import …` (the arguments after `import`); resolves to the exit code. */
export function runImport(args: string[]): Promise<number> {
  return runCommand(importCommand, args, 'mesh directory import');
}

async function runImportWith(parsed: ImportArgs): Promise<number> {
  const say = (line: string): void => {
    process.stderr.write(`${line}\n`);
  };
  try {
    const naicsMap = NaicsMap.parse(await readFile(parsed.naicsMap ?? DEFAULT_NAICS_MAP, 'utf8'));
    await mkdir(dirname(parsed.out), { recursive: true });
    for (const path of [parsed.out, indexPathOf(parsed.out)]) {
      for (const name of await removeStaleTemporaries(path)) say(`removed ${name}, left by an earlier import that was stopped while writing`);
    }
    if (parsed.inputs.length === 0) return await runLive(parsed, naicsMap, say);
    const results: ImportResult[] = [];
    let unreadable = false;
    for (const input of parsed.inputs) {
      let result: ImportResult;
      const dating = { retrieved: parsed.retrieved ?? (await standInDate(input.path)), preferOwnDate: parsed.retrieved === undefined };
      if (input.kind === 'epa') {
        result = importEpaFrs(decodeFrsExport(await readFile(input.path)), { ...dating, naicsMap });
        sayDate(input.path, parsed.retrieved, result, say);
      } else if (input.kind === 'wikidata') {
        result = importWikidata(await readFile(input.path, 'utf8'), dating);
        sayDate(input.path, parsed.retrieved, result, say);
      } else {
        result = importExhibitors(await readFile(input.path, 'utf8'));
      }
      say(`${input.path} (${input.kind}): ${result.rows} rows, ${result.records.length} records, ` + `${result.problems.length} skipped or refused`);
      for (const p of result.problems.slice(0, SHOWN_PROBLEMS)) say(`  ${input.path}:${p.line}: ${p.message}`);
      if (result.problems.length > SHOWN_PROBLEMS) say(`  … and ${result.problems.length - SHOWN_PROBLEMS} more`);
      // Nothing read and a complaint: the file is not what its flag says; writing would hide that.
      if (result.records.length === 0 && result.problems.length > 0) unreadable = true;
      results.push(result);
    }
    if (unreadable) {
      say(`mesh directory import: an input could not be read; ${parsed.out} left unchanged`);
      return 1;
    }
    await writeMerged(parsed.out, results, { fresh: parsed.fresh, generated: parsed.generated }, say);
    say(SERVED_NOTE);
    return 0;
  } catch (error) {
    say(`mesh directory import: ${(error as Error).message}`);
    return 1;
  }
}

async function runLive(parsed: ImportArgs, naicsMap: NaicsMap, say: (line: string) => void): Promise<number> {
  const { live } = parsed;
  try {
    await liveImport(
      {
        out: parsed.out,
        sources: live.sources,
        frsBase: live.frsUrl,
        wikidataEndpoint: live.wikidataUrl,
        naicsCodes: live.naics.length > 0 ? [...new Set(live.naics)].sort() : naicsMap.codes(),
        onlyTheseCodes: live.naics.length > 0,
        naicsMap,
        pageSize: live.pageSize,
        // A live import is dated by the day it ran.
        retrieved: parsed.retrieved ?? new Date().toISOString().slice(0, 10),
        fresh: parsed.fresh,
        generated: parsed.generated,
        fetch: { userAgent: userAgent(live.contact), attempts: live.attempts },
      },
      say,
    );
    say(SERVED_NOTE);
    return 0;
  } catch (error) {
    say(`mesh directory import: ${(error as Error).message}`);
    say(`${parsed.out} left as it was; run the same command again to resume (pages fetched so far are kept in ${stagingDir(parsed.out)})`);
    if (error instanceof SourceUnreachableError) for (const line of await offlineHint(parsed.out)) say(line);
    return 1;
  }
}

/** The EPA FRS extract in the project's shared data folder, which a checkout beside it can import offline. */
export const SHARED_FRS_EXTRACT = join(DEFAULT_SHARED_ROOT, 'epa-frs', 'frs-naics-32591.csv');

/** What to do without the network: import from files, naming the shared extract when this machine has it. */
async function offlineHint(out: string): Promise<string[]> {
  const outArg = out === defaultDatasetPath() ? '' : ` --out ${out}`;
  const lines = [
    'The public sources cannot be reached from this machine. Import from files instead:',
    `  npx mesh directory import${outArg} --epa FILE   (a US EPA FRS CSV export, e.g. a NAICS search from https://www.epa.gov/frs)`,
    '  (--wikidata FILE and --exhibitors FILE read the other sources; docs/directory-data.md describes each)',
  ];
  if (await fileExists(SHARED_FRS_EXTRACT)) {
    lines.push(`The project's shared data folder ${DEFAULT_SHARED_ROOT} holds an FRS extract this machine can import now:`);
    lines.push(`  npx mesh directory import${outArg} --epa ${SHARED_FRS_EXTRACT}`);
  }
  return lines;
}
