/**
 * Where submissions wait for review: a port with two real implementations (a file store on Node,
 * Deno KV on Deno) and a memory one for tests. Submissions live only here: nothing in the search
 * index, the export or the statistics reads a store.
 */
import { MeshError } from '../../core/errors.ts';
import type { SubmissionKind } from '../http/schemas.ts';

/** A submission as stored: the token only as its SHA-256, never itself. */
export interface StoredSubmission {
  /** 32 lowercase hex characters (128 random bits). */
  id: string;
  /** SHA-256 of the receipt's token, lowercase hex. */
  token_sha256: string;
  kind: SubmissionKind;
  record_id: string | null;
  company: string;
  email: string;
  message: string;
  status: 'received';
  /** ISO 8601 time of receipt. */
  received: string;
}

/** A store of submissions. Implementations must be durable once `put` resolves. */
export interface SubmissionStore {
  /** Stores a new submission; rejects (and stores nothing) if the id exists. */
  put(submission: StoredSubmission): Promise<void>;
  /** The submission with this id, if any. */
  get(id: string): Promise<StoredSubmission | undefined>;
  /** Releases what the store holds open. */
  close(): Promise<void>;
}

/** Refused: a submission with this id is already stored. */
export class SubmissionExistsError extends MeshError {
  constructor(id: string) {
    super('submission-exists', `submission ${id} already exists`);
  }
}

/** A store in memory: for tests and for a directory that must keep nothing on disk. */
export class MemorySubmissionStore implements SubmissionStore {
  readonly #items = new Map<string, string>();

  put(submission: StoredSubmission): Promise<void> {
    if (this.#items.has(submission.id)) return Promise.reject(new SubmissionExistsError(submission.id));
    // Stored as text, as the real stores do, so a caller's later change to the object is not kept.
    this.#items.set(submission.id, JSON.stringify(submission));
    return Promise.resolve();
  }

  get(id: string): Promise<StoredSubmission | undefined> {
    const text = this.#items.get(id);
    return Promise.resolve(text === undefined ? undefined : (JSON.parse(text) as StoredSubmission));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
