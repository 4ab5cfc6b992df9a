/**
 * A set that remembers about the last `capacity` keys added: two generations, the older dropped
 * whole when the newer fills. Evicting one oldest key per insertion from a plain Set costs a scan
 * over the holes earlier deletions left at its front (seconds per 200,000 transaction ids); this
 * costs nothing per insertion and holds between capacity/2 and capacity keys.
 */
export class RecentSet<T> {
  readonly #half: number;
  #current = new Set<T>();
  #previous = new Set<T>();

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 2) throw new RangeError(`capacity must be an integer of at least 2, got ${capacity}`);
    this.#half = Math.floor(capacity / 2);
  }

  has(key: T): boolean {
    return this.#current.has(key) || this.#previous.has(key);
  }

  add(key: T): void {
    if (this.has(key)) return;
    if (this.#current.size >= this.#half) {
      this.#previous = this.#current;
      this.#current = new Set();
    }
    this.#current.add(key);
  }

  delete(key: T): void {
    this.#current.delete(key);
    this.#previous.delete(key);
  }
}
