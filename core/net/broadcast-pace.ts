/**
 * The pace of a broadcast every node repeats on a timer: its coordinate, its link samples, its
 * capacity, its profile. Each such message floods to every node, so with N nodes repeating one
 * every period, each node receives N per period, and its bytes grow with the mesh (docs/scale.md).
 * Past PACE_NODES nodes known, the period stretches in proportion to the nodes, so the mesh-wide
 * rate, and what each node receives and relays of it, stays at PACE_NODES messages per base
 * period however large the mesh grows. A mesh of PACE_NODES nodes or fewer keeps the base period.
 *
 * The pace holds once a node knows the mesh. Until then (a mesh starting at once, a node that just
 * joined) it cannot, so what a node passes on of others' broadcasts has a budget of its own
 * (RelayBudget): whatever the others send, what each node relays of one kind stays bounded.
 */
import type { Clock, Timer } from '../time/clock.ts';

/** The mesh size up to which a broadcast keeps its base period. */
export const PACE_NODES = 8;

/** The period of a broadcast of base period `baseMs` in a mesh of `nodes` known nodes (this one among them). */
export function pacedPeriodMs(baseMs: number, nodes: number): number {
  return Math.round(baseMs * Math.max(1, nodes / PACE_NODES));
}

/**
 * Calls `fn` every `pacedPeriodMs(baseMs, nodes())`, at most every `maxMs`, the period worked out
 * again at each call, so it follows the mesh as it grows or shrinks; cancelled as any Timer.
 */
export function everyPaced(clock: Clock, baseMs: number, nodes: () => number, fn: () => void, maxMs = Infinity): Timer {
  let timer: Timer | null = null;
  let cancelled = false;
  const arm = (): void => {
    timer = clock.setTimeout(
      () => {
        if (cancelled) return;
        arm();
        fn();
      },
      Math.min(maxMs, pacedPeriodMs(baseMs, nodes())),
    );
  };
  arm();
  return {
    cancel: () => {
      cancelled = true;
      timer?.cancel();
    },
  };
}

/** The relay budget over what the pace sends: room for its bursts, and a cap on a mesh that does not pace yet. */
export const RELAY_BUDGET_FACTOR = 2;

/**
 * How many broadcasts of one kind a node passes on: RELAY_BUDGET_FACTOR × PACE_NODES per base
 * period, and as many at once, a token bucket. A broadcast past it is kept but not relayed (the
 * handler's verdict is 'ignore'), so what a node sends of the kind is capped even while every node
 * broadcasts at once; at the pace, the budget is twice what arrives, and nothing is held back.
 */
export class RelayBudget {
  readonly #clock: Clock;
  readonly #perMs: number;
  readonly #most: number;
  #tokens: number;
  #at: number;

  constructor(clock: Clock, baseMs: number) {
    this.#clock = clock;
    this.#most = RELAY_BUDGET_FACTOR * PACE_NODES;
    this.#perMs = this.#most / baseMs;
    this.#tokens = this.#most;
    this.#at = clock.now();
  }

  /** Whether one more broadcast may be passed on now; spends one of the budget when it may. */
  take(): boolean {
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#most, this.#tokens + Math.max(0, now - this.#at) * this.#perMs);
    this.#at = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
