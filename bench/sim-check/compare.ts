/**
 * The arithmetic of `mesh bench sim-check`: block propagation from when each real node first had
 * each block, bytes per node per second from two readings of every node's counts, the simulator's
 * rates over the same window from two runs of one seed, and the two side by side.
 */
import { type Quantiles, quantiles } from '../../core/sim/run.ts';

/** The shares of the honest nodes a block's reach is taken at, as the simulator's report gives them. */
export const SHARES = { to50: 0.5, to90: 0.9, to99: 0.99 } as const;

export interface Propagation {
  readonly to50: Quantiles;
  readonly to90: Quantiles;
  readonly to99: Quantiles;
  /** Blocks counted. */
  readonly blocks: number;
  /** Of them, those that never reached 99 % of the nodes. */
  readonly blocksShort: number;
}

/**
 * Block propagation as the simulator measures it, from `arrivals` (per block, when each node first
 * had it, ms on one clock): for each block born (first had anywhere) within [from, to), the time
 * from then until it had reached 50, 90 and 99 % of the `nodes`; the quantiles over blocks.
 */
export function propagation(arrivals: ReadonlyMap<string, readonly number[]>, nodes: number, from: number, to: number): Propagation {
  const within: Record<keyof typeof SHARES, number[]> = { to50: [], to90: [], to99: [] };
  let blocks = 0;
  let short = 0;
  for (const times of arrivals.values()) {
    const sorted = [...times].sort((a, b) => a - b);
    const born = sorted[0];
    if (born === undefined || born < from || born >= to) continue;
    blocks++;
    for (const [key, share] of Object.entries(SHARES) as [keyof typeof SHARES, number][]) {
      const need = Math.max(1, Math.ceil(share * nodes));
      if (sorted.length >= need) within[key].push(Math.round(sorted[need - 1]! - born));
      else if (key === 'to99') short++;
    }
  }
  return { to50: quantiles(within.to50), to90: quantiles(within.to90), to99: quantiles(within.to99), blocks, blocksShort: short };
}

/** Bytes per node per second by kind, from each node's counts at the start and the end of a window. */
export function ratesBetween(
  before: readonly Readonly<Record<string, number>>[],
  after: readonly Readonly<Record<string, number>>[],
  windowMs: number,
): Record<string, number> {
  const sums = new Map<string, number>();
  for (const [i, end] of after.entries()) {
    const start = before[i] ?? {};
    for (const [kind, n] of Object.entries(end)) sums.set(kind, (sums.get(kind) ?? 0) + n - (start[kind] ?? 0));
  }
  const perNodeSec = after.length * (windowMs / 1000);
  return Object.fromEntries([...sums].sort(([a], [b]) => (a < b ? -1 : 1)).map(([kind, n]) => [kind, round(n / perNodeSec)]));
}

/**
 * The simulator's rates over (shortMs, longMs] of one seed, from its whole-run rates of a run of
 * each length: the first shortMs of both runs are the same, so the bytes between are the
 * difference of the totals.
 */
export function windowRates(
  short: Readonly<Record<string, number>>,
  shortMs: number,
  long: Readonly<Record<string, number>>,
  longMs: number,
): Record<string, number> {
  const kinds = [...new Set([...Object.keys(short), ...Object.keys(long)])].sort();
  return Object.fromEntries(kinds.map((kind) => [kind, round(Math.max(0, (long[kind] ?? 0) * longMs - (short[kind] ?? 0) * shortMs) / (longMs - shortMs))]));
}

export interface KindRow {
  readonly kind: string;
  readonly real: number;
  readonly sim: number;
  /** sim / real; null when the real node sent none. */
  readonly ratio: number | null;
}

/** Each kind either side counted, with both rates and their ratio, the largest real rate first; then `total`. */
export function compareKinds(real: Readonly<Record<string, number>>, sim: Readonly<Record<string, number>>): KindRow[] {
  const kinds = [...new Set([...Object.keys(real), ...Object.keys(sim)])];
  const row = (kind: string, r: number, s: number): KindRow => ({ kind, real: r, sim: s, ratio: r === 0 ? null : Math.round((s / r) * 100) / 100 });
  const rows = kinds.map((kind) => row(kind, real[kind] ?? 0, sim[kind] ?? 0)).sort((a, b) => b.real - a.real || b.sim - a.sim || (a.kind < b.kind ? -1 : 1));
  const total = (rates: Readonly<Record<string, number>>): number => round(Object.values(rates).reduce((sum, n) => sum + n, 0));
  return [...rows, row('total', total(real), total(sim))];
}

const round = (value: number): number => Math.round(value * 10) / 10;
