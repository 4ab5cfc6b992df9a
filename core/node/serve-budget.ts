/**
 * How many bytes a node answers with per second, per requester and in all (sync ranges, state
 * segments). A request costs its sender a few bytes and the answering node up to megabytes read
 * and published to every peer, so answers are held to a budget that refills steadily, up to one
 * second's worth.
 */
import type { Clock } from '../time/clock.ts';

interface Bucket {
  level: number;
  at: number;
}

// Requesters whose budget is remembered (the least recently seen is forgotten first).
const MAX_REQUESTERS = 4_096;

export class ServeBudget {
  readonly #perRequester: number;
  readonly #total: number;
  readonly #clock: Clock;
  readonly #requesters = new Map<string, Bucket>();
  readonly #all: Bucket;

  /** `perRequester` and `total` are bytes per second; `clock` tells how much time passed. */
  constructor(perRequester: number, total: number, clock: Clock) {
    this.#perRequester = perRequester;
    this.#total = total;
    this.#clock = clock;
    this.#all = { level: total, at: clock.now() };
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
    return true;
  }

  /** Gives back `bytes` of a reservation that the answer did not use. */
  refund(requester: string, bytes: number): void {
    const bucket = this.#requesters.get(requester);
    if (bucket !== undefined) bucket.level += bytes;
    this.#all.level += bytes;
  }

  // Tops `bucket` up for the time since it was last used; its level.
  #refill(bucket: Bucket, perSecond: number): number {
    const now = this.#clock.now();
    bucket.level = Math.min(perSecond, bucket.level + ((now - bucket.at) / 1000) * perSecond);
    bucket.at = now;
    return bucket.level;
  }
}
