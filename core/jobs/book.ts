/**
 * The jobs this node is party to, as payer or as host, kept in a key-value store so a restarted
 * node (even after kill -9) knows every job it placed or runs: each change is written before it
 * is acted on. One record per job id (a node is never both payer and host of one job: the ledger
 * refuses it). Records are this node's own bookkeeping, never hashed or signed, so they are JSON.
 */
import { fromHex } from '../encoding/hex.ts';
import { prefixRange, type KeyValueStore } from '../store/kv.ts';
import type { Billing, JobRole, JobStatus, LogEvent, Refusal } from './types.ts';

/** Everything the node keeps about a job. Amounts are decimal strings of base units. */
export interface JobRecord {
  readonly jobId: string;
  readonly role: JobRole;
  readonly payer: string;
  /** The host the job is placed with; null while it waits. */
  host: string | null;
  /** Payer: hosts an offer went to that have not answered it (one may still take the job). */
  unanswered: string[];
  /** Payer: hosts not asked again for this job (they took it and did not start it). */
  passedOver?: string[];
  /** Payer: when the first offer went out (unix ms): no host can have run the job for longer since. */
  firstOfferMs?: number;
  status: JobStatus;
  readonly billing: Billing;
  /** The spec's canonical bytes and the signed JobBid, hex (the payer offers them again, the host checks them). */
  readonly spec: string;
  bidTx: string | null;
  readonly bid: string;
  readonly createdAt: number;
  /** Payer: when it stops waiting for a host (unix ms). */
  readonly placeBy: number;
  containerId: string | null;
  startedMs: number | null;
  finishedMs: number | null;
  exitCode: number | null;
  /** Why it ended abnormally (the status says `failed: <reason>`). */
  reason: string | null;
  /** What the host asks (ended) and, once mined, what was paid. */
  askedCost: string | null;
  cost: string | null;
  /** The payer's v2 signature over askedCost, hex. */
  payerSig: string | null;
  /** Host: the JobSettle sent, hex id. */
  settleTx: string | null;
  refusals: Refusal[];
  heartbeats: { count: number; paid: string };
  /** Host: unix ms of the last heartbeat sent, and the epoch it carried. */
  lastBeatMs: number | null;
  /** Host: the stop it asked for (duration, payer, operator, dry cell), so the exit is read right. */
  stopCause: string | null;
  /** Host: the state last reported to the payer and answered (a change is sent until answered). */
  reportedState: string | null;

  outputTail: LogEvent[];
}

/** What a new record is made of; everything else starts empty. */
export type RecordStart = Pick<JobRecord, 'jobId' | 'role' | 'payer' | 'host' | 'billing' | 'spec' | 'bidTx' | 'bid' | 'createdAt' | 'placeBy'> &
  Partial<Pick<JobRecord, 'firstOfferMs'>>;

/** A new job's record: pending, nothing run, nothing paid. */
export function newRecord(start: RecordStart): JobRecord {
  return {
    ...start,
    unanswered: [],
    status: 'pending',
    containerId: null,
    startedMs: null,
    finishedMs: null,
    exitCode: null,
    reason: null,
    askedCost: null,
    cost: null,
    payerSig: null,
    settleTx: null,
    refusals: [],
    heartbeats: { count: 0, paid: '0' },
    lastBeatMs: null,
    stopCause: null,
    reportedState: null,
    outputTail: [],
  };
}

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
      const record = JSON.parse(decoder.decode(value)) as JobRecord;
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

  /** Stores `record` (new or changed); resolves once it is on disk. */
  save(record: JobRecord): Promise<void> {
    this.#records.set(record.jobId, record);
    const bytes = encoder.encode(JSON.stringify(record));
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
