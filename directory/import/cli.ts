/**
 * `mesh directory import`: builds or updates a dataset file from source files (Node only: it
 * reads and writes files; the importers it calls are runtime-neutral).
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { writeAtomically } from '../../host-node/atomic-file.ts';
import { command, flag, type Input as CommandInput, list, option, UsageError } from '../../host-node/cli/command.ts';
import { runCommand } from '../../host-node/cli/run.ts';
import { datasetChunks, readDataset, type Dataset } from '../dataset.ts';
import { isIsoDate } from '../record.ts';
import { decodeFrsExport, importEpaFrs } from './epa-frs.ts';
import { NaicsMap } from './evidence.ts';
import { importExhibitors } from './exhibitors.ts';
import { datasetChanges, mergeDataset } from './merge.ts';
import type { ImportResult } from './source.ts';
import { importWikidata } from './wikidata.ts';

export const DEFAULT_NAICS_MAP = new URL('../data/naics-category-map.json', import.meta.url);
// Problems printed per input before the rest are only counted.
const SHOWN_PROBLEMS = 50;

interface Input {
  kind: 'epa' | 'wikidata' | 'exhibitors';
  path: string;
}

interface ImportArgs {
  out: string;
  inputs: Input[];
  retrieved?: string;
  generated?: string;
  naicsMap?: string;
  fresh: boolean;
}

const isoDate = (text: string, name: string): string => {
  if (!isIsoDate(text)) throw new UsageError(`${name} takes a date YYYY-MM-DD, got ${JSON.stringify(text)}`);
  return text;
};

const importOptions = {
  out: option({ value: 'FILE', description: 'the dataset file to write (written whole, through a temporary file)', required: true }),
  epa: list({ value: 'FILE', description: 'a US EPA FRS CSV export (Latin-1), e.g. a NAICS search or state file' }),
  wikidata: list({ value: 'FILE', description: 'Wikidata SPARQL results (JSON) of the query in docs/directory-data.md' }),
  exhibitors: list({ value: 'FILE', description: 'an exhibitor-list CSV (header in docs/directory-data.md)' }),
  retrieved: option({
    value: 'DATE',
    description: "when the --epa and --wikidata files were downloaded (default: each file's modification date; exhibitor rows carry their own)",
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
  if (inputs.length === 0) throw new UsageError('give at least one input (--epa, --wikidata, --exhibitors)');
  return {
    out: options.out,
    inputs,
    fresh: options.fresh,
    ...(options.retrieved !== undefined && { retrieved: options.retrieved }),
    ...(options.generated !== undefined && { generated: options.generated }),
    ...(options['naics-map'] !== undefined && { naicsMap: options['naics-map'] }),
  };
}

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

async function retrievalDate(path: string, given: string | undefined, say: (line: string) => void): Promise<string> {
  if (given !== undefined) return given;
  const date = (await stat(path)).mtime.toISOString().slice(0, 10);
  say(`${path}: retrieval date ${date} taken from the file's modification time; pass --retrieved to set it`);
  return date;
}

/** Writes the dataset a chunk at a time (a large one does not fit one string), whole or not at all. */
export function writeDataset(path: string, dataset: Dataset): Promise<void> {
  return writeAtomically(path, async (file) => {
    let batch: string[] = [];
    let size = 0;
    for (const chunk of datasetChunks(dataset)) {
      batch.push(chunk);
      size += chunk.length;
      if (size >= 1 << 20) {
        await file.write(batch.join(''));
        batch = [];
        size = 0;
      }
    }
    await file.write(batch.join(''));
  });
}

/** `mesh directory import`. */
export const importCommand = command({
  description: `Builds the directory's dataset from public sources' own formats. An existing --out file is
merged into (records by id), unless --fresh: the inputs replace what their sources contributed
before, so a record a source no longer lists loses it (and is dropped when no other source lists
it); give every file of one source in the same run. Importing the same files again changes nothing.`,
  options: importOptions,
  notes: `Counts (records added, updated and removed) and every skipped row (file:line: reason) go to stderr. Exit 0 when the file was written,
1 when an input could not be read (nothing is written), 2 for a usage error.`,
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
    const results: ImportResult[] = [];
    let unreadable = false;
    for (const input of parsed.inputs) {
      let result: ImportResult;
      if (input.kind === 'epa') {
        const retrieved = await retrievalDate(input.path, parsed.retrieved, say);
        result = importEpaFrs(decodeFrsExport(await readFile(input.path)), { retrieved, naicsMap });
      } else if (input.kind === 'wikidata') {
        const retrieved = await retrievalDate(input.path, parsed.retrieved, say);
        result = importWikidata(await readFile(input.path, 'utf8'), { retrieved });
      } else {
        result = importExhibitors(await readFile(input.path, 'utf8'));
      }
      say(
        `${input.path} (${input.kind}): ${result.rows} rows, ${result.records.length} records, ` +
          `${result.problems.length} skipped or refused`,
      );
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
    const base = !parsed.fresh && (await exists(parsed.out)) ? await readDataset(Readable.toWeb(createReadStream(parsed.out)) as ReadableStream<Uint8Array>) : null;
    const dataset = mergeDataset(base, results, parsed.generated);
    await writeDataset(parsed.out, dataset);
    const { added, updated, removed } = datasetChanges(base, dataset);
    say(
      `${parsed.out}: ${dataset.records.length} records (${added} added, ${updated} updated, ${removed} removed; ` +
        `${dataset.sources.length} sources), dataset date ${dataset.generated}`,
    );
    return 0;
  } catch (error) {
    say(`mesh directory import: ${(error as Error).message}`);
    return 1;
  }
}
