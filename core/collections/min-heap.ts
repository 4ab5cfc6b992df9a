/**
 * A binary min-heap under a strict order `before(a, b)`: push and pop in O(log n), the least item
 * at `peek()`. Ties are the caller's to break (a sequence number), so the order out is total.
 *
 * ```ts
 * const heap = new MinHeap<{ at: number; seq: number }>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
 * heap.push({ at: 5, seq: 0 });
 * heap.pop(); // { at: 5, seq: 0 }
 * ```
 */
export class MinHeap<T> {
  readonly #before: (a: T, b: T) => boolean;
  #items: T[] = [];

  constructor(before: (a: T, b: T) => boolean) {
    this.#before = before;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    const items = this.#items;
    let i = items.push(item) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#before(item, items[parent]!)) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = item;
  }

  pop(): T | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    this.#sink(last, 0);
    return top;
  }

  /** Keeps only the items `keep` holds for, in O(n). */
  retain(keep: (item: T) => boolean): void {
    this.#items = this.#items.filter(keep);
    for (let i = (this.#items.length >> 1) - 1; i >= 0; i--) this.#sink(this.#items[i]!, i);
  }

  // Puts `item` at `i` and moves it down until both children come after it.
  #sink(item: T, i: number): void {
    const items = this.#items;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && this.#before(items[right]!, items[left]!) ? right : left;
      if (!this.#before(items[child]!, item)) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = item;
  }
}
