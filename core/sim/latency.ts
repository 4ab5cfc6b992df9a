/**
 * Latency between simulated nodes. With `planetlab`, each node is placed on one of the 490 hosts
 * of the PlanetLab RTT matrix (shared data `netlatency/PlanetLabData_1`) and a message between two
 * nodes takes half their hosts' round trip, plus jitter; with `none`, messages arrive at the same
 * instant, after what was already due.
 */
import type { Prng } from './prng.ts';

/** A symmetric matrix of round trips in ms between hosts. */
export interface RttTable {
  readonly hosts: number;
  rtt(i: number, j: number): number;
}

/** Round trips above this are failed probes in the file (its maximum is about 3 s). */
const MAX_RTT_MS = 5_000;

/**
 * The PlanetLab file's text (one row per line, ms, i to j): the round trip of a pair is the mean
 * of its two measured directions, or the one measured; a pair measured neither way takes the
 * median of all the measured ones.
 */
export function planetLabTable(text: string): RttTable {
  const rows = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => line.split(/\s+/).map(Number));
  const hosts = rows.length;
  if (hosts < 2 || rows.some((row) => row.length !== hosts)) throw new RangeError(`the RTT matrix is not square (${hosts} rows)`);
  const measured = (i: number, j: number): number | null => {
    const v = rows[i]![j]!;
    return Number.isFinite(v) && v > 0 && v <= MAX_RTT_MS ? v : null;
  };
  const all: number[] = [];
  for (let i = 0; i < hosts; i++) for (let j = 0; j < hosts; j++) if (i !== j && measured(i, j) !== null) all.push(measured(i, j)!);
  all.sort((a, b) => a - b);
  const median = all[all.length >> 1] ?? 100;
  const table = new Float32Array(hosts * hosts);
  for (let i = 0; i < hosts; i++) {
    for (let j = i + 1; j < hosts; j++) {
      const ab = measured(i, j);
      const ba = measured(j, i);
      const rtt = ab !== null && ba !== null ? (ab + ba) / 2 : (ab ?? ba ?? median);
      table[i * hosts + j] = rtt;
      table[j * hosts + i] = rtt;
    }
  }
  return { hosts, rtt: (i, j) => table[i * hosts + j]! };
}

export interface LatencyModel {
  /** The one-way delay of a message from node `a` to node `b` (indices), jitter drawn from `rng`. */
  oneWay(a: number, b: number, rng: Prng): number;
  /** The round trip between the hosts of `a` and `b`, without jitter. */
  baseRtt(a: number, b: number): number;
}

/** No delay at all. */
export const NO_LATENCY: LatencyModel = { oneWay: () => 0, baseRtt: () => 0 };

/**
 * Nodes placed on the table's hosts, `placement` drawn from `rng` (distinct hosts while there are
 * enough). Jitter: each message takes a further uniform 0 to `jitter` of its one-way delay.
 */
export function tableLatency(table: RttTable, nodes: number, rng: Prng, jitter = 0.1): LatencyModel {
  const order = rng.sample(
    Array.from({ length: table.hosts }, (_, i) => i),
    table.hosts,
  );
  const host = Array.from({ length: nodes }, (_, i) => order[i % table.hosts]!);
  const baseRtt = (a: number, b: number): number => (a === b || host[a] === host[b] ? 1 : table.rtt(host[a]!, host[b]!));
  return {
    baseRtt,
    oneWay: (a, b, r) => {
      const half = baseRtt(a, b) / 2;
      return Math.round(half * (1 + jitter * r.float()));
    },
  };
}
