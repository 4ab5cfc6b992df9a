/**
 * Files written whole or not at all (the data directory's secrets, the directory's dataset, the
 * shared-data cache): the bytes go to a temporary file of a random name beside the target, created
 * exclusively, flushed to disk, then renamed (or linked) into place; the temporary file is removed
 * whatever happens. A crash leaves either the old file or the new one, never half of one.
 */
import { randomBytes } from 'node:crypto';
import { type FileHandle, link, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export interface AtomicWriteOptions {
  /** The new file's mode (default 0666, less the umask). */
  readonly mode?: number;
  /** false: fail with EEXIST when `path` exists, checked atomically (link); default true (rename). */
  readonly replace?: boolean;
}

/** Writes `path` through `write`, which receives the temporary file. */
export async function writeAtomically(path: string, write: (file: FileHandle) => Promise<void>, options: AtomicWriteOptions = {}): Promise<void> {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const file = await open(temporary, 'wx', options.mode ?? 0o666);
  try {
    try {
      await write(file);
      // On disk before the rename: a crash must not leave a renamed file whose bytes never arrived.
      await file.sync();
    } finally {
      await file.close();
    }
    if (options.replace === false) await link(temporary, path);
    else await rename(temporary, path);
  } finally {
    // After a rename the temporary name is gone already; after a link or a failure it is removed here.
    await unlink(temporary).catch(() => {});
  }
  // The new directory entry made durable too; not every platform can open a directory for fsync.
  const folder = await open(dirname(path), 'r').catch(() => undefined);
  await folder?.sync().catch(() => {});
  await folder?.close();
}
