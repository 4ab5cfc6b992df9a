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

class Scheduled implements Timer {
  at: number;
  readonly seq: number;
  readonly fn: () => void;
  readonly every: number | null;
  cancelled = false;

  constructor(at: number, seq: number, fn: () => void, every: number | null) {
    this.at = at;
    this.seq = seq;
    this.fn = fn;
    this.every = every;
  }

  cancel(): void {
    this.cancelled = true;
  }
}

/** Resolves in a later real macrotask: every microtask queued before it has run by then. */
export type Turn = () => Promise<void>;

// Taken at load, before a test could replace the global. A timer task is a task on every runtime;
// where a cheaper one is (MessagePort messages on Node and in browsers, not on Deno, which hands
// them over among the microtasks), the host may pass it.
const realSetTimeout = globalThis.setTimeout;
const timerTurn: Turn = () => new Promise((resolve) => realSetTimeout(resolve, 0));

export class Scheduler implements Clock {
  #now: number;
  #seq = 0;
  // The timers by instant, each instant's in the order set; the instants in a heap of their own.
  // A message is a timer, so a large simulation holds a hundred thousand of them: a heap of
  // instants (fewer, compared as plain numbers) costs far less than one of timers. Cancelled
  // timers leave with their instant.
  readonly #due = new Map<number, Scheduled[]>();
  // A binary heap of plain numbers (core/collections is on this layer, so not its MinHeap).
  readonly #instants: number[] = [];
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
    let count = 0;
    for (const timers of this.#due.values()) for (const t of timers) if (!t.cancelled) count++;
    return count;
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
    for (let next = this.#next(); next !== undefined && next <= end; next = this.#next()) await this.#runAt(next);
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
      if (withinMs <= 0 || next === undefined || next > deadline) break;
      await this.#runAt(next);
    }
    throw new Error(`timed out: ${what} (${this.#now - started} ms on the clock)`);
  }

  #schedule(fn: () => void, delay: number, every: number | null): Timer {
    const scheduled = new Scheduled(this.#now + delay, this.#seq++, fn, every);
    this.#push(scheduled);
    return scheduled;
  }

  // Moves time to `at` and runs every timer due then, in order, then settles. Timers they set for
  // `at` run in the next pass, after that settle.
  async #runAt(at: number): Promise<void> {
    this.#now = at;
    const due = this.#due.get(at) ?? [];
    this.#due.delete(at);
    if (this.#instants[0] === at) this.#popInstant();
    for (const t of due) {
      // A timer may have cancelled another due at the same instant.
      if (t.cancelled) continue;
      if (t.every !== null) {
        t.at += t.every;
        this.#push(t);
      } else t.cancelled = true;
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

  // The first instant at which a live timer is due, dropping instants whose timers were all cancelled.
  #next(): number | undefined {
    for (let at = this.#instants[0]; at !== undefined; at = this.#instants[0]) {
      if (this.#due.get(at)!.some((t) => !t.cancelled)) return at;
      this.#due.delete(at);
      this.#popInstant();
    }
    return undefined;
  }

  // Files `t` under its instant, after the timers there that were set before it (an interval's
  // next firing keeps the place its first had).
  #push(t: Scheduled): void {
    const timers = this.#due.get(t.at);
    if (timers === undefined) {
      this.#due.set(t.at, [t]);
      this.#pushInstant(t.at);
      return;
    }
    let i = timers.length;
    while (i > 0 && timers[i - 1]!.seq > t.seq) i--;
    timers.splice(i, 0, t);
  }

  #pushInstant(at: number): void {
    const heap = this.#instants;
    let i = heap.push(at) - 1;
    while (i > 0 && heap[(i - 1) >> 1]! > at) {
      heap[i] = heap[(i - 1) >> 1]!;
      i = (i - 1) >> 1;
    }
    heap[i] = at;
  }

  #popInstant(): void {
    const heap = this.#instants;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    let i = 0;
    for (let child = 1; child < heap.length; child = 2 * i + 1) {
      if (child + 1 < heap.length && heap[child + 1]! < heap[child]!) child++;
      if (heap[child]! >= last) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
}
