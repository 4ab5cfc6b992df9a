/**
 * A bounded book of the newest record per key, each with the time it counts from: a record older
 * than `maxAgeMs` is dropped when the book is read or written, and past `capacity` keys the one with
 * the oldest time goes. The link book and the coordinate book of the network graph are two of them.
 */
import { MinHeap } from '../collections/min-heap.ts';

export interface Dated<T> {
  readonly value: T;
  /** ms since the epoch: what "newest" and the expiry are measured on. */
  readonly at: number;
}

interface Held<T> extends Dated<T> {
  readonly key: string;
  /** Order of insertion: of two records of one time, the one put first goes first. */
  readonly seq: number;
}

const before = <T>(a: Held<T>, b: Held<T>): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

export class NewestBook<T> {
  readonly capacity: number;
  /** Changed as the pace of what the book holds changes (broadcast-pace.ts). */
  maxAgeMs: number;
  readonly #entries = new Map<string, Held<T>>();
  // The records by age, oldest on top, so that expiry and eviction need not scan the book (they
  // ran on every read and write). A replaced record stays in it until it comes to the top.
  readonly #byAge = new MinHeap<Held<T>>(before);
  #seq = 0;

  constructor(capacity: number, maxAgeMs: number) {
    this.capacity = capacity;
    this.maxAgeMs = maxAgeMs;
  }

  /** Keeps `value` if it is newer than what `key` holds; says whether it did. */
  put(key: string, value: T, at: number, now: number): boolean {
    this.#expire(now);
    if (at < now - this.maxAgeMs) return false;
    const held = this.#entries.get(key);
    if (held !== undefined && held.at >= at) return false;
    const record: Held<T> = { value, at, key, seq: this.#seq++ };
    this.#entries.delete(key);
    this.#entries.set(key, record);
    this.#byAge.push(record);
    if (this.#entries.size > this.capacity) this.#dropOldest();
    // Replaced records are dropped in one pass once they outnumber the held ones.
    if (this.#byAge.size > 2 * this.#entries.size + 64) this.#byAge.retain((r) => this.#entries.get(r.key) === r);
    return true;
  }

  get(key: string, now: number): Dated<T> | undefined {
    this.#expire(now);
    return this.#entries.get(key);
  }

  /** The records held, newest first. */
  list(now: number): [string, Dated<T>][] {
    this.#expire(now);
    return [...this.#entries].sort((x, y) => y[1].at - x[1].at);
  }

  get size(): number {
    return this.#entries.size;
  }

  #expire(now: number): void {
    const oldest = now - this.maxAgeMs;
    for (let top = this.#byAge.peek(); top !== undefined && top.at < oldest; top = this.#byAge.peek()) this.#drop(this.#byAge.pop()!);
  }

  #dropOldest(): void {
    for (let top = this.#byAge.pop(); top !== undefined; top = this.#byAge.pop()) if (this.#drop(top)) return;
  }

  // Drops `record` if it is still the one its key holds.
  #drop(record: Held<T>): boolean {
    if (this.#entries.get(record.key) !== record) return false;
    this.#entries.delete(record.key);
    return true;
  }
}
