/**
 * Files written whole or not at all (the data directory's secrets, the directory's dataset, the
 * shared-data cache): the bytes go to a temporary file of a random name beside the target, created
 * exclusively, flushed to disk, then renamed (or linked) into place; the temporary file is removed
 * whatever happens. A crash leaves either the old file or the new one, never half of one; a process
 * killed mid-write leaves its temporary file, which `removeStaleTemporaries` clears.
 */
import { randomBytes } from 'node:crypto';
import { type FileHandle, link, open, readdir, rename, rm, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { processAlive } from './process-alive.ts';

export interface AtomicWriteOptions {
  /** The new file's mode (default 0666, less the umask). */
  readonly mode?: number;
  /** false: fail with EEXIST when `path` exists, checked atomically (link); default true (rename). */
  readonly replace?: boolean;
}

/** Writes `path` through `write`, which receives the temporary file. */
export async function writeAtomically(path: string, write: (file: FileHandle) => Promise<void>, options: AtomicWriteOptions = {}): Promise<void> {
  // `.<name>.<pid>.<hex>.tmp`: the writer's pid tells a stale one (removeStaleTemporaries).
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

/**
 * Removes the temporary files that killed writes of `path` left beside it, except those of a
 * process still running (another writer now); resolves to the names removed.
 */
export async function removeStaleTemporaries(path: string): Promise<string[]> {
  const prefix = `.${basename(path)}.`;
  const removed: string[] = [];
  for (const name of await readdir(dirname(path)).catch(() => [] as string[])) {
    const pid = name.startsWith(prefix) ? /^(\d+)\.[0-9a-f]+\.tmp$/.exec(name.slice(prefix.length))?.[1] : undefined;
    if (pid === undefined || (Number(pid) !== process.pid && processAlive(Number(pid)))) continue;
    await rm(join(dirname(path), name), { force: true });
    removed.push(name);
  }
  return removed;
}
