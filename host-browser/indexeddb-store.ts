/**
 * The browser's key-value store: one IndexedDB object store, reached through idb-keyval's
 * `createStore`. IndexedDB compares binary keys byte by byte, so `Uint8Array` keys give the port's
 * byte order as they are; a batch is one read-write transaction, so it applies whole or not at all.
 */
import { createStore, promisifyRequest, type UseStore } from 'idb-keyval';
import { type BatchOp, checkBatch, gatheredBatch, type KeyValueStore, type Range, type StagedBatch } from '../core/store/kv.ts';

const OBJECT_STORE = 'kv';

// IndexedDB hands back ArrayBuffers (keys) and whatever was stored (values): give the port copies
// that are plain Uint8Arrays, so callers never share bytes with the database.
function toBytes(value: unknown): Uint8Array {
  if (value instanceof ArrayBuffer) return new Uint8Array(value.slice(0));
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
  throw new TypeError('the store holds a value that is not bytes');
}

function keyRange(range: Range): IDBKeyRange | undefined {
  const { gte, lt } = range;
  if (gte && lt) return IDBKeyRange.bound(gte.slice(), lt.slice(), false, true);
  if (gte) return IDBKeyRange.lowerBound(gte.slice());
  if (lt) return IDBKeyRange.upperBound(lt.slice(), true);
  return undefined;
}

export class IndexedDbStore implements KeyValueStore {
  readonly #use: UseStore;
  #closed = false;

  private constructor(use: UseStore) {
    this.#use = use;
  }

  /** Opens (or creates) the store kept in the IndexedDB database `name` of this origin. */
  static async open(name: string): Promise<IndexedDbStore> {
    const use = createStore(name, OBJECT_STORE);
    // Open now, so a browser that refuses storage (private mode, quota) fails here and not mid-sync.
    await use('readonly', (store) => promisifyRequest(store.count()));
    return new IndexedDbStore(use);
  }

  /** Removes the database `name` and everything in it. */
  static async destroy(name: string): Promise<void> {
    await promisifyRequest(indexedDB.deleteDatabase(name));
  }

  #check(): void {
    if (this.#closed) throw new Error('store is closed');
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    this.#check();
    const value = await this.#use('readonly', (store) => promisifyRequest(store.get(key.slice())));
    return value === undefined ? undefined : toBytes(value);
  }

  async batch(ops: readonly BatchOp[]): Promise<void> {
    this.#check();
    checkBatch(ops);
    if (ops.length === 0) return;
    await this.#use('readwrite', (store) => {
      for (const op of ops) {
        if (op.type === 'put') store.put(op.value.slice(), op.key.slice());
        else store.delete(op.key.slice());
      }
      return promisifyRequest(store.transaction);
    });
  }

  /** Gathered in memory and written as one transaction: IndexedDB keeps no transaction open across tasks. */
  stage(): StagedBatch {
    return gatheredBatch(this);
  }

  async *entries(range: Range = {}): AsyncIterable<readonly [Uint8Array, Uint8Array]> {
    this.#check();
    const limit = range.limit ?? Infinity;
    if (limit <= 0) return;
    // The whole range is read in one transaction, a snapshot as LevelDB's iterators give: an
    // IndexedDB transaction closes when its task ends, so a cursor cannot stay open across awaits.
    const rows = await this.#use('readonly', (store) => {
      const out: [Uint8Array, Uint8Array][] = [];
      const request = store.openCursor(keyRange(range) ?? null, range.reverse ? 'prev' : 'next');
      return new Promise<[Uint8Array, Uint8Array][]>((resolve, reject) => {
        request.onerror = () => reject(request.error);
        request.onsuccess = () => {
          const cursor = request.result;
          if (!cursor) return resolve(out);
          out.push([toBytes(cursor.key), toBytes(cursor.value)]);
          if (out.length >= limit) return resolve(out);
          cursor.continue();
        };
      });
    });
    for (const row of rows) yield row;
  }

  /** Closes the database connection (a pending `destroy` waits for it). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#use('readonly', (store) => store.transaction.db.close());
  }
}
