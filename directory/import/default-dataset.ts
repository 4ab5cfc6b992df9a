/**
 * The dataset the directory serves when not given `--data`: the US EPA FRS extract of the project's
 * shared data (998 real facilities), imported as `mesh directory import` imports it. The project
 * ships no copy of the extract or of the dataset built from it: the first `mesh directory` (or
 * `deno task directory`) builds `~/.mesh/directory/directory.json` once, taking the extract through
 * the shared-data loader (from `../shared/data`, else downloaded once from its pinned upstream,
 * SHA-256 checked). Node and Deno (node:fs).
 */
import { mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadSharedData, type SharedDataOptions } from '#shared-data';
import { DEFAULT_NAICS_MAP, exists, writeDataset } from './cli.ts';
import { decodeFrsExport, importEpaFrs } from './epa-frs.ts';
import { NaicsMap } from './evidence.ts';
import { mergeDataset } from './merge.ts';

/** The shared data file the default dataset is built from. */
export const DEFAULT_DATASET_SOURCE = 'epa-frs/frs-naics-32591.csv';

/**
 * The extract's retrieval date: the day it came into the project. When it was downloaded from the
 * EPA is not recorded; a fixed date keeps every build of the dataset the same bytes.
 */
export const DEFAULT_DATASET_RETRIEVED = '2026-11-21';

/** `~/.mesh/directory/directory.json`, beside the submissions folder. */
export function defaultDatasetPath(): string {
  return join(homedir(), '.mesh', 'directory', 'directory.json');
}

/**
 * Builds the default dataset into `path` (written whole, through a temporary file, so an
 * interrupted build leaves nothing half-written); resolves to its number of records.
 */
export async function buildDefaultDataset(path: string, options?: SharedDataOptions): Promise<number> {
  const naicsMap = NaicsMap.parse(await readFile(DEFAULT_NAICS_MAP, 'utf8'));
  const extract = decodeFrsExport(await loadSharedData(DEFAULT_DATASET_SOURCE, options));
  const dataset = mergeDataset(null, [importEpaFrs(extract, { retrieved: DEFAULT_DATASET_RETRIEVED, naicsMap })]);
  await mkdir(dirname(path), { recursive: true });
  await writeDataset(path, dataset);
  return dataset.records.length;
}

/**
 * The default dataset's path, after building it there if no file is there yet (once: later starts
 * serve the file, and a user may replace it with another dataset). The build is written whole
 * (writeAtomically), so a crash never leaves a file cut short; a file that does not load is the
 * directory's 503, said by its load like any other. `say` tells the user what is happening; a
 * failed build rejects with a message for the user that says what to do instead.
 */
export async function ensureDefaultDataset(say: (line: string) => void, path = defaultDatasetPath(), options?: SharedDataOptions): Promise<string> {
  if (await exists(path)) return path;
  say(`building the dataset ${path} from the US EPA FRS extract (${DEFAULT_DATASET_SOURCE}: ../shared/data, or downloaded once from its pinned upstream; SHA-256 checked)`);
  let records: number;
  try {
    records = await buildDefaultDataset(path, options);
  } catch (error) {
    throw new Error(`cannot build the default dataset: ${(error as Error).message}\nGive a dataset file with --data FILE (mesh directory import builds one).`, { cause: error });
  }
  say(`built ${path}: ${records} records`);
  return path;
}
