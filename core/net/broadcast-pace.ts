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

/** A peer passes on at most this share of a relay budget: RELAY_BUDGET_FACTOR × PACE_NODES ÷ 4. */
export const PEER_RELAY_SHARE = (RELAY_BUDGET_FACTOR * PACE_NODES) / 4;

/**
 * How many broadcasts of one kind a node passes on: RELAY_BUDGET_FACTOR × PACE_NODES per base
 * period, and as many at once, a token bucket. A broadcast past it is kept but not relayed (the
 * handler's verdict is 'ignore'), so what a node sends of the kind is capped even while every node
 * broadcasts at once; at the pace, the budget is twice what arrives, and nothing is held back.
 */
export class RelayBudget {
  readonly #clock: Clock;
  readonly #all: Bucket;
  // Each peer's share, from what it hands over: a peer minting identities spends its own share,
  // not what the other peers' broadcasts need.
  readonly #peers = new Map<string, Bucket>();
  readonly #most: number;
  readonly #baseMs: number;

  constructor(clock: Clock, baseMs: number) {
    this.#clock = clock;
    this.#most = RELAY_BUDGET_FACTOR * PACE_NODES;
    this.#baseMs = baseMs;
    this.#all = new Bucket(this.#most, baseMs, clock.now());
  }

  /**
   * Whether one more broadcast, handed over by `peer`, may be passed on now; spends one of the
   * budget, and of the peer's share (a quarter of it), when it may.
   */
  take(peer: string): boolean {
    const now = this.#clock.now();
    let share = this.#peers.get(peer);
    if (share === undefined) {
      share = new Bucket(PEER_RELAY_SHARE, this.#baseMs, now);
      this.#peers.set(peer, share);
      if (this.#peers.size > MAX_PEERS_TRACKED) this.#peers.delete(this.#peers.keys().next().value!);
    }
    if (!this.#all.has(now) || !share.has(now)) return false;
    this.#all.spend();
    share.spend();
    return true;
  }
}

// Past MAX_PEERS_TRACKED peers, the oldest shares are forgotten.
const MAX_PEERS_TRACKED = 1_024;

/** A token bucket that refills `most` tokens per `baseMs`. */
class Bucket {
  readonly #most: number;
  readonly #perMs: number;
  #tokens: number;
  #at: number;

  constructor(most: number, baseMs: number, now: number) {
    this.#most = most;
    this.#perMs = most / baseMs;
    this.#tokens = most;
    this.#at = now;
  }

  /** Whether a token is there now (refilled up to now). */
  has(now: number): boolean {
    this.#tokens = Math.min(this.#most, this.#tokens + Math.max(0, now - this.#at) * this.#perMs);
    this.#at = now;
    return this.#tokens >= 1;
  }

  spend(): void {
    this.#tokens -= 1;
  }
}
