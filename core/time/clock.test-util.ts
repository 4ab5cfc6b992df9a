/**
 * A clock for tests: time moves only when the test moves it. Advancing runs the timers that fall
 * due in time order, and after each instant lets the async work they started settle: real
 * macrotask turns (WebCrypto finishes on other threads) until the clock has gone unused for
 * several in a row. Tests of sync and block production so never sleep, and a timeout fires only
 * when the test lets clock time pass, not because the machine is busy.
 */
import type { Clock, Timer } from './clock.ts';

// A day after the devnet genesis (2026-01-01), so blocks mined in a test are not from the future.
const START_MS = Date.UTC(2026, 0, 2);
// A settle ends after this many real macrotask turns in a row in which nobody used the clock
// (enough for a few rounds of WebCrypto and gossip hand-overs), or after SETTLE_TURNS in all.
const QUIET_TURNS = 5;
const SETTLE_TURNS = 1_000;
// Bounds a wait with time standing still: far more turns than any test's work needs.
const MAX_TURNS = 30_000;

interface Scheduled {
  at: number;
  readonly seq: number;
  readonly fn: () => void;
  readonly every: number | null;
}

// One real macrotask turn, through the platform's timer taken before any test could replace it.
// Set from a message task, the timer is not nested in another timer, so browsers do not clamp it
// to 4 ms.
const realTimeout = globalThis.setTimeout;
const turn = (): Promise<void> =>
  new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = (): void => {
      channel.port1.close();
      realTimeout(resolve, 0);
    };
    channel.port2.postMessage(null);
  });

export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  // Counts uses of the clock: work that still reads the time or sets timers is not settled yet.
  #used = 0;
  readonly #timers = new Set<Scheduled>();

  constructor(startMs = START_MS) {
    this.#now = startMs;
  }

  now(): number {
    this.#used++;
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
    return this.#timers.size;
  }

  /** Lets work already started settle, without moving time; the number of turns it took. */
  async settle(): Promise<number> {
    let turns = 0;
    for (let quiet = 0; quiet < QUIET_TURNS && turns < SETTLE_TURNS; turns++) {
      const used = this.#used;
      await turn();
      quiet = this.#used === used ? quiet + 1 : 0;
    }
    return turns;
  }

  /**
   * Moves time forward by `ms`: each instant at which timers fall due is reached in order, its
   * timers run in the order they were set, then the work they started settles. Timers set by
   * timers run too when they fall due within the span.
   */
  async advance(ms: number): Promise<void> {
    const end = this.#now + Math.max(0, ms);
    for (let next = this.#next(); next !== undefined && next.at <= end; next = this.#next()) {
      await this.#runAt(next.at);
    }
    // Timers due at the end have settled already.
    if (this.#now === end && ms > 0) return;
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
    for (let turns = 0; turns < MAX_TURNS; ) {
      turns += await this.settle();
      if (check()) return;
      const next = this.#next();
      if (withinMs > 0 && next !== undefined && next.at <= deadline) await this.#runAt(next.at);
      else if (withinMs > 0) break;
    }
    throw new Error(`timed out: ${what} (${this.#now - started} ms on the clock)`);
  }

  #schedule(fn: () => void, delay: number, every: number | null): Timer {
    this.#used++;
    const scheduled: Scheduled = { at: this.#now + delay, seq: this.#seq++, fn, every };
    this.#timers.add(scheduled);
    return {
      cancel: () => {
        this.#used++;
        this.#timers.delete(scheduled);
      },
    };
  }

  // The timer that falls due first (the earliest set among those due at the same time).
  #next(): Scheduled | undefined {
    let first: Scheduled | undefined;
    for (const t of this.#timers) if (first === undefined || t.at < first.at || (t.at === first.at && t.seq < first.seq)) first = t;
    return first;
  }

  // Moves time to `at` and runs every timer due then, in order, then settles.
  async #runAt(at: number): Promise<void> {
    this.#now = at;
    const due = [...this.#timers].filter((t) => t.at === at).sort((a, b) => a.seq - b.seq);
    for (const t of due) {
      // A timer may have cancelled another due at the same instant.
      if (!this.#timers.has(t)) continue;
      if (t.every === null) this.#timers.delete(t);
      else t.at += t.every;
      t.fn();
    }
    await this.settle();
  }
}
