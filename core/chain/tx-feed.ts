/**
 * What /transactions/stream told of, kept so a client that reconnects resumes where it stopped:
 * the last `keep` transaction events (TX_EVENTS_KEPT) in a ring, each with a position that becomes
 * its frame's `id:` (node-api.md "Ids and resuming").
 *
 * Positions are `max(previous + 1, now in ms)`, as the signal book's are: they rise for the node's
 * life and across its restarts (as long as its clock does), so an id a client kept from before a
 * restart is below every position of the node's new life, and the feed can tell that client it
 * missed events rather than skip the new ones silently (a count from 1 would start again below it).
 *
 * A follower that gives the position it saw last gets the held events after it, then every new one,
 * from one synchronous call: no event is pushed between the replay and the subscription, so there
 * is no gap and no duplicate at the seam. When events after that position may have been lost (the
 * ring dropped them, or they were streamed before this node started), the follower is told so first.
 */

import { RecentSet } from '../collections/recent-set.ts';
import { formatAmount } from '../encoding/amount.ts';
import { bytesKey } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { STREAM_KINDS, type Tx } from '../ledger/tx.ts';
import type { Unsubscribe } from '../web/sse.ts';

/** An event of /transactions/stream (node-api.md §6); amount is a decimal string of base units. */
export interface TxStreamEvent {
  id: string;
  origin: string;
  kind: string;
  amount: string;
}

/**
 * What /transactions/stream carries: a transaction event at its position in the node's feed (the
 * frame's `id:`), or, first on a resumed stream that may have lost some, `missed`: the
 * `Last-Event-ID` it resumed after and the position of the oldest event still held (null: none).
 */
export type TxFeedItem =
  | { readonly kind: 'tx'; readonly seq: number; readonly event: TxStreamEvent }
  | { readonly kind: 'missed'; readonly after: number; readonly first_held: number | null };

// Transaction ids already put on the feed by `offer` (so each appears once).
const OFFERED_MEMORY = 50_000;

/** Transaction events the feed keeps for resuming (about 200 bytes each as JSON, so about 200 KiB). */
export const TX_EVENTS_KEPT = 1_024;

/**
 * One streamed transaction, as its event only: the decoded transaction (a dozen byte arrays, often
 * views that hold a whole block) would cost several times the event's strings, on every node and
 * a thousand times over in a simulated mesh.
 */
class StreamedTx {
  readonly kind = 'tx';
  readonly seq: number;
  readonly event: TxStreamEvent;

  constructor(seq: number, tx: Tx, amount: bigint) {
    this.seq = seq;
    this.event = { id: toHex(tx.id), origin: toHex(tx.body.sender), kind: tx.body.kind, amount: formatAmount(amount) };
  }
}

export class TxFeed {
  readonly #keep: number;
  readonly #now: () => number;
  readonly #ring: StreamedTx[] = [];
  readonly #listeners = new Set<(item: TxFeedItem) => void>();
  readonly #offered = new RecentSet<string>(OFFERED_MEMORY);
  // Every event after this position is held (or was never streamed): at first the node's start,
  // since what a former life streamed is gone; then the position of the last event dropped.
  #horizon: number;
  #last = 0;

  constructor(now: () => number, keep = TX_EVENTS_KEPT) {
    if (!Number.isSafeInteger(keep) || keep < 1) throw new RangeError(`keep must be a positive integer, got ${keep}`);
    this.#keep = keep;
    this.#now = now;
    this.#horizon = Math.floor(now());
  }

  /** Events held now. */
  get size(): number {
    return this.#ring.length;
  }

  /**
   * Streams `tx` unless its kind is not one the stream carries or it was offered already: a
   * transaction reaches the node from its own API, from gossip and in blocks, and appears once.
   */
  offer(tx: Tx, amount: bigint): void {
    if (!STREAM_KINDS.includes(tx.body.kind)) return;
    const id = bytesKey(tx.id);
    if (this.#offered.has(id)) return;
    this.#offered.add(id);
    this.push(tx, amount);
  }

  /** Gives `tx` the next position, keeps it (dropping the oldest past `keep`), and tells every follower. */
  push(tx: Tx, amount: bigint): void {
    this.#last = Math.max(this.#last + 1, Math.floor(this.#now()));
    const item = new StreamedTx(this.#last, tx, amount);
    this.#ring.push(item);
    if (this.#ring.length > this.#keep) this.#horizon = this.#ring.shift()!.seq;
    // A follower's failure is its own (the node logs it): the others hear of the event.
    for (const listener of this.#listeners) listener(item);
  }

  /**
   * Calls `listener` with every event pushed from now on; with `after` (the position a client saw
   * last), first with the held events after it. When the feed cannot vouch that nothing after
   * `after` was lost (it is below the horizon, or above the last position this node issued, so from
   * another life of it), the first item says so and every held event follows.
   */
  follow(after: number | null, listener: (item: TxFeedItem) => void): Unsubscribe {
    if (after !== null) {
      const lost = after < this.#horizon || after > this.#last;
      if (lost) listener({ kind: 'missed', after, first_held: this.#ring[0]?.seq ?? null });
      for (const item of this.#ring) if (lost || item.seq > after) listener(item);
    }
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }
}
