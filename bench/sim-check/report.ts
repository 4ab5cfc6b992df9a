/**
 * The report of `npx mesh bench sim-check`: the simulator next to real `mesh node` processes on
 * loopback, at each size, and its section of bench/RESULTS.md.
 */
import type { RunInfo } from '../lib/environment.ts';
import type { Goal } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import type { KindRow, Propagation } from './compare.ts';

/** One size: the same mesh as real processes and in the simulator. */
export interface SizeCheck {
  readonly nodes: number;
  /** Connected peers per real node at the end of the window (mean). */
  readonly realPeers: number;
  readonly real: {
    readonly propagation: Propagation;
    /** Bytes per node per second by kind over the window, as GET /traffic counts them. */
    readonly bytesPerNodePerSec: Readonly<Record<string, number>>;
    /** Every TCP byte the node processes sent, per node per second: with what libp2p sends on its own, and its framing. */
    readonly tcpSentPerNodePerSec: number;
  };
  readonly sim: {
    /** Connections each simulated node dialled when it started: as many as the real nodes held. */
    readonly peers: number;
    readonly propagation: Propagation;
    /** Bytes per node per second by kind over the same window of simulated time. */
    readonly bytesPerNodePerSec: Readonly<Record<string, number>>;
  };
  readonly kinds: readonly KindRow[];
}

export interface SimCheckReport extends RunInfo {
  readonly node: { readonly version: string };
  readonly producers: number;
  readonly blockIntervalMs: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  readonly sizes: readonly SizeCheck[];
}

/** The issue asks for the difference, not a threshold: nothing to judge. */
export function evaluateSimCheckGoals(_report: SimCheckReport): Goal[] {
  return [];
}

const ms = (value: number | null): string => (value === null ? '–' : `${value}`);

function propagationRows(size: SizeCheck): string[][] {
  const { real, sim } = size;
  return (['to50', 'to90', 'to99'] as const).map((key) => [
    `${size.nodes}`,
    `${key.slice(2)} %`,
    `${ms(real.propagation[key].p50)} / ${ms(real.propagation[key].p90)}`,
    `${ms(sim.propagation[key].p50)} / ${ms(sim.propagation[key].p90)}`,
  ]);
}

export function renderSimCheckSection(report: SimCheckReport): string {
  const parts = ['## Simulator against real nodes'];
  parts.push(
    `Measured ${report.date.slice(0, 16).replace('T', ' ')} UTC by \`${report.command}\`${report.quick ? ' (quick: small sizes, figures rough)' : ''} ` +
      `on ${report.machine.cpu}, ${report.machine.cores} cores, ${report.machine.os}; Node ${report.node.version}; ${Math.round(report.elapsedMs / 1000)} s in all.` +
      (report.source ? ` Code measured: commit ${report.source.commit}.` : ''),
  );
  parts.push(
    `Real \`mesh node --devnet\` processes on loopback against \`mesh sim\` with every node on one host, 1 ms apart, and the same mesh (docs/sim.md ` +
      `"Validation"): ${report.producers} weighted producers on ${report.blockIntervalMs / 1000}-second blocks, no workload; each real node ` +
      'bootstraps from up to 8 of those started before it and connects to whom its lookups find, each simulated one dials as many as the real ones held. ' +
      `Counted over ${report.windowMs / 1000} s after ${report.warmupMs / 1000} s of warm-up. ` +
      'A block reaches a node when its chain connects it (real: the /blocks/stream event; simulated: connected or accepted).',
  );
  if (report.sizes.length === 0) return parts.join('\n\n');
  parts.push(markdownTable(['nodes', 'block to', 'real: p50 / p90 ms', 'sim: p50 / p90 ms'], report.sizes.flatMap(propagationRows), [true, true, true, true]));
  parts.push(
    markdownTable(
      ['nodes', 'peers (real / sim)', 'blocks (real: born in the window / sim: in the run)', 'short of 99 % (real / sim)', 'TCP sent per node'],
      report.sizes.map((s) => [
        `${s.nodes}`,
        `${s.realPeers.toFixed(1)} / ${s.sim.peers}`,
        `${s.real.propagation.blocks} / ${s.sim.propagation.blocks}`,
        `${s.real.propagation.blocksShort} / ${s.sim.propagation.blocksShort}`,
        `${s.real.tcpSentPerNodePerSec.toFixed(0)} B/s`,
      ]),
      [true, true, true, true, true],
    ),
  );
  for (const size of report.sizes) {
    parts.push(`Bytes sent per node per second at ${size.nodes} nodes:`);
    parts.push(
      markdownTable(
        ['kind', 'real', 'sim', 'sim / real'],
        size.kinds.map((k) => [k.kind, k.real.toFixed(1), k.sim.toFixed(1), k.ratio === null ? '–' : k.ratio.toFixed(2)]),
        [false, true, true, true],
      ),
    );
  }
  return parts.join('\n\n');
}

export const SIM_CHECK_REPORT: ReportKind<SimCheckReport> = { name: 'sim-check', evaluate: evaluateSimCheckGoals, render: renderSimCheckSection };
