/**
 * The channels this node is party to, as payer or as host, kept in a key-value store (a LevelDB of
 * its own on the Node host) so that a node restarted after kill -9 still knows every channel it
 * opened and, above all, the best receipt it holds as a host: a receipt is acknowledged only once
 * it is written. One record per channel id (the ledger never lets a node be both payer and host of
 * one channel). Records are this node's own bookkeeping, never hashed or signed, so they are JSON.
 */
import { fromHex } from '../encoding/hex.ts';
import { type BatchOp, type KeyValueStore, prefixRange } from '../store/kv.ts';
import type { ChannelRole, ChannelStatus } from './types.ts';

/** What both sides keep about a channel. Amounts are decimal strings of base units. */
interface ChannelRecordCommon {
  readonly channelId: string;
  readonly payer: string;
  readonly host: string;
  readonly capacity: string;
  readonly expiryHeight: number;
  /** Changed only through the channel's machine (machine.ts). */
  status: ChannelStatus;
  /** Payer: the highest cumulative signed; host: the best receipt held. '0' with no receipt. */
  cumulative: string;
  /** The payer's signature over `cumulative`, hex; null with no receipt. */
  payerSig: string | null;
  openHeight: number | null;
  /** The ChannelClose or ChannelExpire sent or seen, hex id. */
  endTx: string | null;
  /** Once closed: the cumulative the ChannelClose paid and its burn. */
  settled: { cumulative: string; burned: string } | null;
  /** Unix ms: when this node first recorded it. */
  readonly createdMs: number;
}

/** The payer's record: what the host said it holds, and the ChannelOpen until it is mined. */
export interface PayerChannelRecord extends ChannelRecordCommon {
  readonly role: 'payer';
  /** The highest cumulative the host said it holds. */
  delivered: string;
  /** The signed ChannelOpen, hex, and its nonce (it is pooled again after a restart until mined). */
  readonly openTx: string | null;
  readonly openNonce: number | null;
}

/** The host's record: the best receipt it holds. */
export interface HostChannelRecord extends ChannelRecordCommon {
  readonly role: 'host';
}

/** Everything the node keeps about a channel, as its payer or as its host. */
export type ChannelRecord = PayerChannelRecord | HostChannelRecord;

/** What a new record is made of; everything else starts empty. */
export interface RecordStart {
  readonly channelId: string;
  readonly role: ChannelRole;
  readonly payer: string;
  readonly host: string;
  readonly capacity: string;
  readonly expiryHeight: number;
  readonly status: ChannelStatus;
  readonly createdMs: number;
  readonly openTx?: string | null;
  readonly openNonce?: number | null;
  readonly openHeight?: number | null;
}

/** A new channel's record: no receipt, nothing delivered, not ended. */
export function newChannelRecord({ role, openTx = null, openNonce = null, openHeight = null, ...start }: RecordStart): ChannelRecord {
  const common = { ...start, openHeight, cumulative: '0', payerSig: null, endTx: null, settled: null };
  return role === 'payer' ? { ...common, role, delivered: '0', openTx, openNonce } : { ...common, role };
}

/** Whether nothing more can happen to the channel. */
export function isFinal(record: ChannelRecord): boolean {
  return record.status === 'closed' || record.status === 'expired';
}

const PREFIX = 0x43; // 'C' + channel id
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function keyOf(channelId: string): Uint8Array {
  const key = new Uint8Array(33);
  key[0] = PREFIX;
  key.set(fromHex(channelId, 32), 1);
  return key;
}

/**
 * The records in memory, written through to the store. Writes are grouped: while one batch is being
 * written, the changes made meanwhile wait, and only the latest state of each record goes into the
 * next batch. A record is never written older than it was, and a burst of receipts costs the store
 * one write per batch rather than one per receipt.
 */
export class ChannelBook {
  readonly #store: KeyValueStore;
  readonly #records = new Map<string, ChannelRecord>();
  // Records changed (null: deleted) since the last batch began; encoded when their batch is made.
  readonly #pending = new Map<string, ChannelRecord | null>();
  // The batch being written, and the one that will take what is pending once it is done.
  #current: Promise<void> = Promise.resolve();
  #next: Promise<void> | null = null;

  private constructor(store: KeyValueStore) {
    this.#store = store;
  }

  static async open(store: KeyValueStore): Promise<ChannelBook> {
    const book = new ChannelBook(store);
    for await (const [, value] of store.entries(prefixRange(Uint8Array.of(PREFIX)))) {
      const record = JSON.parse(decoder.decode(value)) as ChannelRecord;
      book.#records.set(record.channelId, record);
    }
    return book;
  }

  get(channelId: string): ChannelRecord | undefined {
    return this.#records.get(channelId);
  }

  /** Every record, in no order: what a walk after each block reads, without a copy or a sort. */
  records(): IterableIterator<ChannelRecord> {
    return this.#records.values();
  }

  /** Every record, newest first. */
  all(): ChannelRecord[] {
    return [...this.#records.values()].sort((a, b) => b.createdMs - a.createdMs || (a.channelId < b.channelId ? -1 : 1));
  }

  /** Stores `record` (new or changed); resolves once it is written as it is now, or as changed since. */
  save(record: ChannelRecord): Promise<void> {
    this.#records.set(record.channelId, record);
    this.#pending.set(record.channelId, record);
    return this.#batch();
  }

  /** Forgets a record (a ChannelOpen that was never pooled, or can never be mined). */
  delete(channelId: string): Promise<void> {
    this.#records.delete(channelId);
    this.#pending.set(channelId, null);
    return this.#batch();
  }

  /** The batch that will hold what is pending now. */
  #batch(): Promise<void> {
    if (this.#next === null) {
      const next = this.#current.then(() => {
        this.#next = null;
        const ops = [...this.#pending].map(
          ([id, record]): BatchOp =>
            record === null ? { type: 'del', key: keyOf(id) } : { type: 'put', key: keyOf(id), value: encoder.encode(JSON.stringify(record)) },
        );
        this.#pending.clear();
        return this.#store.batch(ops);
      });
      this.#next = next;
      this.#current = next.catch(() => {});
    }
    return this.#next;
  }
}
