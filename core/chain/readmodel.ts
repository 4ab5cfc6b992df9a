/**
 * The read models of node-api.md §4 kept beside the chain: per-node itemized transactions
 * (GET /transactions/:node_id) and interaction history (GET /history/:node_id). They are
 * observational, not consensus: written in the same atomic batch as the blocks they describe,
 * removed again when a block is disconnected or pruned.
 *
 * Keys:
 *   'T' node height(8) tx(2) n(1) → entry        one per transaction a node took part in
 *   'Y' node                       → totals       all-time counters and sums over held blocks
 *   'I' node height(8)             → count        heights with interactions (first/last height)
 *   'W' node bucket(4)             → sums         earned/spent per bucket of 1,440 blocks (window)
 *   'X' tx id                      → height       where a held transaction was confirmed (burn proofs)
 */

import { formatAmount } from '../encoding/amount.ts';
import { bytesKey, concatBytes } from '../encoding/bytes.ts';
import { bytes32, decode, encode, type Infer, option, struct, u8, u32, u128, uint53 } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import type { Direction, Interaction, TxEffect } from '../ledger/apply.ts';
import { HISTORY_WINDOW_BLOCKS } from '../ledger/params.ts';
import { TX_KINDS, type TxKind } from '../ledger/tx.ts';
import { type BatchOp, type KeyValueStore, prefixRange } from '../store/kv.ts';

const T = 0x54;
const Y = 0x59;
const I = 0x49;
const W = 0x57;
const X = 0x58;
const BUCKET_BLOCKS = 1_440;

const DIRECTIONS: readonly Direction[] = ['in', 'out', 'self'];
const INTERACTIONS: readonly (Interaction | null)[] = [null, 'job-hosted', 'job-paid', 'heartbeat-hosted', 'heartbeat-paid', 'expiry'];

const entryCodec = struct(
  {
    tx_id: bytes32,
    kind: u8,
    amount: u128,
    counterparty: option(bytes32),
    direction: u8,
    earned: u128,
    spent: u128,
    interaction: u8,
  },
  'tx entry',
);
type Entry = Infer<typeof entryCodec>;

const totalsCodec = struct(
  {
    jobs_hosted: uint53,
    jobs_paid: uint53,
    heartbeats_hosted: uint53,
    heartbeats_paid: uint53,
    expiries: uint53,
    earned: u128,
    spent: u128,
  },
  'history totals',
);
type Totals = Infer<typeof totalsCodec>;
const ZERO_TOTALS: Totals = { jobs_hosted: 0, jobs_paid: 0, heartbeats_hosted: 0, heartbeats_paid: 0, expiries: 0, earned: 0n, spent: 0n };

const sumsCodec = struct({ earned: u128, spent: u128 }, 'window sums');

const h8 = (height: number): Uint8Array => encode(uint53, height);
// The keys written for every transaction, built in place: a block of transfers writes three each.
function putHeight(key: Uint8Array, at: number, height: number): void {
  const high = Math.floor(height / 0x1_0000_0000);
  const low = height >>> 0;
  key[at] = high >>> 24;
  key[at + 1] = (high >>> 16) & 0xff;
  key[at + 2] = (high >>> 8) & 0xff;
  key[at + 3] = high & 0xff;
  key[at + 4] = low >>> 24;
  key[at + 5] = (low >>> 16) & 0xff;
  key[at + 6] = (low >>> 8) & 0xff;
  key[at + 7] = low & 0xff;
}
// The height written by putHeight, read in place: decoding it took a deep reorganisation's walk
// of 100,000 index entries a reader apiece.
function getHeight(key: Uint8Array, at: number): number {
  const high = ((key[at]! << 24) | (key[at + 1]! << 16) | (key[at + 2]! << 8) | key[at + 3]!) >>> 0;
  const low = ((key[at + 4]! << 24) | (key[at + 5]! << 16) | (key[at + 6]! << 8) | key[at + 7]!) >>> 0;
  return high * 0x1_0000_0000 + low;
}
function tKey(node: Uint8Array, height: number, tx: number, n: number): Uint8Array {
  const key = new Uint8Array(1 + node.length + 11);
  key[0] = T;
  key.set(node, 1);
  putHeight(key, 1 + node.length, height);
  key[node.length + 9] = tx >>> 8;
  key[node.length + 10] = tx & 0xff;
  key[node.length + 11] = n;
  return key;
}
const yKey = (node: Uint8Array): Uint8Array => concatBytes(Uint8Array.of(Y), node);
const iKey = (node: Uint8Array, height: number): Uint8Array => concatBytes(Uint8Array.of(I), node, h8(height));
const wKey = (node: Uint8Array, bucket: number): Uint8Array => concatBytes(Uint8Array.of(W), node, encode(u32, bucket));
function xKey(txId: Uint8Array): Uint8Array {
  const key = new Uint8Array(1 + txId.length);
  key[0] = X;
  key.set(txId, 1);
  return key;
}

function counts(entry: Entry): boolean {
  return entry.interaction !== 0 || entry.earned > 0n || entry.spent > 0n;
}

// `counts` of an encoded entry, without decoding it: an entry ends with earned and spent (16 bytes
// each) and interaction (1). A removed block's entries are mostly transfers, which count nothing,
// and decoding each of a deep reorganisation's 110,000 took a quarter of its removal.
function countsEncoded(bytes: Uint8Array): boolean {
  for (let i = bytes.length - 33; i < bytes.length; i++) if (bytes[i] !== 0) return true;
  return false;
}

/**
 * A batch being built over a store: reads see the batch's own earlier writes, and a key written
 * several times (a node's totals, once per transaction of a range) is written to the store once,
 * with its last value: the same outcome in a fraction of the writes. Its writes are taken with
 * `drain`, at the end or piecemeal (a reorganisation prepared while its branch is fetched).
 */
export class PendingBatch {
  // The last write of each key, for `get`.
  readonly #writes = new Map<string, BatchOp>();
  // The writes since the last drain: deletes before the rest (`delFirst`), the last write of each
  // key, then puts no later write overrides (`putLast`).
  #first: BatchOp[] = [];
  #since = new Map<string, BatchOp>();
  #last: BatchOp[] = [];
  readonly #store: KeyValueStore;

  constructor(store: KeyValueStore) {
    this.#store = store;
  }

  /**
   * The writes made since the last drain (every write, the first time), in the order to make
   * them: one per key but for `delFirst`'s, which come first, and `putLast`'s, which come last.
   * The writes of several drains are made in the order drained.
   */
  drain(): BatchOp[] {
    const ops = [...this.#first, ...this.#since.values(), ...this.#last];
    this.#first = [];
    this.#since = new Map();
    this.#last = [];
    return ops;
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    const pending = this.#writes.get(bytesKey(key));
    if (pending !== undefined) return pending.type === 'put' ? pending.value : undefined;
    return this.#store.get(key);
  }

  put(key: Uint8Array, value: Uint8Array): void {
    this.#write({ type: 'put', key, value });
  }

  /**
   * A put that no later write of this batch overrides, and that `get` need not see: written after
   * every other write of its drain (so it wins over an earlier one of the same key), without the
   * lookup that keeps one write per key. A block's index entries, one or more per transaction, go so.
   */
  putLast(key: Uint8Array, value: Uint8Array): void {
    this.#last.push({ type: 'put', key, value });
  }

  del(key: Uint8Array): void {
    this.#write({ type: 'del', key });
  }

  /**
   * A delete that overrides no earlier write of this batch, and that `get` need not see: written
   * before every other write of its drain, without the lookup that keeps one write per key. A
   * removed block's index entries go so (a 10,000-block reorganisation removes some 170,000).
   */
  delFirst(key: Uint8Array): void {
    this.#first.push({ type: 'del', key });
  }

  #write(op: BatchOp): void {
    const id = bytesKey(op.key);
    this.#writes.set(id, op);
    this.#since.set(id, op);
  }
}

// Adds (sign 1) or takes back (−1) counted entries of a node in its totals: one read and one write.
async function addTotals(batch: PendingBatch, node: Uint8Array, counted: readonly Entry[], sign: 1 | -1): Promise<void> {
  const yv = await batch.get(yKey(node));
  const t = yv === undefined ? { ...ZERO_TOTALS } : decode(totalsCodec, yv);
  for (const entry of counted) {
    const interaction = INTERACTIONS[entry.interaction];
    if (interaction === 'job-hosted') t.jobs_hosted += sign;
    if (interaction === 'job-paid') t.jobs_paid += sign;
    if (interaction === 'heartbeat-hosted') t.heartbeats_hosted += sign;
    if (interaction === 'heartbeat-paid') t.heartbeats_paid += sign;
    if (interaction === 'expiry') t.expiries += sign;
    t.earned += BigInt(sign) * entry.earned;
    t.spent += BigInt(sign) * entry.spent;
  }
  batch.put(yKey(node), encode(totalsCodec, t));
}

// Adds earned and spent (negative to take them back) to a node's sums of one bucket.
async function addSums(batch: PendingBatch, node: Uint8Array, bucket: number, earned: bigint, spent: bigint): Promise<void> {
  const wk = wKey(node, bucket);
  const wv = await batch.get(wk);
  const w = wv === undefined ? { earned: 0n, spent: 0n } : decode(sumsCodec, wv);
  w.earned += earned;
  w.spent += spent;
  if (w.earned === 0n && w.spent === 0n) batch.del(wk);
  else batch.put(wk, encode(sumsCodec, w));
}

// Adds a node's entries of one block to its totals, its count at that height and its window sums:
// one read and one write of each, however many entries.
async function adjust(batch: PendingBatch, node: Uint8Array, height: number, entries: readonly Entry[]): Promise<void> {
  const counted = entries.filter(counts);
  if (counted.length === 0) return;
  await addTotals(batch, node, counted, 1);
  // The count at a height is the node's counted entries of the one block there, all added or all
  // removed together: written or deleted without reading it back (a read per node and block, a
  // store read each, took a 10,000-block reorganisation seconds).
  batch.put(iKey(node, height), encode(u32, counted.length));
  await addSums(
    batch,
    node,
    Math.floor(height / BUCKET_BLOCKS),
    counted.reduce((sum, e) => sum + e.earned, 0n),
    counted.reduce((sum, e) => sum + e.spent, 0n),
  );
}

/** Indexes a connected block; returns the nodes involved (kept in the undo record for removal). */
export async function indexBlock(batch: PendingBatch, height: number, txIds: readonly Uint8Array[], effects: readonly TxEffect[]): Promise<Uint8Array[]> {
  // Each node's entries of the block, in the order met.
  const byNode = new Map<string, { node: Uint8Array; entries: Entry[] }>();
  const at = h8(height);
  // Index entries of the block's height: only an earlier removal (a block disconnected at that
  // height, or of the same transaction) writes them too.
  for (const id of txIds) batch.putLast(xKey(id), at);
  for (let i = 0; i < effects.length; i++) {
    const effect = effects[i]!;
    for (let n = 0; n < effect.involved.length; n++) {
      const inv = effect.involved[n]!;
      const entry: Entry = {
        tx_id: txIds[i]!,
        kind: TX_KINDS.indexOf(effect.kind),
        amount: effect.amount,
        counterparty: inv.counterparty,
        direction: DIRECTIONS.indexOf(inv.direction),
        earned: inv.earned,
        spent: inv.spent,
        interaction: INTERACTIONS.indexOf(inv.interaction),
      };
      batch.putLast(tKey(inv.node, height, i, n), encode(entryCodec, entry));
      const key = bytesKey(inv.node);
      const mine = byNode.get(key) ?? { node: inv.node, entries: [] };
      mine.entries.push(entry);
      byNode.set(key, mine);
    }
  }
  for (const { node, entries } of byNode.values()) await adjust(batch, node, height, entries);
  return [...byNode.values()].map((n) => n.node);
}

/**
 * Removes the index entries of the main-chain blocks at heights `low` to `high` (disconnected by a
 * reorganisation, or pruned): `nodes` are the nodes they involved (their undo records name them),
 * `txIds` their transactions. One walk of each node's entries over the heights, each entry taken
 * into `batch` as it comes, and the node's totals and window sums taken back once for all the
 * blocks: a 10,000-block reorganisation's 110,000 entries, read into memory first and then taken
 * back block by block, were a second of the thread's time.
 */
export async function unindexBlocks(
  batch: PendingBatch,
  store: KeyValueStore,
  low: number,
  high: number,
  nodes: Iterable<Uint8Array>,
  txIds: Iterable<Uint8Array>,
): Promise<void> {
  for (const id of txIds) batch.delFirst(xKey(id));
  const unique = new Map<string, Uint8Array>();
  for (const node of nodes) unique.set(toHex(node), node);
  for (const node of unique.values()) {
    const prefix = concatBytes(Uint8Array.of(T), node);
    const counted: Entry[] = [];
    let countedAt = -1;
    const buckets = new Map<number, { earned: bigint; spent: bigint }>();
    for await (const [key, value] of store.entries({ gte: concatBytes(prefix, h8(low)), lt: concatBytes(prefix, h8(high + 1)) })) {
      batch.delFirst(key);
      if (!countsEncoded(value)) continue;
      const entry = decode(entryCodec, value);
      const height = getHeight(key, prefix.length);
      // The count at a height, once (the walk goes by height): deleted ahead of the batch's other
      // writes, so that a block of the new branch at that height writes its own.
      if (height !== countedAt) batch.delFirst(iKey(node, height));
      countedAt = height;
      counted.push(entry);
      const bucket = Math.floor(height / BUCKET_BLOCKS);
      const sums = buckets.get(bucket) ?? { earned: 0n, spent: 0n };
      sums.earned += entry.earned;
      sums.spent += entry.spent;
      buckets.set(bucket, sums);
    }
    if (counted.length === 0) continue;
    await addTotals(batch, node, counted, -1);
    for (const [bucket, { earned, spent }] of buckets) await addSums(batch, node, bucket, -earned, -spent);
  }
}

/** The height at which a held transaction was confirmed on the main chain. */
export async function txHeight(store: KeyValueStore, txId: Uint8Array): Promise<number | undefined> {
  const v = await store.get(xKey(txId));
  return v === undefined ? undefined : decode(uint53, v);
}

/** One row of GET /transactions/:node_id. */
export interface TxListItem {
  tx_id: string;
  height: number;
  kind: TxKind;
  amount: string;
  counterparty?: string;
  direction: Direction;
}

/** A node's confirmed transactions, newest first, below height `before` when given. */
export async function listTransactions(store: KeyValueStore, node: Uint8Array, options: { limit: number; before?: number }): Promise<TxListItem[]> {
  const prefix = concatBytes(Uint8Array.of(T), node);
  const range = prefixRange(prefix, { reverse: true, limit: options.limit });
  const lt = options.before === undefined ? range.lt : concatBytes(prefix, h8(options.before));
  const out: TxListItem[] = [];
  for await (const [k, v] of store.entries({ ...range, ...(lt ? { lt } : {}) })) {
    const e = decode(entryCodec, v);
    const height = decode(uint53, k.subarray(33, 41));
    out.push({
      tx_id: toHex(e.tx_id),
      height,
      kind: TX_KINDS[e.kind]!,
      amount: formatAmount(e.amount),
      ...(e.counterparty ? { counterparty: toHex(e.counterparty) } : {}),
      direction: DIRECTIONS[e.direction]!,
    });
  }
  return out;
}

/** GET /history/:node_id. */
export interface History {
  node_id: string;
  jobs_hosted: number;
  jobs_paid: number;
  heartbeats_hosted: number;
  heartbeats_paid: number;
  expiries: number;
  earned: string;
  spent: string;
  first_height: number;
  last_height: number;
  window_blocks: number;
  recent_earned: string;
  recent_spent: string;
  window_partial: boolean;
}

/**
 * A node's interaction history over the blocks this node holds (`heldFrom` is the lowest height
 * whose transactions are indexed: 1 on a full node, after the checkpoint on a light one).
 */
export async function history(store: KeyValueStore, node: Uint8Array, tip: number, heldFrom: number): Promise<History> {
  const yv = await store.get(yKey(node));
  const t = yv === undefined ? ZERO_TOTALS : decode(totalsCodec, yv);
  const firstHeight = async (reverse: boolean): Promise<number> => {
    for await (const [k] of store.entries(prefixRange(concatBytes(Uint8Array.of(I), node), { reverse, limit: 1 }))) {
      return decode(uint53, k.subarray(33, 41));
    }
    return 0;
  };
  const windowStart = Math.max(1, tip - HISTORY_WINDOW_BLOCKS + 1);
  let earned = 0n;
  let spent = 0n;
  // Whole buckets inside the window from the sums; the bucket cut by the window's start entry by entry.
  const firstBucket = Math.floor(windowStart / BUCKET_BLOCKS);
  const wPrefix = concatBytes(Uint8Array.of(W), node);
  for await (const [, v] of store.entries({ ...prefixRange(wPrefix), gte: wKey(node, firstBucket + 1) })) {
    const s = decode(sumsCodec, v);
    earned += s.earned;
    spent += s.spent;
  }
  const cutEnd = Math.min((firstBucket + 1) * BUCKET_BLOCKS, tip + 1);
  const tPrefix = concatBytes(Uint8Array.of(T), node);
  for await (const [, v] of store.entries({ gte: concatBytes(tPrefix, h8(windowStart)), lt: concatBytes(tPrefix, h8(cutEnd)) })) {
    const e = decode(entryCodec, v);
    earned += e.earned;
    spent += e.spent;
  }
  return {
    node_id: toHex(node),
    jobs_hosted: t.jobs_hosted,
    jobs_paid: t.jobs_paid,
    heartbeats_hosted: t.heartbeats_hosted,
    heartbeats_paid: t.heartbeats_paid,
    expiries: t.expiries,
    earned: formatAmount(t.earned),
    spent: formatAmount(t.spent),
    first_height: await firstHeight(false),
    last_height: await firstHeight(true),
    window_blocks: HISTORY_WINDOW_BLOCKS,
    recent_earned: formatAmount(earned),
    recent_spent: formatAmount(spent),
    window_partial: heldFrom > windowStart,
  };
}
