/**
 * The newest entry per node id, at most `maxNodes` of them (the least recently updated dropped
 * first), each held while `isLive` says so: what the capacity atlas and the profile book keep.
 * Time is passed in, so tests control it; an entry found dead is dropped for good.
 */
export class NodeTable<T> {
  readonly #maxNodes: number;
  readonly #isLive: (entry: T, now: number) => boolean;
  // By node id, least recently updated first (a Map iterates in insertion order).
  readonly #entries = new Map<string, T>();

  constructor(maxNodes: number, isLive: (entry: T, now: number) => boolean) {
    if (!Number.isSafeInteger(maxNodes) || maxNodes < 1) throw new RangeError(`maxNodes must be a positive integer, got ${maxNodes}`);
    this.#maxNodes = maxNodes;
    this.#isLive = isLive;
  }

  /** Makes `entry` the one held for `id`, the most recently updated. */
  set(id: string, entry: T): void {
    this.#entries.delete(id);
    this.#entries.set(id, entry);
    for (const old of this.#entries.keys()) {
      if (this.#entries.size <= this.#maxNodes) break;
      this.#entries.delete(old);
    }
  }

  /** The live entry of `id`, or undefined. */
  get(id: string, now: number): T | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    if (this.#isLive(entry, now)) return entry;
    this.#entries.delete(id);
    return undefined;
  }

  /** The live entries, sorted by node id. */
  live(now: number): T[] {
    const out: [string, T][] = [];
    for (const [id, entry] of this.#entries) {
      if (this.#isLive(entry, now)) out.push([id, entry]);
      else this.#entries.delete(id);
    }
    return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, entry]) => entry);
  }

  /** Entries held, dead ones included until the next `live`. */
  get size(): number {
    return this.#entries.size;
  }
}
