/**
 * Submissions in Deno KV (Deno, and Deno Deploy where KV is the durable store). Each submission is
 * one entry under ["submissions", id], created with an atomic check that no entry exists, so a
 * stored submission is never overwritten. KV commits are durable when they resolve.
 *
 * Only the few members of `Deno.Kv` this store uses are typed here, so the file type-checks under
 * tsc without Deno's own declarations.
 */
import type { StoredSubmission, SubmissionStore } from './store.ts';
import { SubmissionExistsError } from './store.ts';

/** The part of `Deno.Kv` the store uses. */
export interface KvLike {
  get<T>(key: readonly unknown[]): Promise<{ value: T | null; versionstamp: string | null }>;
  atomic(): {
    check(...checks: { key: readonly unknown[]; versionstamp: string | null }[]): unknown;
    set(key: readonly unknown[], value: unknown): unknown;
    commit(): Promise<{ ok: boolean }>;
  };
  close(): void;
}

const PREFIX = 'submissions';

export class KvSubmissionStore implements SubmissionStore {
  readonly #kv: KvLike;

  constructor(kv: KvLike) {
    this.#kv = kv;
  }

  /** Opens Deno KV at `path` (a file; none: the default database, the project's KV on Deno Deploy). */
  static async open(path?: string): Promise<KvSubmissionStore> {
    const deno = (globalThis as unknown as { Deno?: { openKv(path?: string): Promise<KvLike> } }).Deno;
    if (!deno?.openKv) throw new TypeError('Deno KV is not available: run on Deno with --unstable-kv');
    return new KvSubmissionStore(await deno.openKv(path));
  }

  async put(submission: StoredSubmission): Promise<void> {
    const key = [PREFIX, submission.id];
    const op = this.#kv.atomic();
    op.check({ key, versionstamp: null });
    op.set(key, submission);
    const { ok } = await op.commit();
    if (!ok) throw new SubmissionExistsError(submission.id);
  }

  async get(id: string): Promise<StoredSubmission | undefined> {
    const entry = await this.#kv.get<StoredSubmission>([PREFIX, id]);
    return entry.value ?? undefined;
  }

  close(): Promise<void> {
    this.#kv.close();
    return Promise.resolve();
  }
}
