/**
 * Latency between simulated nodes. With `planetlab`, each node is placed on one of the 490 hosts
 * of the PlanetLab RTT matrix (shared data `netlatency/PlanetLabData_1`) and a message between two
 * nodes takes half their hosts' round trip, plus jitter; with `none`, messages arrive at the same
 * instant, after what was already due.
 */
import { MAX_RTT_MS } from '../netgraph/vivaldi.ts';
import type { Prng } from './prng.ts';

/** A symmetric matrix of round trips in ms between hosts. */
export interface RttTable {
  readonly hosts: number;
  rtt(i: number, j: number): number;
}

/** A square RTT matrix; entry (i, j) is what host i measured to host j, 0 where nothing was. */
export interface RttMatrix {
  readonly hosts: number;
  /** hosts × hosts, row-major, milliseconds; 0 = unmeasured (the diagonal always). */
  readonly rttMs: Float64Array;
  /** Off-diagonal entries with a figure. */
  readonly measured: number;
  /** Off-diagonal entries left unmeasured: zero or negative in the file, or beyond MAX_RTT_MS. */
  readonly unmeasured: number;
}

/**
 * A matrix from whitespace-separated text, one row per line, each value in units of `unitMs`
 * milliseconds (1 for PlanetLab's milliseconds, 1,000 for Seattle's seconds). Throws a RangeError
 * for text that is not a square matrix of numbers.
 */
export function parseMatrix(text: string, unitMs: number): RttMatrix {
  const rows = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => line.split(/\s+/).map(Number));
  const hosts = rows.length;
  const rttMs = new Float64Array(hosts * hosts);
  let measured = 0;
  rows.forEach((row, i) => {
    if (row.length !== hosts) throw new RangeError(`row ${i + 1} has ${row.length} values, not ${hosts}: the matrix is not square`);
    row.forEach((value, j) => {
      if (Number.isNaN(value)) throw new RangeError(`row ${i + 1}, column ${j + 1} is not a number`);
      const ms = value * unitMs;
      // Zero (the diagonal, a failed probe) and anything no observation may carry count as unmeasured.
      if (i !== j && ms > 0 && ms <= MAX_RTT_MS) {
        rttMs[i * hosts + j] = ms;
        measured++;
      }
    });
  });
  return { hosts, rttMs, measured, unmeasured: hosts * (hosts - 1) - measured };
}

/**
 * The PlanetLab file's text (one row per line, ms, i to j), made symmetric: the round trip of a
 * pair is the mean of its two measured directions, or the one measured; a pair measured neither
 * way takes the median of all the measured ones.
 */
export function planetLabTable(text: string): RttTable {
  const { hosts, rttMs } = parseMatrix(text, 1);
  const all = rttMs.filter((v) => v > 0).sort();
  const median = all[all.length >> 1] ?? 100;
  const table = new Float32Array(hosts * hosts);
  for (let i = 0; i < hosts; i++) {
    for (let j = i + 1; j < hosts; j++) {
      const ab = rttMs[i * hosts + j]!;
      const ba = rttMs[j * hosts + i]!;
      const rtt = ab > 0 && ba > 0 ? (ab + ba) / 2 : ab > 0 ? ab : ba > 0 ? ba : median;
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
