/**
 * The coordinates benchmark's replay, web-standard like the core it runs: a measured RTT matrix
 * replayed through VivaldiClient as the mesh would run it. Every node starts at the origin; in each
 * round every node measures a few peers drawn at random among those the matrix has a figure for,
 * and observes each with that peer's current coordinate. After chosen rounds, every measured entry
 * (i, j) is predicted from the two coordinates and the relative error |predicted − measured| ÷
 * measured is taken over all of them. The baseline predicts every entry by the matrix's median.
 */
import type { Random } from '../../core/crypto/random.ts';
import { SERF_CONFIG, VivaldiClient, type VivaldiConfig } from '../../core/netgraph/vivaldi.ts';
import { parseMatrix, type RttMatrix } from '../../core/sim/latency.ts';
import { seededRandom } from '../lib/random.ts';
import { median, percentile } from '../lib/timing.ts';

// The matrix and its parser are the simulator's too (core/sim/latency.ts).
export { parseMatrix, type RttMatrix };

/** The relative errors' summary: median and 90th percentile (fractions, 0.11 = 11 %). */
export interface ErrorStats {
  readonly median: number;
  readonly p90: number;
}

function stats(errors: number[]): ErrorStats {
  return { median: median(errors), p90: percentile(errors, 90) };
}

/** Every measured entry's value, in matrix order. */
function measuredValues(m: RttMatrix): number[] {
  const values: number[] = [];
  for (const v of m.rttMs) if (v > 0) values.push(v);
  return values;
}

/** The baseline: every entry predicted by the median of all measured entries. */
export function medianBaseline(m: RttMatrix): ErrorStats & { readonly predictionMs: number } {
  const values = measuredValues(m);
  const predictionMs = median(values);
  return { predictionMs, ...stats(values.map((rtt) => Math.abs(predictionMs - rtt) / rtt)) };
}

/** The relative error of every measured entry, predicted by the two hosts' coordinates. */
export function coordinateErrors(m: RttMatrix, clients: readonly VivaldiClient[]): ErrorStats {
  const errors: number[] = [];
  for (let i = 0; i < m.hosts; i++) {
    const mine = clients[i]!;
    for (let j = 0; j < m.hosts; j++) {
      const rtt = m.rttMs[i * m.hosts + j]!;
      if (rtt > 0) errors.push(Math.abs(mine.estimateRttMs(clients[j]!.coordinate) - rtt) / rtt);
    }
  }
  return stats(errors);
}

/** The benchmark's generator as the core's Random port (bytes), for the clients' directions. */
function randomPort(next: () => number): Random {
  return { bytes: (length) => Uint8Array.from({ length }, () => Math.floor(next() * 256)) };
}

export interface ReplayOptions {
  /** Rounds in all; in each, every host measures `peersPerRound` peers. */
  readonly rounds: number;
  readonly peersPerRound: number;
  /** Rounds after which the error is taken (the last round always is). */
  readonly checkpoints: readonly number[];
  readonly seed: number;
}

/** The error after a number of rounds. */
export interface Checkpoint extends ErrorStats {
  readonly round: number;
}

/**
 * Replays `m` through one VivaldiClient per host configured with `config` (over Serf's defaults).
 * Deterministic for a seed: the peers drawn and the clients' random directions come from it.
 */
export function replay(m: RttMatrix, config: Partial<VivaldiConfig>, options: ReplayOptions): Checkpoint[] {
  const next = seededRandom(options.seed);
  const random = randomPort(next);
  const clients = Array.from({ length: m.hosts }, () => new VivaldiClient({ random, config }));
  const peers = Array.from({ length: m.hosts }, (_, i) => {
    const list: number[] = [];
    for (let j = 0; j < m.hosts; j++) if (m.rttMs[i * m.hosts + j]! > 0) list.push(j);
    return list;
  });
  const at = new Set([...options.checkpoints.filter((r) => r <= options.rounds), options.rounds]);
  const out: Checkpoint[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    for (let i = 0; i < m.hosts; i++) {
      const mine = peers[i]!;
      // Distinct peers: a partial Fisher–Yates shuffle of the host's measured peers.
      const take = Math.min(options.peersPerRound, mine.length);
      for (let k = 0; k < take; k++) {
        const pick = k + Math.floor(next() * (mine.length - k));
        const j = mine[pick]!;
        mine[pick] = mine[k]!;
        mine[k] = j;
        clients[i]!.observe(String(j), clients[j]!.coordinate, m.rttMs[i * m.hosts + j]!);
      }
    }
    if (at.has(round)) out.push({ round, ...coordinateErrors(m, clients) });
  }
  return out;
}

/** A matrix the benchmark replays: its shared data file and the unit of its values. */
export interface Dataset {
  readonly name: string;
  /** The file under shared/data (core/data/shared-data.ts's table). */
  readonly file: string;
  /** Milliseconds per unit of the file's values. */
  readonly unitMs: number;
  readonly about: string;
}

export const DATASETS: readonly Dataset[] = [
  { name: 'PlanetLab', file: 'netlatency/PlanetLabData_1', unitMs: 1, about: 'PlanetLab hosts, time slice 1 of 18, milliseconds' },
  {
    name: 'Seattle',
    file: 'netlatency/SeattleData_1',
    // Seconds to two decimals: median 0.21, smallest 0.01, largest 9.16 (as milliseconds, a 10 µs RTT across the Internet).
    unitMs: 1000,
    about: 'Seattle testbed hosts (personal devices among them), time slice 1 of 688, seconds to two decimals',
  },
];

/** A configuration the replay runs: Serf's defaults, with `config` over them. */
export interface Variant {
  readonly label: string;
  readonly config: Partial<VivaldiConfig>;
}

export const SERF_VARIANT = "Vivaldi, Serf's defaults (8-D + height)";
export const VARIANTS: readonly Variant[] = [
  { label: SERF_VARIANT, config: {} },
  { label: "Vivaldi 2-D + height (the paper's model, Serf's other defaults)", config: { dimensionality: 2 } },
];

/** One variant replayed once per seed: the checkpoints of each run. */
export interface VariantResult {
  readonly label: string;
  readonly dimensionality: number;
  readonly runs: readonly (readonly Checkpoint[])[];
}

export interface DatasetResult {
  readonly name: string;
  readonly file: string;
  readonly about: string;
  readonly hosts: number;
  readonly measured: number;
  readonly unmeasured: number;
  /** The median over entries measured both ways of |m(i,j) − m(j,i)| ÷ m(i,j): what no symmetric prediction can follow. */
  readonly asymmetry: number;
  readonly baseline: ErrorStats & { readonly predictionMs: number };
  readonly symmetric: ErrorStats;
  readonly triangles: TriangleStats;
  readonly variants: readonly VariantResult[];
}

export interface CoordsCase {
  readonly rounds: number;
  readonly peersPerRound: number;
  readonly checkpoints: readonly number[];
  readonly seeds: readonly number[];
  readonly datasets: readonly DatasetResult[];
}

// f(there, back) for every entry whose pair was measured both ways.
function bothWays(m: RttMatrix, f: (there: number, back: number) => number): number[] {
  const out: number[] = [];
  for (let i = 0; i < m.hosts; i++) {
    for (let j = 0; j < m.hosts; j++) {
      const there = m.rttMs[i * m.hosts + j]!;
      const back = m.rttMs[j * m.hosts + i]!;
      if (there > 0 && back > 0) out.push(f(there, back));
    }
  }
  return out;
}

/**
 * A reference, not a predictor: every entry measured both ways predicted by the geometric mean of
 * its two directions. It knows the answer, and still errs where the directions differ: how much a
 * prediction the same both ways (a distance) gives up by splitting the difference. Not a floor on
 * the median: taking the smaller direction instead errs by 0 on half the entries.
 */
export function symmetricReference(m: RttMatrix): ErrorStats {
  const errors = bothWays(m, (there, back) => Math.abs(Math.sqrt(there * back) - there) / there);
  return errors.length === 0 ? { median: 0, p90: 0 } : stats(errors);
}

/** The Vivaldi paper's median relative error, 2-D + height on its 1,740-host matrix: the figure to beat. */
export const PAPER_MEDIAN_ERROR = 0.11;

/** How far the matrix is from any distance: its triangles that break the triangle inequality. */
export interface TriangleStats {
  /** Triangles of hosts whose three pairs were measured both ways, each pair taken as the geometric mean of its directions. */
  readonly triangles: number;
  /** The fraction whose longest side exceeds the sum of the other two. */
  readonly violating: number;
  /**
   * The fraction whose longest side is more than (1 + e) ÷ (1 − e) times the sum of the other two:
   * on each, any prediction that obeys the triangle inequality errs by more than `error` on at least one side.
   */
  readonly beyond: number;
  readonly error: number;
}

/**
 * The triangle inequality checked on every triangle of the matrix symmetrised by geometric means.
 * Why `beyond` bounds any metric embedding: if predictions L', a', b' of sides L > a + b each err by
 * at most e, then L(1 − e) ≤ L' ≤ a' + b' ≤ (a + b)(1 + e). Vivaldi's distance with heights is a
 * metric (a height is added at both ends of every path); only the adjustment terms can bend it.
 */
export function triangleViolations(m: RttMatrix, error: number): TriangleStats {
  const n = m.hosts;
  const side = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const there = m.rttMs[i * n + j]!;
      const back = m.rttMs[j * n + i]!;
      if (there > 0 && back > 0) side[i * n + j] = Math.sqrt(there * back);
    }
  }
  const slack = (1 + error) / (1 - error);
  let triangles = 0;
  let violating = 0;
  let beyond = 0;
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const a = side[i * n + j]!;
      if (a === 0) continue;
      for (let k = j + 1; k < n; k++) {
        const b = side[i * n + k]!;
        const c = side[j * n + k]!;
        if (b === 0 || c === 0) continue;
        const longest = Math.max(a, b, c);
        const others = a + b + c - longest;
        triangles++;
        if (longest > others) violating++;
        if (longest > slack * others) beyond++;
      }
    }
  }
  return triangles === 0 ? { triangles, violating: 0, beyond: 0, error } : { triangles, violating: violating / triangles, beyond: beyond / triangles, error };
}

/** How far apart the two directions of each pair were measured (median, over pairs measured both ways). */
export function asymmetry(m: RttMatrix): number {
  const ratios = bothWays(m, (there, back) => Math.abs(there - back) / there);
  return ratios.length === 0 ? 0 : median(ratios);
}

export interface CoordsOptions {
  readonly rounds: number;
  readonly peersPerRound: number;
  /** One run per seed. */
  readonly seeds: readonly number[];
  readonly checkpoints: readonly number[];
  /** The bytes of a shared data file (`loadSharedData` on a host). */
  readonly load: (file: string) => Promise<Uint8Array>;
  readonly log: (text: string) => void;
  readonly datasets?: readonly Dataset[];
  readonly variants?: readonly Variant[];
}

const percent = (x: number): string => `${(x * 100).toFixed(1)} %`;

/** Replays every dataset through every variant, once per seed. */
export async function measureCoords(options: CoordsOptions): Promise<CoordsCase> {
  const { log } = options;
  const datasets: DatasetResult[] = [];
  for (const d of options.datasets ?? DATASETS) {
    const m = parseMatrix(new TextDecoder().decode(await options.load(d.file)), d.unitMs);
    const baseline = medianBaseline(m);
    log(`== ${d.name}: ${m.hosts} hosts, ${m.measured.toLocaleString('en-US')} measured entries (${m.unmeasured} unmeasured)`);
    log(
      `  baseline, every entry predicted by the median ${baseline.predictionMs.toFixed(1)} ms: median error ${percent(baseline.median)}, p90 ${percent(baseline.p90)}`,
    );
    const variants: VariantResult[] = [];
    for (const v of options.variants ?? VARIANTS) {
      const runs = options.seeds.map((seed) =>
        replay(m, v.config, { rounds: options.rounds, peersPerRound: options.peersPerRound, checkpoints: options.checkpoints, seed }),
      );
      for (const [k, run] of runs.entries()) {
        log(`  ${v.label}, seed ${options.seeds[k]}: ${run.map((c) => `${c.round} rounds ${percent(c.median)}`).join(', ')}; p90 ${percent(run.at(-1)!.p90)}`);
      }
      variants.push({ label: v.label, dimensionality: v.config.dimensionality ?? SERF_CONFIG.dimensionality, runs });
    }
    datasets.push({
      name: d.name,
      file: d.file,
      about: d.about,
      hosts: m.hosts,
      measured: m.measured,
      unmeasured: m.unmeasured,
      asymmetry: asymmetry(m),
      baseline,
      symmetric: symmetricReference(m),
      triangles: triangleViolations(m, PAPER_MEDIAN_ERROR),
      variants,
    });
  }
  const checkpoints = [...new Set([...options.checkpoints.filter((r) => r <= options.rounds), options.rounds])].sort((a, b) => a - b);
  return { rounds: options.rounds, peersPerRound: options.peersPerRound, checkpoints, seeds: options.seeds, datasets };
}
