/**
 * How many bytes a node answers with per second, per requester and in all: the sync ranges and the
 * light-node segments it serves share one budget. A request costs its sender a few bytes and the
 * answering node up to megabytes read and sent, so answers are held to a budget that refills
 * steadily, up to one second's worth. A request over budget is refused as busy (the RPC's status 4),
 * never left unanswered: the requester asks another peer, or this one again a second later.
 */
import type { Clock } from '../time/clock.ts';

interface Bucket {
  level: number;
  at: number;
}

// Requesters whose budget is remembered (the least recently seen is forgotten first).
const MAX_REQUESTERS = 4_096;

/** The default: 4 MiB a second per requester, 16 MiB a second in all. */
export const SERVE_BYTES_PER_SECOND = 4 * 1024 * 1024;

export class ServeBudget {
  readonly #perRequester: number;
  readonly #total: number;
  readonly #clock: Clock;
  readonly #requesters = new Map<string, Bucket>();
  readonly #all: Bucket;
  // Bytes answered to each requester and in all, since the start (what the budget let through).
  readonly #sent = new Map<string, number>();
  #sentInAll = 0;

  /** `perRequester` and `total` are bytes per second; `clock` tells how much time passed. */
  constructor(perRequester: number, total: number, clock: Clock) {
    this.#perRequester = perRequester;
    this.#total = total;
    this.#clock = clock;
    this.#all = { level: total, at: clock.now() };
  }

  /** A budget of `perRequester` bytes a second for each requester and four times that in all. */
  static perRequester(perRequester: number, clock: Clock): ServeBudget {
    return new ServeBudget(perRequester, 4 * perRequester, clock);
  }

  /**
   * Reserves `bytes` (the largest answer) for `requester`: false, reserving nothing, while its
   * budget or the total is spent. Reserve before reading, since requests are judged concurrently,
   * and give back what the answer did not use with `refund`.
   */
  reserve(requester: string, bytes: number): boolean {
    let bucket = this.#requesters.get(requester);
    if (bucket === undefined) {
      bucket = { level: this.#perRequester, at: this.#clock.now() };
      this.#requesters.set(requester, bucket);
      if (this.#requesters.size > MAX_REQUESTERS) this.#requesters.delete(this.#requesters.keys().next().value!);
    }
    if (this.#refill(bucket, this.#perRequester) <= 0 || this.#refill(this.#all, this.#total) <= 0) return false;
    bucket.level -= bytes;
    this.#all.level -= bytes;
    this.#count(requester, bytes);
    return true;
  }

  /** Gives back `bytes` of a reservation that the answer did not use. */
  refund(requester: string, bytes: number): void {
    const bucket = this.#requesters.get(requester);
    if (bucket !== undefined) bucket.level += bytes;
    this.#all.level += bytes;
    this.#count(requester, -bytes);
  }

  /** Why a request of `requester` is refused: the budget it is over. */
  refusal(requester: string): string {
    const bucket = this.#requesters.get(requester);
    const own = bucket !== undefined && bucket.level <= 0;
    return own
      ? `this node answers each peer with at most ${this.#perRequester} bytes a second, and this peer's are spent`
      : `this node answers all peers together with at most ${this.#total} bytes a second, and they are spent`;
  }

  /** The bytes answered to `requester` (or to everyone) so far: what the budget let through. */
  sent(requester?: string): number {
    return requester === undefined ? this.#sentInAll : (this.#sent.get(requester) ?? 0);
  }

  #count(requester: string, bytes: number): void {
    this.#sentInAll += bytes;
    this.#sent.set(requester, (this.#sent.get(requester) ?? 0) + bytes);
    if (this.#sent.size > MAX_REQUESTERS) this.#sent.delete(this.#sent.keys().next().value!);
  }

  // Tops `bucket` up for the time since it was last used; its level.
  #refill(bucket: Bucket, perSecond: number): number {
    const now = this.#clock.now();
    bucket.level = Math.min(perSecond, bucket.level + ((now - bucket.at) / 1000) * perSecond);
    bucket.at = now;
    return bucket.level;
  }
}
