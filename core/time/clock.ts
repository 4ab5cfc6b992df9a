/**
 * The clock port: the current time and timers that can be cancelled. The core reads time only
 * through a Clock it is given, so tests drive time themselves (Scheduler in scheduler.ts)
 * and hosts pass `systemClock`.
 */

/** A scheduled callback; `cancel` is a no-op once it has fired or been cancelled. */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once, `ms` from now. */
  setTimeout(fn: () => void, ms: number): Timer;
  /** Calls `fn` every `ms` until cancelled. */
  setInterval(fn: () => void, ms: number): Timer;
}

/** The platform's clock: `Date.now` and the global timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const id = globalThis.setTimeout(fn, ms);
    return { cancel: () => globalThis.clearTimeout(id) };
  },
  setInterval(fn, ms) {
    const id = globalThis.setInterval(fn, ms);
    return { cancel: () => globalThis.clearInterval(id) };
  },
};

/** Resolves `ms` from now on `clock`. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}
