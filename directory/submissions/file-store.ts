/**
 * Submissions on disk (Node): one JSON file per submission in a private directory (mode 0700,
 * files 0600). A file is written whole to a temporary name, flushed with fsync, hard-linked to
 * its final name (which fails rather than replace an existing submission), the temporary name
 * removed and the directory fsynced, so after `put` resolves the submission survives a crash and a
 * reader never sees half a file.
 */
import { chmod, link, mkdir, open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { SUBMISSION_ID_PATTERN } from '../http/schemas.ts';
import { type StoredSubmission, SubmissionExistsError, type SubmissionStore } from './store.ts';

export class FileSubmissionStore implements SubmissionStore {
  readonly #dir: string;

  private constructor(dir: string) {
    this.#dir = dir;
  }

  /** Opens (creating if needed) the store in `dir`, and makes the directory private. */
  static async open(dir: string): Promise<FileSubmissionStore> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // mkdir leaves an existing directory's mode alone; submissions hold contact details.
    await chmod(dir, 0o700);
    return new FileSubmissionStore(dir);
  }

  #path(id: string): string {
    // Ids are checked before they become file names, so nothing can name a path outside the store.
    if (!SUBMISSION_ID_PATTERN.test(id)) throw new RangeError(`not a submission id: ${JSON.stringify(id)}`);
    return join(this.#dir, `${id}.json`);
  }

  async put(submission: StoredSubmission): Promise<void> {
    const target = this.#path(submission.id);
    const temp = join(this.#dir, `.${submission.id}.${crypto.randomUUID()}.tmp`);
    const file = await open(temp, 'wx', 0o600);
    try {
      await file.writeFile(`${JSON.stringify(submission)}\n`, 'utf8');
      await file.sync();
    } finally {
      await file.close();
    }
    try {
      // link() fails if the target exists, where rename() would replace it: a stored submission is never overwritten.
      await link(temp, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new SubmissionExistsError(submission.id);
      throw error;
    } finally {
      await unlink(temp).catch(() => {});
    }
    await this.#syncDir();
  }

  async #syncDir(): Promise<void> {
    const dir = await open(this.#dir, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }

  async get(id: string): Promise<StoredSubmission | undefined> {
    if (!SUBMISSION_ID_PATTERN.test(id)) return undefined;
    try {
      return JSON.parse(await readFile(this.#path(id), 'utf8')) as StoredSubmission;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
