/**
 * The simulation benchmark's report (`npx mesh bench sim`): the mesh at scale in the simulator,
 * its goals (issue "A thousand nodes"), and the "Simulation" section of bench/RESULTS.md.
 */

import type { SimReport } from '../../core/sim/run.ts';
import type { RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { percentile } from '../lib/timing.ts';

/** One run at one size: what it cost this machine, and the simulated figures that matter at scale. */
export interface ScaleRun {
  readonly nodes: number;
  readonly durationMs: number;
  readonly wallMs: number;
  /** The process's largest resident set seen during the run, sampled each second. */
  readonly peakRssBytes: number;
  readonly invariantsHeld: boolean;
  readonly to99: SimReport['figures']['propagationMs']['to99'];
  readonly blocksShort: number;
  readonly forksPerHour: number;
  readonly bytesPerNodePerSec: Readonly<Record<string, number>>;
}

/** The fault scenario over many seeds: churn and a partition of a third, every invariant, the heal. */
export interface FaultRuns {
  readonly nodes: number;
  readonly durationMs: number;
  readonly churnPerHour: number;
  readonly partition: { readonly atMs: number; readonly forMs: number; readonly share: number };
  readonly seeds: number;
  /** Each seed whose run broke an invariant, with the invariants it broke. */
  readonly broke: readonly { readonly seed: string; readonly invariants: readonly string[] }[];
  /** Per seed, ms from the heal until the honest nodes were on one tip (null: not within the run). */
  readonly healMs: readonly (number | null)[];
}

export interface SimBenchReport extends RunInfo {
  readonly node: { readonly version: string };
  readonly scale: readonly ScaleRun[];
  readonly faults: FaultRuns | null;
}

/** Bytes that are not the mesh's own upkeep: blocks (gossiped or synced), transactions, and what the workload's apps send. */
export function isPayload(kind: string): boolean {
  return (
    kind === 'mesh-blocks' ||
    kind === 'mesh-transactions' ||
    kind === 'rpc sync.blocks' ||
    kind.startsWith('stream ') ||
    kind.startsWith('rpc channels.') ||
    kind.startsWith('rpc jobs.')
  );
}

/** The mesh's overhead per node per second: everything but blocks, transactions and app payloads. */
export function overheadPerNode(bytes: Readonly<Record<string, number>>): number {
  return Object.entries(bytes).reduce((sum, [kind, n]) => (isPayload(kind) ? sum : sum + n), 0);
}

const GiB = 2 ** 30;
const secs = (ms: number): string => `${(ms / 1000).toFixed(0)} s`;
const kB = (bytes: number): string => `${(bytes / 1000).toFixed(2)} kB/s`;

export function evaluateSimGoals(report: SimBenchReport): Goal[] {
  const goals: Goal[] = [];
  const big = report.scale.find((r) => r.nodes === 1_000 && r.durationMs >= 3_600_000);
  const wallTitle = '1,000 nodes for 1 simulated hour with PlanetLab latencies in at most 15 min of wall time, within 16 GiB';
  goals.push(
    big === undefined
      ? unmeasured(wallTitle, 'no run of 1,000 nodes for an hour')
      : {
          title: wallTitle,
          met: big.wallMs <= 15 * 60_000 && big.peakRssBytes <= 16 * GiB,
          detail: `${secs(big.wallMs)}, ${(big.peakRssBytes / GiB).toFixed(1)} GiB at the most`,
        },
  );
  const at1000 = report.scale.find((r) => r.nodes === 1_000);
  const propagationTitle = 'At 1,000 nodes, a block reaches 99 % of honest nodes within 2 s (p99 over the run)';
  goals.push(
    at1000 === undefined || at1000.to99.p99 === null
      ? unmeasured(propagationTitle, 'no run of 1,000 nodes')
      : {
          title: propagationTitle,
          met: at1000.to99.p99 <= 2_000,
          detail: `p99 ${at1000.to99.p99} ms, p50 ${at1000.to99.p50} ms; ${at1000.blocksShort} blocks never reached 99 %`,
        },
  );
  const overheadTitle = 'Mesh overhead per node (everything but blocks, transactions and app payloads) at most 2 kB/s at 1,000 nodes';
  goals.push(
    at1000 === undefined
      ? unmeasured(overheadTitle, 'no run of 1,000 nodes')
      : { title: overheadTitle, met: overheadPerNode(at1000.bytesPerNodePerSec) <= 2_000, detail: kB(overheadPerNode(at1000.bytesPerNodePerSec)) },
  );
  const f = report.faults;
  const faultTitle =
    'With 20 % of nodes churning per hour and a 10-minute partition of a third, no invariant breaks in 100 seeds, and the halves agree on one tip within 30 s of the heal';
  if (f === null) goals.push(unmeasured(faultTitle, 'the fault scenario did not run'));
  else {
    const heals = f.healMs.filter((h): h is number => h !== null);
    const slowest = heals.length === f.healMs.length && heals.length > 0 ? Math.max(...heals) : null;
    goals.push({
      title: faultTitle,
      // A break or a slow heal misses it at any count; fewer than 100 clean seeds do not yet show it.
      met: f.broke.length > 0 || slowest === null || slowest > 30_000 ? false : f.seeds >= 100 ? true : null,
      detail:
        `${f.seeds} seeds at ${f.nodes} nodes for ${f.durationMs / 60_000} min: ${f.broke.length} broke an invariant` +
        `${f.broke.length > 0 ? ` (${f.broke.map((b) => `seed ${b.seed}: ${b.invariants.join(', ')}`).join('; ')})` : ''}; ` +
        `slowest heal ${slowest === null ? `not within the run in ${f.healMs.length - heals.length} seeds` : `${slowest} ms`}`,
    });
  }
  return goals;
}

export function renderSimSection(report: SimBenchReport, goals: readonly Goal[] = evaluateSimGoals(report)): string {
  const parts = ['## Simulation'];
  parts.push(
    `Measured ${report.date.slice(0, 16).replace('T', ' ')} UTC by \`${report.command}\`${report.quick ? ' (quick: small sizes, figures rough)' : ''} ` +
      `on ${report.machine.cpu}, ${report.machine.cores} cores, ${report.machine.os}; Node ${report.node.version}; ${secs(report.elapsedMs)} in all.` +
      (report.source ? ` Code measured: commit ${report.source.commit}.` : ''),
  );
  parts.push(
    '`mesh sim` (docs/sim.md) runs full nodes in one process on simulated time over PlanetLab latencies, with the default ' +
      "workload and 5 producers. Wall time and the largest resident set are this machine's; everything else is simulated " +
      'and the same for the same seed. Overhead is every byte a node sends but blocks, transactions and app payloads ' +
      '(docs/scale.md).',
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  if (report.scale.length > 0) {
    parts.push(
      markdownTable(
        ['nodes', 'simulated', 'wall', 'peak RSS', 'block to 99 %: p50 / p99', 'blocks short', 'forks / h', 'overhead per node', 'invariants'],
        report.scale.map((r) => [
          `${r.nodes}`,
          `${r.durationMs / 60_000} min`,
          secs(r.wallMs),
          `${(r.peakRssBytes / GiB).toFixed(2)} GiB`,
          `${r.to99.p50 ?? '–'} / ${r.to99.p99 ?? '–'} ms`,
          `${r.blocksShort}`,
          `${r.forksPerHour}`,
          kB(overheadPerNode(r.bytesPerNodePerSec)),
          r.invariantsHeld ? 'held' : 'BROKE',
        ]),
        [true, true, true, true, true, true, true, true, false],
      ),
    );
  }
  const [smallest, ...larger] = report.scale;
  if (smallest !== undefined && larger.length > 0) {
    // The baseline of the same run: what a node sends besides blocks, transactions and payloads in the smallest mesh.
    const base = overheadPerNode(smallest.bytesPerNodePerSec);
    const ratios = larger.map((r) => `×${(overheadPerNode(r.bytesPerNodePerSec) / base).toFixed(2)} at ${r.nodes} nodes`);
    parts.push(`Overhead per node against ${smallest.nodes} nodes in the same run: ${ratios.join(', ')}.`);
  }
  const faults = report.faults;
  if (faults !== null) {
    const heals = faults.healMs.filter((ms): ms is number => ms !== null);
    const heal =
      heals.length === 0
        ? 'no heal within a run'
        : `heal p50 ${secs1(percentile(heals, 50))}, p90 ${secs1(percentile(heals, 90))}, slowest ${secs1(Math.max(...heals))}` +
          (heals.length < faults.healMs.length ? `, ${faults.healMs.length - heals.length} not within the run` : '');
    const broke = faults.broke.length === 0 ? 'none broke an invariant' : faults.broke.map((b) => `${b.seed}: ${b.invariants.join(', ')}`).join('; ');
    parts.push(
      `Faults: ${faults.seeds} seeds (\`fault-1\` to \`fault-${faults.seeds}\`) of ${faults.nodes} nodes for ${faults.durationMs / 60_000} simulated min, ` +
        `${faults.churnPerHour * 100} % churning an hour, ${Math.round(faults.partition.share * 100)} % parted from ${faults.partition.atMs / 60_000} min for ${faults.partition.forMs / 60_000} min: ${broke}; ${heal}.`,
    );
  }
  return parts.join('\n\n');
}

const secs1 = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

export const SIM_REPORT: ReportKind<SimBenchReport> = { name: 'sim', evaluate: evaluateSimGoals, render: renderSimSection };
