/**
 * The node's validated signals: the rules of node-api.md §2 "Signal" applied in order, the last
 * signals kept for GET /signals and /signals/stream, and the burn proofs this node makes for its
 * own signals. The rules and their gossip verdicts are in docs/signals.md.
 */
import { formatCredits } from '../encoding/amount.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import type { Block } from '../ledger/block.ts';
import type { Tx } from '../ledger/tx.ts';
import { type Clock, systemClock } from '../time/clock.ts';
import { type Burn, burnOfTx, heartbeatRate } from './burn.ts';
import { SignalError } from './errors.ts';
import { type BurnProof, type SignedSignal, signalObject, verifySignalSignature } from './signal.ts';
import type { SignalObject } from './types.ts';

/**
 * Finds a transaction in this node's main chain: the block at `height` and, when that block holds
 * it, the transaction with id `txId`. Undefined when this node holds no main-chain block at that
 * height. A block that is held but lacks the transaction may be answered as `{ blockHash }` (so a
 * forged proof is rejected) or as undefined (it is then only ignored).
 */
export type BurnLookup = (txId: Uint8Array, height: number) => Promise<{ blockHash: Uint8Array; tx?: Tx } | undefined>;

/** The main-chain height of a confirmed transaction (from a transaction index), or undefined. */
export type TxLocator = (txId: Uint8Array) => Promise<number | undefined>;

export interface SignalBookOptions {
  /** The network signals are signed for. */
  readonly network: string;
  /** This node's id: signals addressed to it (or broadcast) are kept. */
  readonly self: Uint8Array;
  readonly lookupBurn: BurnLookup;
  /**
   * Locates transactions: needed to make burn proofs (`burnProof`) and to price a Heartbeat's burn
   * (its rate comes from the job's bid). Without it, proofs naming a Heartbeat are ignored.
   */
  readonly locateTx?: TxLocator;
  /** Signals kept for GET /signals (default 100, node-api.md §8). */
  readonly keep?: number;
  /** Senders whose last nonce is remembered (default 10,000; the least recently heard is forgotten). */
  readonly maxSenders?: number;
  /** Burns remembered as spent (default 10,000, the most recent). */
  readonly maxUsedBurns?: number;
  /** Dates the kept signals' positions (default: the system clock). */
  readonly clock?: Clock;
}

/**
 * A kept signal and its position among the kept ones: `max(previous + 1, now in ms)`, so positions
 * rise for the node's life and across restarts (as long as its clock does), and /signals/stream
 * can resume after one with `Last-Event-ID`.
 */
export interface KeptSignal {
  readonly seq: number;
  readonly signal: SignalObject;
}

/** Which kept signals a reader wants: from one sender, to one addressee (a node id or `broadcast`), or both. */
export interface SignalFilter {
  /** A sender's node id (hex), or null for any. */
  readonly from: string | null;
  /** `broadcast`, a node id (hex), or null for any. */
  readonly to: string | null;
}

export const ANY_SIGNAL: SignalFilter = Object.freeze({ from: null, to: null });

/** Whether `signal` passes `filter`. */
export function matches(signal: SignalObject, filter: SignalFilter): boolean {
  return (filter.from === null || signal.from === filter.from) && (filter.to === null || signal.to === filter.to);
}

/** Signals GET /signals shows (node-api.md §8). */
export const SIGNALS_KEPT = 100;
const MAX_SENDERS = 10_000;
const MAX_USED_BURNS = 10_000;

/** A BurnLookup over a chain's main-chain blocks (`Chain.blockAt`). */
export function chainBurnLookup(chain: { blockAt(height: number): Promise<Block | undefined> }): BurnLookup {
  return async (txId, height) => {
    const block = await chain.blockAt(height);
    if (block === undefined) return undefined;
    const tx = block.txs.find((t) => bytesEqual(t.id, txId));
    return tx === undefined ? { blockHash: block.hash } : { blockHash: block.hash, tx };
  };
}

// The burn of `tx`, or null when it burns nothing, or 'unknown' when this node cannot tell (a
// Heartbeat whose job's bid it cannot find).
async function resolveBurn(tx: Tx, locateTx: TxLocator | undefined, lookupBurn: BurnLookup): Promise<Burn | null | 'unknown'> {
  if (tx.body.kind !== 'Heartbeat') return burnOfTx(tx);
  const jobId = tx.body.job_id;
  const height = locateTx === undefined ? undefined : await locateTx(jobId);
  const bid = height === undefined ? undefined : (await lookupBurn(jobId, height))?.tx;
  if (bid === undefined || bid.body.kind !== 'JobBid') return 'unknown';
  return burnOfTx(tx, heartbeatRate(bid.body));
}

/**
 * The burn proof for a signal from `sender` backed by the confirmed transaction `txId` (what POST
 * /signals/send does with burn_tx_id_hex). Throws SignalError 'burn-not-found' when this node
 * cannot locate the transaction in its main chain, 'not-a-burn' when it burns nothing, and
 * 'burn-not-sender' when someone else paid its burn.
 */
export async function burnProofFor(txId: Uint8Array, sender: Uint8Array, locateTx: TxLocator, lookupBurn: BurnLookup): Promise<BurnProof> {
  const id = toHex(txId);
  const height = await locateTx(txId);
  const found = height === undefined ? undefined : await lookupBurn(txId, height);
  if (height === undefined || found?.tx === undefined) {
    throw new SignalError('burn-not-found', `transaction ${id} is not confirmed on this node's main chain`);
  }
  const burn = await resolveBurn(found.tx, locateTx, lookupBurn);
  if (burn === 'unknown') {
    throw new SignalError('burn-not-found', `the bid of heartbeat ${id} is not held here, so its burn is unknown`);
  }
  if (burn === null) throw new SignalError('not-a-burn', `transaction ${id} (${found.tx.body.kind}) burns nothing`);
  if (!bytesEqual(burn.burner, sender)) {
    throw new SignalError('burn-not-sender', `the burn of transaction ${id} was paid by ${toHex(burn.burner)}, not the sender`);
  }
  return { tx_id: txId.slice(), amount: burn.burned, block_height: height, block_hash: found.blockHash.slice() };
}

/**
 * The validated signals of one node. `accept` applies the rules in order and throws a SignalError
 * whose `verdict` tells gossip to reject or ignore; `list` gives the kept ones, newest last.
 *
 * Sending a signal of one's own: `nextNonce(now)`, `burnProof(txId)` when the payload is not
 * empty, `signSignal`, then `accept` it here before publishing, so it meets the rules peers apply.
 */
export class SignalBook {
  readonly #network: string;
  readonly #self: Uint8Array;
  readonly #lookupBurn: BurnLookup;
  readonly #locateTx: TxLocator | undefined;
  readonly #keep: number;
  readonly #maxSenders: number;
  readonly #maxUsedBurns: number;
  // Last accepted nonce per sender (hex), least recently updated first.
  readonly #nonces = new Map<string, number>();
  // Burn tx ids (hex) that backed an accepted signal, oldest first.
  readonly #usedBurns = new Set<string>();
  readonly #kept: KeptSignal[] = [];
  readonly #listeners = new Set<(kept: KeptSignal) => void>();
  readonly #clock: Clock;
  #lastSeq = 0;
  #lastIssued = -1;

  constructor(options: SignalBookOptions) {
    this.#network = options.network;
    this.#self = options.self.slice();
    this.#lookupBurn = options.lookupBurn;
    this.#locateTx = options.locateTx;
    this.#keep = positiveInteger(options.keep ?? SIGNALS_KEPT, 'keep');
    this.#maxSenders = positiveInteger(options.maxSenders ?? MAX_SENDERS, 'maxSenders');
    this.#maxUsedBurns = positiveInteger(options.maxUsedBurns ?? MAX_USED_BURNS, 'maxUsedBurns');
    this.#clock = options.clock ?? systemClock;
  }

  /**
   * Validates `signal` and, when it passes, remembers its nonce and burn, keeps it if it is
   * broadcast or addressed to this node (telling subscribers), and returns its API form. Rules, in
   * order: signature; nonce above the sender's last; a payload needs a burn proof; the proof's block
   * is this node's main-chain block at that height and holds the transaction; the burn was paid by
   * the sender and equals the proof's amount; the burn has not backed another signal here.
   */
  async accept(signal: SignedSignal): Promise<SignalObject> {
    await verifySignalSignature(signal, this.#network);
    const sender = toHex(signal.from);
    this.#checkNonce(sender, signal.nonce);
    const proof = signal.burn_proof;
    if (proof === null && signal.payload.length > 0) {
      throw new SignalError('burn-proof-required', `signal ${toHex(signal.id)} carries a payload without a burn proof`);
    }
    let burnId: string | null = null;
    if (proof !== null) {
      await this.#checkBurn(signal.from, proof);
      burnId = toHex(proof.tx_id);
      this.#checkUnused(burnId);
      // Another accept may have run while the burn was looked up: check again before writing.
      this.#checkNonce(sender, signal.nonce);
    }

    this.#nonces.delete(sender);
    this.#nonces.set(sender, signal.nonce);
    evictOldest(this.#nonces, this.#maxSenders);
    if (burnId !== null) {
      this.#usedBurns.add(burnId);
      evictOldest(this.#usedBurns, this.#maxUsedBurns);
    }
    const object = signalObject(signal);
    if (signal.to === 'broadcast' || bytesEqual(signal.to, this.#self)) {
      this.#lastSeq = Math.max(this.#lastSeq + 1, this.#clock.now());
      const kept = { seq: this.#lastSeq, signal: object };
      this.#kept.push(kept);
      if (this.#kept.length > this.#keep) this.#kept.shift();
      for (const listener of this.#listeners) listener(kept);
    }
    return object;
  }

  /** The kept signals (broadcast or to this node) that pass `filter`, oldest first, newest last. */
  list(filter: SignalFilter = ANY_SIGNAL): SignalObject[] {
    return this.#kept.filter((k) => matches(k.signal, filter)).map((k) => k.signal);
  }

  /** Calls `listener` with each signal kept from now on; returns an unsubscribe. */
  subscribe(listener: (signal: SignalObject) => void): () => void {
    return this.follow(null, ANY_SIGNAL, (kept) => listener(kept.signal));
  }

  /**
   * Calls `listener` with each signal kept from now on that passes `filter` (for /signals/stream);
   * with `after`, first with those still kept whose position is above it. Returns an unsubscribe.
   */
  follow(after: number | null, filter: SignalFilter, listener: (kept: KeptSignal) => void): () => void {
    if (after !== null) for (const kept of this.#kept) if (kept.seq > after && matches(kept.signal, filter)) listener(kept);
    const filtered = (kept: KeptSignal): void => void (matches(kept.signal, filter) && listener(kept));
    this.#listeners.add(filtered);
    return () => this.#listeners.delete(filtered);
  }

  /** The last nonce accepted from `sender`, if it is remembered. */
  lastNonce(sender: Uint8Array): number | undefined {
    return this.#nonces.get(toHex(sender));
  }

  /**
   * The nonce for this node's next signal: max(last own nonce + 1, nowMs). Wall-clock milliseconds
   * keep nonces rising across restarts without storing them; each call reserves its nonce.
   */
  nextNonce(nowMs: number): number {
    const accepted = this.#nonces.get(toHex(this.#self)) ?? -1;
    const next = Math.max(this.#lastIssued + 1, accepted + 1, Math.floor(nowMs));
    this.#lastIssued = next;
    return next;
  }

  /**
   * The burn proof for a signal of this node backed by `txId` (see burnProofFor); also throws
   * 'burn-used' when that burn already backed a signal here.
   */
  async burnProof(txId: Uint8Array): Promise<BurnProof> {
    if (this.#locateTx === undefined) {
      throw new SignalError('burn-not-found', 'this node keeps no transaction index to locate burns in');
    }
    const proof = await burnProofFor(txId, this.#self, this.#locateTx, this.#lookupBurn);
    this.#checkUnused(toHex(txId));
    return proof;
  }

  #checkNonce(sender: string, nonce: number): void {
    const last = this.#nonces.get(sender);
    if (last !== undefined && nonce <= last) {
      throw new SignalError('stale-nonce', `nonce ${nonce} of ${sender.slice(0, 16)}… is not above its last (${last})`);
    }
  }

  #checkUnused(burnId: string): void {
    if (this.#usedBurns.has(burnId)) {
      throw new SignalError('burn-used', `the burn of transaction ${burnId} already backed a signal`);
    }
  }

  async #checkBurn(from: Uint8Array, proof: BurnProof): Promise<void> {
    const id = toHex(proof.tx_id);
    const found = await this.#lookupBurn(proof.tx_id, proof.block_height);
    if (found === undefined) {
      throw new SignalError('burn-not-found', `no main-chain block at height ${proof.block_height} holds transaction ${id} here`);
    }
    if (!bytesEqual(found.blockHash, proof.block_hash)) {
      throw new SignalError('burn-fork', `the main-chain block at height ${proof.block_height} is not ${toHex(proof.block_hash)}`);
    }
    if (found.tx === undefined || !bytesEqual(found.tx.id, proof.tx_id)) {
      throw new SignalError('burn-not-in-block', `block ${toHex(proof.block_hash)} does not hold transaction ${id}`);
    }
    const burn = await resolveBurn(found.tx, this.#locateTx, this.#lookupBurn);
    if (burn === 'unknown') {
      throw new SignalError('burn-not-found', `the bid of heartbeat ${id} is not held here, so its burn is unknown`);
    }
    if (burn === null) throw new SignalError('not-a-burn', `transaction ${id} (${found.tx.body.kind}) burns nothing`);
    if (!bytesEqual(burn.burner, from)) {
      throw new SignalError('burn-not-sender', `the burn of transaction ${id} was paid by ${toHex(burn.burner)}, not the sender`);
    }
    if (burn.burned !== proof.amount) {
      throw new SignalError(
        'burn-mismatch',
        `transaction ${id} burned ${formatCredits(burn.burned)} credits, the proof claims ${formatCredits(proof.amount)} credits`,
      );
    }
  }
}

function positiveInteger(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${what} must be a positive integer, got ${value}`);
  return value;
}

// Drops the first-inserted entries of a Map or Set until it holds at most `max`.
function evictOldest(collection: Map<string, unknown> | Set<string>, max: number): void {
  for (const key of collection.keys()) {
    if (collection.size <= max) return;
    collection.delete(key);
  }
}
