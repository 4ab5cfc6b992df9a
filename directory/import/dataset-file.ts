/**
 * Writing a dataset file, whole or not at all, and merging imports into one (Node: files). The
 * file importers and the live imports (live/live-import.ts) end the same way: read the existing
 * file, merge the new imports in (merge.ts), write it through a temporary file, say what changed,
 * and write the prebuilt index the server starts from.
 */
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { writeAtomically } from '../../host-node/atomic-file.ts';
import { fileExists } from '../../host-node/file-exists.ts';
import { indexPathOf, writeIndexFile } from '../adapter/index-cache.ts';
import { type Dataset, datasetChunks, readDataset } from '../dataset.ts';
import { datasetChanges, mergeDataset } from './merge.ts';
import type { ImportResult } from './source.ts';

/**
 * For the crash tests only: milliseconds to wait once the temporary file is written, before it is
 * renamed into place, so a test can kill the import at that moment (announced on stderr). Unset in
 * use.
 */
const PAUSE_BEFORE_RENAME_MS = Number(process.env.MESH_TEST_PAUSE_BEFORE_RENAME_MS ?? 0);

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
    if (PAUSE_BEFORE_RENAME_MS > 0) {
      await file.sync();
      process.stderr.write(`temporary file written; pausing ${PAUSE_BEFORE_RENAME_MS} ms before the rename\n`);
      await new Promise((resolve) => setTimeout(resolve, PAUSE_BEFORE_RENAME_MS));
    }
  });
}

/**
 * Merges `results` into the dataset at `out` (or into nothing when `fresh` or when there is no
 * file yet), writes it whole, and says how many records were added, updated and removed. Then
 * writes the dataset's prebuilt index beside it (adapter/index-cache.ts), so that the server
 * starts from it; an index that cannot be written is only reported: the server makes it again.
 */
export async function writeMerged(
  out: string,
  results: readonly ImportResult[],
  options: { fresh: boolean; generated?: string | undefined },
  say: (line: string) => void,
): Promise<void> {
  await writeMergedDataset(out, results, options, say);
  // Indexed from the file as written (the records in memory are gone by now): the index names the
  // hash of those very bytes.
  try {
    await writeIndexFile(out);
    say(`${indexPathOf(out)}: the prebuilt index the directory starts from`);
  } catch (error) {
    say(`${indexPathOf(out)}: not written (${(error as Error).message}); the directory will index the dataset when it starts`);
  }
}

async function writeMergedDataset(
  out: string,
  results: readonly ImportResult[],
  options: { fresh: boolean; generated?: string | undefined },
  say: (line: string) => void,
): Promise<void> {
  const base = !options.fresh && (await fileExists(out)) ? await readDataset(Readable.toWeb(createReadStream(out)) as ReadableStream<Uint8Array>) : null;
  const dataset = mergeDataset(base, results, options.generated);
  await writeDataset(out, dataset);
  const { added, updated, removed } = datasetChanges(base, dataset);
  say(
    `${out}: ${dataset.records.length} records (${added} added, ${updated} updated, ${removed} removed; ` +
      `${dataset.sources.length} sources), dataset date ${dataset.generated}`,
  );
}
