/**
 * The node's KeyValueStore on disk: LevelDB through classic-level. Batches are LevelDB write
 * batches (atomic) and, by default, synced to disk before they resolve, so a block the node has
 * acknowledged survives a power loss, not only a crash of the process.
 */
import { mkdir } from 'node:fs/promises';
import { ClassicLevel } from 'classic-level';
import { type BatchOp, checkBatch, type KeyValueStore, type Range, type StagedBatch } from '../core/store/kv.ts';

/** The store's directory is held by another process (or another open store in this one). */
export class StoreLockedError extends Error {
  readonly code = 'store-locked';
  readonly path: string;

  constructor(path: string, options?: ErrorOptions) {
    super(`another mesh node is using ${path} (its LevelDB is locked); stop it or choose another --data-dir`, options);
    this.name = 'StoreLockedError';
    this.path = path;
  }
}

export interface LevelStoreOptions {
  /** fsync every batch before it resolves (default true). Off only for throwaway data, such as benchmarks. */
  readonly sync?: boolean;
}

type Db = ClassicLevel<Uint8Array, Uint8Array>;

// LevelDB's memtable (default 4 MiB): a sync range writes several MiB (blocks, undo records, read
// models), and a larger buffer flushes to fewer, larger files that compaction rewrites less often:
// a catch-up of 10,000 blocks spent a third less CPU on the store's threads.
const WRITE_BUFFER_BYTES = 32 * 1024 * 1024;

// classic-level hands out Buffers, whose slice() shares memory: callers get plain copies.
const copy = (bytes: Uint8Array): Uint8Array => new Uint8Array(bytes);

function hasCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

/**
 * A KeyValueStore over a LevelDB directory.
 *
 * @example
 * const store = await LevelStore.open(join(dataDir, 'chain'));
 * await store.batch([{ type: 'put', key, value }]);
 * await store.close();
 */
export class LevelStore implements KeyValueStore {
  readonly path: string;
  readonly #db: Db;
  readonly #sync: boolean;
  #closed = false;

  private constructor(path: string, db: Db, sync: boolean) {
    this.path = path;
    this.#db = db;
    this.#sync = sync;
  }

  /** Opens (creating if missing) the store at `path`. Throws StoreLockedError when another node holds it. */
  static async open(path: string, options: LevelStoreOptions = {}): Promise<LevelStore> {
    await mkdir(path, { recursive: true });
    const db: Db = new ClassicLevel<Uint8Array, Uint8Array>(path, { keyEncoding: 'view', valueEncoding: 'view', writeBufferSize: WRITE_BUFFER_BYTES });
    try {
      await db.open();
    } catch (error) {
      // classic-level wraps the cause: LEVEL_DATABASE_NOT_OPEN whose cause is LEVEL_LOCKED.
      const cause = (error as { cause?: unknown }).cause;
      if (hasCode(error, 'LEVEL_LOCKED') || hasCode(cause, 'LEVEL_LOCKED')) throw new StoreLockedError(path, { cause: error });
      const detail = cause instanceof Error ? cause.message : error instanceof Error ? error.message : String(error);
      throw new Error(`cannot open the store at ${path}: ${detail}`, { cause: error });
    }
    return new LevelStore(path, db, options.sync ?? true);
  }

  #check(): void {
    if (this.#closed) throw new Error(`store ${this.path} is closed`);
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    this.#check();
    if (!(key instanceof Uint8Array)) throw new TypeError('key must be a Uint8Array');
    const value = await this.#db.get(key);
    return value === undefined ? undefined : copy(value);
  }

  async batch(ops: readonly BatchOp[]): Promise<void> {
    this.#check();
    // Check every operation first: the 'view' encoding would quietly accept a string key.
    checkBatch(ops);
    if (ops.length === 0) return;
    // A chained batch: each operation goes to LevelDB's write batch as it is added, where an array
    // batch has its operation objects read back one by one, twice the main thread's time (a sync
    // range writes some 30,000 operations).
    const batch = this.#db.batch();
    try {
      for (const op of ops) {
        if (op.type === 'put') batch.put(op.key, op.value);
        else batch.del(op.key);
      }
    } catch (error) {
      await batch.close();
      throw error;
    }
    await batch.write({ sync: this.#sync });
  }

  /**
   * A LevelDB write batch that takes each operation as it is added, so that `write` has only the
   * write itself left to do (adding a deep reorganisation's 380,000 operations took the main thread
   * half a second).
   */
  stage(): StagedBatch {
    this.#check();
    const batch = this.#db.batch();
    let open = true;
    const spend = (): void => {
      if (!open) throw new Error('the staged batch was written or discarded');
      open = false;
    };
    return {
      add: (ops) => {
        if (!open) throw new Error('the staged batch was written or discarded');
        checkBatch(ops);
        for (const op of ops) {
          if (op.type === 'put') batch.put(op.key, op.value);
          else batch.del(op.key);
        }
      },
      write: async () => {
        spend();
        this.#check();
        await batch.write({ sync: this.#sync });
      },
      discard: () => {
        if (!open) return;
        open = false;
        void batch.close().catch(() => {});
      },
    };
  }

  async *entries(range: Range = {}): AsyncIterable<readonly [Uint8Array, Uint8Array]> {
    this.#check();
    const limit = range.limit ?? Infinity;
    // As MemoryStore: a limit of 0 (or below) yields nothing; a fractional one rounds up.
    if (!(limit > 0)) return;
    // The iterator reads from a snapshot taken now, so batches during the walk do not disturb it.
    const iterator = this.#db.iterator({
      ...(range.gte !== undefined ? { gte: range.gte } : {}),
      ...(range.lt !== undefined ? { lt: range.lt } : {}),
      reverse: range.reverse === true,
      limit: Number.isFinite(limit) ? Math.ceil(limit) : -1,
    });
    try {
      for (;;) {
        const chunk = await iterator.nextv(256);
        if (chunk.length === 0) return;
        for (const [key, value] of chunk) yield [copy(key), copy(value)] as const;
      }
    } finally {
      await iterator.close();
    }
  }

  /** Closes the database; later calls do nothing. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#db.close();
  }
}
