/**
 * A bounded book of the newest record per key, each with the time it counts from: a record older
 * than `maxAgeMs` is dropped when the book is read or written, and past `capacity` keys the one with
 * the oldest time goes. The link book and the coordinate book of the network graph are two of them.
 */
export interface Dated<T> {
  readonly value: T;
  /** ms since the epoch: what "newest" and the expiry are measured on. */
  readonly at: number;
}

export class NewestBook<T> {
  readonly capacity: number;
  /** Changed as the pace of what the book holds changes (broadcast-pace.ts). */
  maxAgeMs: number;
  readonly #entries = new Map<string, Dated<T>>();

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
    this.#entries.delete(key);
    this.#entries.set(key, { value, at });
    if (this.#entries.size > this.capacity) this.#evictOldest();
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
    for (const [key, entry] of this.#entries) if (entry.at < now - this.maxAgeMs) this.#entries.delete(key);
  }

  #evictOldest(): void {
    let oldest: string | null = null;
    let at = Infinity;
    for (const [key, entry] of this.#entries) if (entry.at < at) [oldest, at] = [key, entry.at];
    if (oldest !== null) this.#entries.delete(oldest);
  }
}
