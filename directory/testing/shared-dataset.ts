/**
 * The dataset tests and CI serve: the US EPA FRS extract of the project's shared data (998 real
 * facilities), read through the shared-data loader and imported exactly as `mesh directory import
 * --fresh --epa <extract> --retrieved 2026-11-21` imports it. Never served to users: the directory
 * ships no dataset (see adapter/dataset-path.ts).
 */
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { loadSharedData, type SharedDataOptions } from '#shared-data';
import { DEFAULT_NAICS_MAP } from '../import/cli.ts';
import { writeDataset } from '../import/dataset-file.ts';
import { decodeFrsExport, importEpaFrs } from '../import/epa-frs.ts';
import { NaicsMap } from '../import/evidence.ts';
import { mergeDataset } from '../import/merge.ts';

/** The shared data file the test dataset is built from. */
export const SHARED_FRS_EXTRACT = 'epa-frs/frs-naics-32591.csv';

/** The extract's retrieval date: the day it came into the project; fixed so every build is the same bytes. */
export const SHARED_FRS_RETRIEVED = '2026-11-21';

/** Builds the test dataset into `path` (written whole); resolves to its number of records. */
export async function buildSharedDataset(path: string, options?: SharedDataOptions): Promise<number> {
  const naicsMap = NaicsMap.parse(await readFile(DEFAULT_NAICS_MAP, 'utf8'));
  const extract = decodeFrsExport(await loadSharedData(SHARED_FRS_EXTRACT, options));
  const dataset = mergeDataset(null, [importEpaFrs(extract, { retrieved: SHARED_FRS_RETRIEVED, naicsMap })]);
  await mkdir(dirname(path), { recursive: true });
  await writeDataset(path, dataset);
  return dataset.records.length;
}
