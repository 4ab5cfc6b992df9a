/**
 * The pace of a broadcast every node repeats on a timer: its coordinate, its link samples, its
 * capacity, its profile. Each such message floods to every node, so with N nodes repeating one
 * every period, each node receives N per period, and its bytes grow with the mesh (docs/scale.md).
 * Past PACE_NODES nodes known, the period stretches in proportion to the nodes, so the mesh-wide
 * rate, and what each node receives and relays of it, stays at PACE_NODES messages per base
 * period however large the mesh grows. A mesh of PACE_NODES nodes or fewer keeps the base period.
 */
import type { Clock, Timer } from '../time/clock.ts';

/** The mesh size up to which a broadcast keeps its base period. */
export const PACE_NODES = 32;

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
