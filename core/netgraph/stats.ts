/**
 * The mesh in three figures (what the fabric statistics show of the network): the median RTT over
 * the link samples a node holds, the share of known nodes it can reach, and how many regions the
 * nodes it knows of fall into.
 *
 * Regions are judged on the least RTT measured of each pair lately, not on its latest median:
 * queueing at either end (a busy host, a garbage collection, a loaded link) only ever adds to a
 * round trip, so the least one is the path's own delay, and a spell of load at one node does not
 * split it from its neighbours.
 */
import { median } from '../collections/median.ts';
import { type Coordinate, estimateRttMs } from './vivaldi.ts';

/** Two nodes closer than this (measured, or else predicted) are in one region. */
export const REGION_RTT_MS = 30;

export interface MeshStats {
  /** The median rtt_ms of the link samples held; null with none. */
  median_rtt_ms: number | null;
  /** Reachable known nodes ÷ known nodes (this node left out); null when it knows of no other node. */
  reachable_frac: number | null;
  /** Clusters of the nodes known, linked where the least RTT measured lately (or else predicted) is under REGION_RTT_MS (single linkage); at least 1, this node. */
  regions: number;
}

export interface MeshPicture {
  readonly self: string;
  /** Every node known of (hex), from the atlas, the coordinates and the links; this node may be among them. */
  readonly known: ReadonlySet<string>;
  /** Nodes this node can reach: connected now, or with a fresh link sample with it. */
  readonly reachable: ReadonlySet<string>;
  /** The link samples held (the newest of each link), as [a, b, rtt_ms]: their median is median_rtt_ms. */
  readonly measured: readonly (readonly [string, string, number])[];
  /**
   * The least RTTs measured of pairs lately, as [a, b, ms], that regions are judged on: a pair may
   * come more than once (from its samples, from this node's own pings) and its least counts.
   */
  readonly leastMeasured: readonly (readonly [string, string, number])[];
  /** Coordinates by node (hex), this node's own included. */
  readonly coordinates: ReadonlyMap<string, Coordinate>;
}

/**
 * The figures of `picture`. Regions: single linkage over the nodes known, two nodes joined when the
 * least RTT measured between them lately is under REGION_RTT_MS, or, with no measurement of the
 * pair, when the RTT their coordinates predict is. A node with neither is a region of its own.
 */
export function meshStats(picture: MeshPicture): MeshStats {
  const nodes = [...new Set([picture.self, ...picture.known])];
  const index = new Map(nodes.map((node, i) => [node, i]));
  const parent = nodes.map((_, i) => i);
  const find = (i: number): number => {
    while (parent[i] !== i) i = parent[i] = parent[parent[i]!]!;
    return i;
  };
  const join = (i: number, j: number): void => void (parent[find(i)] = find(j));
  const measuredPairs = new Set<string>();
  for (const [a, b, ms] of picture.leastMeasured) {
    const i = index.get(a);
    const j = index.get(b);
    if (i === undefined || j === undefined) continue;
    measuredPairs.add(i < j ? `${i}:${j}` : `${j}:${i}`);
    if (ms < REGION_RTT_MS) join(i, j);
  }
  // A sweep along the first axis rather than every pair: a predicted RTT is at least the distance
  // on that axis, less the most the adjustments can take off, so only pairs that close on it can
  // be under REGION_RTT_MS (O(N log N) for a spread mesh, where every pair was O(N²)).
  const placed = nodes
    .map((node, i) => [i, picture.coordinates.get(node)] as const)
    .filter((p): p is readonly [number, Coordinate] => p[1] !== undefined && p[1].vec.length > 0)
    .sort(([, a], [, b]) => a.vec[0]! - b.vec[0]!);
  const mostOff = placed.reduce((most, [, c]) => Math.max(most, -c.adjustment), 0);
  const windowS = (REGION_RTT_MS + 2 * mostOff * 1000) / 1000;
  for (let x = 0; x < placed.length; x++) {
    for (let y = x + 1; y < placed.length && placed[y]![1].vec[0]! - placed[x]![1].vec[0]! < windowS; y++) {
      const [i, ci] = placed[x]!;
      const [j, cj] = placed[y]!;
      if (find(i) === find(j) || measuredPairs.has(i < j ? `${i}:${j}` : `${j}:${i}`)) continue;
      if (ci.vec.length === cj.vec.length && estimateRttMs(ci, cj) < REGION_RTT_MS) join(i, j);
    }
  }
  const others = nodes.filter((node) => node !== picture.self);
  return {
    median_rtt_ms: median(picture.measured.map(([, , ms]) => ms)),
    reachable_frac: others.length === 0 ? null : others.filter((node) => picture.reachable.has(node)).length / others.length,
    regions: new Set(nodes.map((_, i) => find(i))).size,
  };
}
