/**
 * Simulated time: a Clock whose time moves only when it is told to, and which knows when the work
 * running at the current instant is done. Several nodes can share one scheduler; the same inputs
 * then give the same order of events.
 *
 * - Timers fall due in the order (time, order set). Advancing runs each instant's timers, then
 *   settles before moving on.
 * - Hand-overs (`nextTask`) are tasks at the current instant, released after a real macrotask in
 *   the order asked for: what a message between two nodes in memory takes instead of a timer.
 * - Work that finishes outside the JavaScript thread (WebCrypto, a hand-over's turn) is `track`ed;
 *   components with work queues are `watch`ed through their `idle()`.
 *
 * Settled means: every tracked piece of work has finished, every watched component is idle, and
 * the microtasks that followed have run (one real macrotask, a `Turn`, drains them) without starting
 * any new tracked work. Tracked work and `idle()` must finish without the clock moving, or a settle
 * waits for ever: track a leaf (a WebCrypto call, a hand-over), not a request that may wait for its
 * deadline.
 */
import type { Clock, Timer } from './clock.ts';

/** Something with work in progress: `idle()` resolves once it has none (without the clock moving). */
export interface Idle {
  idle(): Promise<void>;
}

interface Scheduled {
  at: number;
  readonly seq: number;
  readonly fn: () => void;
  readonly every: number | null;
}

/** Resolves in a later real macrotask: every microtask queued before it has run by then. */
export type Turn = () => Promise<void>;

// Taken at load, before a test could replace the global. A timer task is a task on every runtime;
// where a cheaper one is (MessagePort messages on Node and in browsers, not on Deno, which hands
// them over among the microtasks), the host may pass it.
const realSetTimeout = globalThis.setTimeout;
const timerTurn: Turn = () => new Promise((resolve) => realSetTimeout(resolve, 0));

const before = (a: Scheduled, b: Scheduled): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

export class Scheduler implements Clock {
  #now: number;
  #seq = 0;
  // A binary heap ordered by (at, seq); cancelled timers leave it lazily.
  readonly #heap: Scheduled[] = [];
  readonly #live = new Set<Scheduled>();
  readonly #tracked = new Set<Promise<unknown>>();
  // Counts track() calls: a settle is over only when a pass started none.
  #started = 0;
  readonly #watched = new Set<Idle>();
  readonly #tasks: (() => void)[] = [];
  #draining = false;
  readonly #turn: Turn;

  constructor(startMs: number, options: { turn?: Turn } = {}) {
    this.#now = startMs;
    this.#turn = options.turn ?? timerTurn;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    return this.#schedule(fn, Math.max(0, ms), null);
  }

  setInterval(fn: () => void, ms: number): Timer {
    const every = Math.max(1, ms);
    return this.#schedule(fn, every, every);
  }

  /** Timers waiting to fire. */
  get pending(): number {
    return this.#live.size;
  }

  /**
   * Registers work that finishes outside the JavaScript thread; settles wait for it. The work must
   * not wait for the clock. Returns `work`, whose rejection stays the caller's to handle.
   */
  track<T>(work: Promise<T>): Promise<T> {
    this.#started++;
    this.#tracked.add(work);
    const done = (): void => {
      this.#tracked.delete(work);
    };
    work.then(done, done);
    return work;
  }

  /** Makes settles wait until `component` is idle as well; the returned function stops that. */
  watch(component: Idle): () => void {
    this.#watched.add(component);
    return () => this.#watched.delete(component);
  }

  /**
   * Resolves in a later task at the current instant, in the order asked for (those asked for
   * before a turn all resolve after it): a hand-over, as a message takes between processes.
   * Settles wait for it.
   */
  nextTask(): Promise<void> {
    return new Promise((resolve) => {
      this.#tasks.push(resolve);
      if (!this.#draining) void this.track(this.#drain());
    });
  }

  /** Lets the work running at this instant finish, without moving time. */
  async settle(): Promise<void> {
    for (;;) {
      const started = this.#started;
      await Promise.all([...this.#tracked, ...[...this.#watched].map((c) => c.idle())].map((p) => p.then(undefined, () => {})));
      await this.#turn();
      if (this.#tracked.size === 0 && this.#started === started) return;
    }
  }

  /**
   * Moves time forward by `ms`: the work running now settles first, then each instant at which
   * timers fall due is reached in order, its timers run in the order they were set, and the work
   * they started settles. Timers set by timers run too when they fall due within the span.
   */
  async advance(ms: number): Promise<void> {
    await this.settle();
    const end = this.#now + Math.max(0, ms);
    for (let next = this.#next(); next !== undefined && next.at <= end; next = this.#next()) await this.#runAt(next.at);
    this.#now = end;
    await this.settle();
  }

  /**
   * Settles and moves time from one timer to the next until `check` holds; rejects once it would
   * take more than `withinMs` of clock time. With `withinMs` 0 time stands still, for work that
   * needs no timer (a sync that messages alone drive).
   */
  async until(what: string, check: () => boolean, withinMs: number): Promise<void> {
    const started = this.#now;
    const deadline = started + withinMs;
    for (;;) {
      await this.settle();
      if (check()) return;
      const next = this.#next();
      if (withinMs <= 0 || next === undefined || next.at > deadline) break;
      await this.#runAt(next.at);
    }
    throw new Error(`timed out: ${what} (${this.#now - started} ms on the clock)`);
  }

  #schedule(fn: () => void, delay: number, every: number | null): Timer {
    const scheduled: Scheduled = { at: this.#now + delay, seq: this.#seq++, fn, every };
    this.#live.add(scheduled);
    this.#push(scheduled);
    return { cancel: () => void this.#live.delete(scheduled) };
  }

  // Moves time to `at` and runs every timer due then, in order, then settles. Timers they set for
  // `at` run in the next pass, after that settle.
  async #runAt(at: number): Promise<void> {
    this.#now = at;
    const due: Scheduled[] = [];
    for (let t = this.#next(); t !== undefined && t.at === at; t = this.#next()) due.push(this.#pop());
    for (const t of due) {
      // A timer may have cancelled another due at the same instant.
      if (!this.#live.has(t)) continue;
      if (t.every === null) this.#live.delete(t);
      else {
        t.at += t.every;
        this.#push(t);
      }
      t.fn();
    }
    await this.settle();
  }

  async #drain(): Promise<void> {
    this.#draining = true;
    while (this.#tasks.length > 0) {
      await this.#turn();
      for (const go of this.#tasks.splice(0)) go();
    }
    this.#draining = false;
  }

  // The live timer due first, dropping cancelled ones from the top of the heap.
  #next(): Scheduled | undefined {
    while (this.#heap.length > 0 && !this.#live.has(this.#heap[0]!)) this.#pop();
    return this.#heap[0];
  }

  #push(t: Scheduled): void {
    const heap = this.#heap;
    let i = heap.push(t) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(t, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = t;
  }

  #pop(): Scheduled {
    const heap = this.#heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && before(heap[right]!, heap[left]!) ? right : left;
      if (!before(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
    return top;
  }
}
