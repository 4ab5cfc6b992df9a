/**
 * The mempool: signed transactions waiting for a block.
 *
 * A transaction enters only if its signatures verify and it applies to the tip state after the
 * sender's earlier pooled transactions (so each sender's queue is a valid nonce sequence). The pool
 * is bounded in total and per sender, rejects duplicates, drops what a new block included or made
 * invalid, and takes back the transactions of blocks a reorganisation disconnected.
 *
 * Transactions carry no fee, and some kinds (TrustGrant, RevokeCapability) cost nothing, so any
 * number of fresh keys could fill the pool and every block. The pool therefore ranks senders by
 * their free balance at the tip: a full pool makes room for a richer sender by dropping the last
 * transaction of the poorest one, and blocks take senders richest first. A key with nothing at
 * stake never displaces one that holds credits.
 */
import { verifyBatch } from '../crypto/ed25519.ts';
import { toHex } from '../encoding/hex.ts';
import { type ErrorTable, RuledError } from '../errors.ts';
import { applyTx, signedMessages, type TxEffect } from '../ledger/apply.ts';
import { freeBalance } from '../ledger/state.ts';
import type { Tx } from '../ledger/tx.ts';
import type { Chain, ChainEvent } from './chain.ts';

// A transaction that conflicts with the pool (POST /transfer answers 409), and one the pool has no
// room for now (503 with Retry-After: the client may retry after a block).
const CONFLICT = { status: 409, problem: 'transaction-conflict' } as const;
const BUSY = { status: 503, problem: 'pool-full' } as const;

/**
 * Every code a MempoolError carries, with its gossip verdict (a bad signature is the message's
 * fault; the rest say only that this pool will not hold it now) and the API's answer.
 */
export const MEMPOOL_ERRORS = {
  /** The transaction is pooled already. */
  duplicate: { verdict: 'ignore', ...CONFLICT },
  /** An UptimeReward: made by a block's producer, never pooled. */
  'reward-not-poolable': { verdict: 'reject', ...CONFLICT },
  /** The sender's signature does not verify. */
  'bad-signature': { verdict: 'reject', ...CONFLICT },
  /** A co-signature or an evidence signature does not verify. */
  'bad-cosignature': { verdict: 'reject', ...CONFLICT },
  /** The pool is full. */
  full: { verdict: 'ignore', ...BUSY },
  /** The pool holds as many transactions from this sender as it takes. */
  'sender-full': { verdict: 'ignore', ...BUSY },
  /** The transaction would not apply after the sender's pooled ones. */
  'invalid-after-pool': { verdict: 'ignore', ...CONFLICT },
} as const satisfies ErrorTable;

export type MempoolErrorCode = keyof typeof MEMPOOL_ERRORS;

/** A transaction is refused by the pool itself (duplicate, full, wrong kind); `code` names why. */
export class MempoolError extends RuledError<typeof MEMPOOL_ERRORS> {
  constructor(code: MempoolErrorCode, message: string) {
    super(MEMPOOL_ERRORS, code, message);
  }
}

export interface MempoolOptions {
  /** Transactions held in all. */
  readonly maxSize?: number;
  /** Transactions held per sender. */
  readonly maxPerSender?: number;
}

const NOBODY = new Uint8Array(32);

export class Mempool {
  readonly #chain: Chain;
  readonly #maxSize: number;
  readonly #maxPerSender: number;
  readonly #byId = new Map<string, Tx>();
  // Sender (hex) → its transactions in nonce order. Map order is arrival order of senders.
  readonly #bySender = new Map<string, Tx[]>();
  readonly #unsubscribe: () => void;
  // Set while connected blocks have not been followed by a re-check of the queues (see #onChain).
  #stale = false;
  // Senders whose queues took back transactions of disconnected blocks
  // (with how many of each queue's transactions were pooled before), unsorted until the re-check.
  readonly #returned = new Map<string, number>();

  constructor(chain: Chain, options: MempoolOptions = {}) {
    this.#chain = chain;
    this.#maxSize = options.maxSize ?? 20_000;
    this.#maxPerSender = options.maxPerSender ?? 64;
    this.#unsubscribe = chain.subscribe((event) => this.#onChain(event));
  }

  get size(): number {
    this.#recheck();
    return this.#byId.size;
  }

  has(id: Uint8Array): boolean {
    this.#recheck();
    return this.#byId.has(toHex(id));
  }

  /** Every pooled transaction, by sender in nonce order. */
  pending(): Tx[] {
    this.#recheck();
    return [...this.#bySender.values()].flat();
  }

  /** The pooled transactions of `sender`, in nonce order. */
  queueOf(sender: Uint8Array): readonly Tx[] {
    this.#recheck();
    return this.#bySender.get(toHex(sender)) ?? [];
  }

  /** Stops following the chain. */
  close(): void {
    this.#unsubscribe();
  }

  /**
   * Verifies and pools `tx`. Throws InvalidSignatureError-free MeshErrors: MempoolError for pool
   * rules, LedgerRuleError when the transaction does not apply to the tip state. Resolves to what
   * the transaction does when applied after the sender's pooled ones (its amount for the streams).
   */
  async add(tx: Tx): Promise<TxEffect> {
    this.#recheck();
    const id = toHex(tx.id);
    if (this.#byId.has(id)) throw new MempoolError('duplicate', `transaction ${id} is already pooled`);
    if (tx.body.kind === 'UptimeReward') throw new MempoolError('reward-not-poolable', "an UptimeReward is made by a block's producer, not pooled");
    const verdicts = await verifyBatch(signedMessages(tx, this.#chain.params.network), this.#chain.crypto.ed25519);
    const bad = verdicts.indexOf(false);
    if (bad >= 0) {
      throw new MempoolError(
        bad === 0 ? 'bad-signature' : 'bad-cosignature',
        bad === 0 ? "the sender's signature does not verify" : 'a co-signature or evidence signature does not verify',
      );
    }
    // The chain may have moved while the signatures were checked: everything below is synchronous.
    this.#recheck();
    if (this.#byId.has(id)) throw new MempoolError('duplicate', `transaction ${id} is already pooled`);
    const sender = toHex(tx.body.sender);
    const queue = this.#bySender.get(sender) ?? [];
    // A transaction with a pooled nonce replaces the pooled one, if the queue stays valid: a sender
    // can always take back a transaction that no longer applies.
    const replaced = queue.find((q) => q.body.nonce === tx.body.nonce);
    if (replaced === undefined && queue.length >= this.#maxPerSender) {
      throw new MempoolError('sender-full', `the pool holds ${this.#maxPerSender} transactions from this sender`);
    }
    const evicted = replaced === undefined && this.#byId.size >= this.#maxSize ? this.#roomFor(sender, tx.body.sender) : undefined;
    const candidate = [...queue.filter((q) => q !== replaced), tx].sort((a, b) => a.body.nonce - b.body.nonce);
    const effects = this.#validPrefix(candidate);
    if (effects.length < candidate.length) {
      // Report the new transaction's own failure, with the rule it broke.
      this.#simulate(candidate.slice(0, candidate.indexOf(tx) + 1));
      throw new MempoolError('invalid-after-pool', "the transaction would not apply after the sender's pooled ones");
    }
    if (replaced !== undefined) this.#byId.delete(toHex(replaced.id));
    if (evicted !== undefined) this.#remove(evicted);
    this.#bySender.set(sender, candidate);
    this.#byId.set(id, tx);
    return effects[candidate.indexOf(tx)]!;
  }

  /**
   * Transactions for the next block, at most `max`, applied in order to `state`-like simulation: each
   * sender's queue in nonce order, senders in arrival order, skipping what no longer applies.
   * The caller applies them again when building the block (see miner.ts).
   */
  select(max: number): Tx[] {
    this.#recheck();
    const out: Tx[] = [];
    // Richest senders first; among equals, arrival order (the sort is stable).
    const queues = [...this.#bySender.values()]
      .map((queue) => ({ queue, priority: this.#priority(queue[0]!.body.sender) }))
      .sort((a, b) => (a.priority === b.priority ? 0 : a.priority > b.priority ? -1 : 1));
    for (const { queue } of queues) {
      for (const tx of queue) {
        if (out.length >= max) return out;
        out.push(tx);
      }
    }
    return out;
  }

  // A sender's rank in a full pool and in blocks: its free balance at the tip.
  #priority(sender: Uint8Array): bigint {
    return freeBalance(this.#chain.state.account(sender), this.#chain.tip.height);
  }

  /**
   * The pool is full: finds the transaction to drop for one from `sender`, the last of the poorest
   * other sender, if that sender is strictly poorer; else refuses. A sender with nothing free is
   * refused without a scan, so a flood from fresh keys costs one lookup each.
   */
  #roomFor(sender: string, senderKey: Uint8Array): Tx {
    const full = new MempoolError('full', `the pool holds ${this.#maxSize} transactions from senders with at least as much free balance`);
    const priority = this.#priority(senderKey);
    if (priority === 0n) throw full;
    let poorest: Tx[] | undefined;
    let lowest = priority;
    for (const [other, queue] of this.#bySender) {
      if (other === sender) continue;
      const p = this.#priority(queue[0]!.body.sender);
      if (p < lowest) {
        lowest = p;
        poorest = queue;
        if (p === 0n) break;
      }
    }
    if (poorest === undefined) throw full;
    return poorest[poorest.length - 1]!;
  }

  // Applies `txs` in order to the tip state and undoes them; throws the first rule broken.
  #simulate(txs: readonly Tx[]): TxEffect[] {
    const state = this.#chain.state;
    const mark = state.mark();
    const ctx = { network: this.#chain.params.network, height: this.#chain.tip.height + 1, producer: NOBODY, nameBlocks: this.#chain.params.nameBlocks };
    try {
      return txs.map((tx) => applyTx(state, tx, ctx));
    } finally {
      state.revert(mark);
      state.commit(mark);
    }
  }

  // The effects of the longest prefix of `txs` that applies in order to the tip state.
  #validPrefix(txs: readonly Tx[]): TxEffect[] {
    const state = this.#chain.state;
    const mark = state.mark();
    const ctx = { network: this.#chain.params.network, height: this.#chain.tip.height + 1, producer: NOBODY, nameBlocks: this.#chain.params.nameBlocks };
    const effects: TxEffect[] = [];
    try {
      for (const tx of txs) effects.push(applyTx(state, tx, ctx));
    } catch {
      // The first failure ends the valid prefix.
    } finally {
      state.revert(mark);
      state.commit(mark);
    }
    return effects;
  }

  #remove(tx: Tx): void {
    // An empty pool (a node catching up) has nothing to look up for each mined transaction.
    if (this.#byId.size === 0) return;
    const id = toHex(tx.id);
    if (!this.#byId.delete(id)) return;
    const sender = toHex(tx.body.sender);
    const queue = this.#bySender.get(sender)?.filter((q) => toHex(q.id) !== id) ?? [];
    if (queue.length === 0) this.#bySender.delete(sender);
    else this.#bySender.set(sender, queue);
  }

  #recheck(): void {
    if (!this.#stale) return;
    this.#stale = false;
    for (const sender of this.#returned.keys()) this.#bySender.get(sender)?.sort((a, b) => a.body.nonce - b.body.nonce);
    this.#returned.clear();
    this.#revalidate([...this.#bySender.keys()]);
  }

  // Re-checks the queues of `senders` against the tip; drops each queue's invalid tail.
  #revalidate(senders: Iterable<string>): void {
    for (const sender of senders) {
      const pending = this.#bySender.get(sender);
      if (!pending) continue;
      // Nonces a block used are spent whatever the transaction; the rest must still apply in order.
      const used = this.#chain.state.account(pending[0]!.body.sender).nonce;
      const queue = pending.filter((t) => t.body.nonce > used);
      const kept = queue.slice(0, this.#validPrefix(queue).length);
      // Dropped all at once: one at a time, a queue of thousands (a deep reorganisation's) took quadratic time.
      if (kept.length === pending.length) continue;
      const keep = new Set(kept);
      for (const tx of pending) if (!keep.has(tx)) this.#byId.delete(toHex(tx.id));
      if (kept.length === 0) this.#bySender.delete(sender);
      else this.#bySender.set(sender, kept);
    }
  }

  // A reorganisation emits every `disconnected` block (newest first) before the `connected` ones,
  // so returning transactions are only queued there, and every queue is checked once the new
  // blocks are in: a sender's nonce 2 from a later block waits for its nonce 1 from an earlier one.
  // Every sender is re-checked, not only those a block touched: another account's block can void a
  // pooled transaction (a name taken, a job expired), and it must not stay to block its sender.
  // The re-check waits until every block of a branch is in: a sync answer connects up to 500 blocks
  // in one go, and re-checking thousands of pooled transactions after each of them took seconds.
  // It runs once the chain's events are through (a microtask), or earlier if the pool is read.
  #onChain(event: ChainEvent): void {
    if (event.type === 'equivocation') return;
    if (event.type === 'connected') {
      for (const tx of event.block.txs) this.#remove(tx);
      if (!this.#stale) {
        this.#stale = true;
        queueMicrotask(() => this.#recheck());
      }
      return;
    }
    // Appended here and sorted once at the re-check: sorted per transaction, the queue of a
    // reorganisation thousands of blocks deep took minutes.
    for (const tx of event.block.txs) {
      // The size first: a deep reorganisation returns more transactions than the pool holds.
      if (tx.body.kind === 'UptimeReward' || this.#byId.size >= this.#maxSize) continue;
      const id = toHex(tx.id);
      if (this.#byId.has(id)) continue;
      const sender = toHex(tx.body.sender);
      const queue = this.#bySender.get(sender) ?? [];
      // A returning transaction takes its nonce back from a pooled one. Only the transactions
      // pooled before the reorganisation (at most a sender's share) are looked through: returning
      // ones come from distinct blocks, so never share a nonce.
      const pooled = this.#returned.get(sender) ?? queue.length;
      // Only those are visited: a sender's thousands of returning transactions, each looked
      // through whole, cost a 10,000-block reorganisation 0.6 s.
      let twin = -1;
      for (let i = 0; i < pooled && twin === -1; i++) if (queue[i]!.body.nonce === tx.body.nonce) twin = i;
      if (twin !== -1) this.#byId.delete(toHex(queue.splice(twin, 1)[0]!.id));
      queue.push(tx);
      this.#bySender.set(sender, queue);
      this.#returned.set(sender, twin === -1 ? pooled : pooled - 1);
      this.#byId.set(id, tx);
    }
    if (!this.#stale) {
      this.#stale = true;
      queueMicrotask(() => this.#recheck());
    }
  }
}
