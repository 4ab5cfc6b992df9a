/**
 * The dataset's prebuilt index on Node: the file `<dataset>.index` beside the dataset
 * (`~/.mesh/directory/directory.json.index`), read with one read into shared memory (so the
 * server's threads serve one copy of it: threads.ts) and written whole or not at all.
 * `mesh directory import` writes it after the dataset; `mesh directory` writes it when it finds
 * it missing or made from other bytes (the format: directory/index-file.ts).
 */
import { createHash } from 'node:crypto';
import { type FileHandle, open } from 'node:fs/promises';
import { writeAtomically } from '../../host-node/atomic-file.ts';
import { type IndexCache, indexSource } from '../http/data-source.ts';
import { indexFileChunks } from '../index-file.ts';
import { fileDataSource, nodeSha256 } from './node-data.ts';

/** The index file of the dataset at `datasetPath`. */
export function indexPathOf(datasetPath: string): string {
  return `${datasetPath}.index`;
}

/** The index file of the dataset at `datasetPath`, as the directory's IndexCache. */
export function fileIndexCache(datasetPath: string): IndexCache {
  const path = indexPathOf(datasetPath);
  return {
    read: async () => {
      let file;
      try {
        file = await open(path, 'r');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
      try {
        return await readShared(file);
      } finally {
        await file.close();
      }
    },
    write: (chunks) =>
      writeAtomically(path, async (file) => {
        for (const chunk of chunks) await file.write(chunk);
      }),
    datasetSha256: () => fileSha256(datasetPath),
  };
}

/** A whole file into a SharedArrayBuffer. */
async function readShared(file: FileHandle): Promise<Uint8Array> {
  const { size } = await file.stat();
  const bytes = new Uint8Array(new SharedArrayBuffer(size));
  let at = 0;
  while (at < size) {
    const { bytesRead } = await file.read(bytes, at, size - at, at);
    if (bytesRead === 0) break;
    at += bytesRead;
  }
  // A file cut short while read is caught by the index file's own length check.
  return at === size ? bytes : bytes.subarray(0, at);
}

/** The SHA-256 of a file's bytes in hex, read 4 MiB at a time into one buffer. */
async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(4 << 20);
  const file = await open(path, 'r');
  try {
    for (;;) {
      const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
  } finally {
    await file.close();
  }
  return hash.digest('hex');
}

/** Indexes the dataset file at `datasetPath` and writes its index file; resolves to the number of records. */
export async function writeIndexFile(datasetPath: string): Promise<number> {
  const { index, header, sha256 } = await indexSource(fileDataSource(datasetPath), nodeSha256);
  await fileIndexCache(datasetPath).write(indexFileChunks(index.parts, header, sha256));
  return index.size;
}
