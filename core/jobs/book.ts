/**
 * The jobs this node is party to, as payer or as host, kept in a key-value store so a restarted
 * node (even after kill -9) knows every job it placed or runs: each change is written before it
 * is acted on (core/jobs/payer-machine.ts, host-machine.ts). One record per job id; its form is in
 * record.ts.
 */
import { fromHex } from '../encoding/hex.ts';
import { type KeyValueStore, prefixRange } from '../store/kv.ts';
import { decodeRecord, encodeRecord, type JobRecord } from './record.ts';

const PREFIX = 0x4a; // 'J' + job id

function keyOf(jobId: string): Uint8Array {
  const key = new Uint8Array(33);
  key[0] = PREFIX;
  key.set(fromHex(jobId, 32), 1);
  return key;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The records in memory, written through to the store. */
export class JobBook {
  readonly #store: KeyValueStore;
  readonly #records = new Map<string, JobRecord>();
  // Writes go out one at a time, in order, so a later state never lands before an earlier one.
  #writing: Promise<void> = Promise.resolve();

  private constructor(store: KeyValueStore) {
    this.#store = store;
  }

  static async open(store: KeyValueStore): Promise<JobBook> {
    const book = new JobBook(store);
    for await (const [, value] of store.entries(prefixRange(Uint8Array.of(PREFIX)))) {
      const record = decodeRecord(decoder.decode(value));
      book.#records.set(record.jobId, record);
    }
    return book;
  }

  get(jobId: string): JobRecord | undefined {
    return this.#records.get(jobId);
  }

  /** Every record, newest first. */
  all(): JobRecord[] {
    return [...this.#records.values()].sort((a, b) => b.createdAt - a.createdAt || (a.jobId < b.jobId ? -1 : 1));
  }

  /** Stores `record` (new, or the next state of one): `get` gives it at once; resolves once it is on disk. */
  save(record: JobRecord): Promise<void> {
    this.#records.set(record.jobId, record);
    const bytes = encoder.encode(encodeRecord(record));
    const write = this.#writing.then(() => this.#store.batch([{ type: 'put', key: keyOf(record.jobId), value: bytes }]));
    this.#writing = write.catch(() => {});
    return write;
  }

  /** Forgets a record (a bid that was never pooled). */
  delete(jobId: string): Promise<void> {
    this.#records.delete(jobId);
    const write = this.#writing.then(() => this.#store.batch([{ type: 'del', key: keyOf(jobId) }]));
    this.#writing = write.catch(() => {});
    return write;
  }

  /** Resolves once every save so far is on disk. */
  async flushed(): Promise<void> {
    await this.#writing;
  }
}
