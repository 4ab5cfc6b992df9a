/**
 * The netgraph benchmark's report: the measurement's cost per node per minute at each size, next
 * to the same nodes' traffic without it, and the Markdown section of bench/RESULTS.md.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { mean, type TrafficRun } from './cases.ts';

export interface SizeResult {
  readonly nodes: number;
  /** The default pings, with the netgraph's samples and coordinates. */
  readonly measuring: TrafficRun;
  /** Pings a day apart: nothing of the measurement layer in the window. */
  readonly off: TrafficRun;
}

export interface NetgraphReport extends RunInfo {
  readonly node: { readonly version: string };
  readonly blockIntervalMs: number;
  readonly sizes: readonly SizeResult[];
}

const kb = (bytes: number): string => `${(bytes / 1000).toFixed(1)} kB`;

/** The measurement's cost per node per minute: the mean of the measuring run less the mean of the one without. */
export function costPerNode(size: SizeResult): number {
  return mean(size.measuring.bytesPerMinute) - mean(size.off.bytesPerMinute);
}

export function evaluateNetgraphGoals(report: NetgraphReport): Goal[] {
  const title =
    "The measurement's cost: bytes per node per minute spent on pings, link samples and coordinates, at 3 and at 10 nodes (a figure to report; no bound is set)";
  const wanted = [3, 10].map((n) => report.sizes.find((s) => s.nodes === n));
  if (wanted.some((s) => s === undefined)) return [unmeasured(title, `measured at ${report.sizes.map((s) => s.nodes).join(' and ') || 'no'} nodes only`)];
  return [
    {
      title,
      met: true,
      detail: wanted
        .map((s) => `${s!.nodes} nodes: ${kb(costPerNode(s!))} per node per minute, next to ${kb(mean(s!.off.bytesPerMinute))} for everything else`)
        .join('; '),
    },
  ];
}

export function renderNetgraphSection(report: NetgraphReport, goals: readonly Goal[] = evaluateNetgraphGoals(report)): string {
  const parts = ["## Network graph: the measurement's cost"];
  parts.push(measuredLine(report, `Node ${report.node.version}`, 'seconds'));
  parts.push(
    'Real `mesh node --devnet` processes on loopback (the first mining, a block every ' +
      `${report.blockIntervalMs} ms), each joining through the first node and the one started before it. After a warm-up, ` +
      'the TCP bytes each node process sent (acknowledged) and received over a window are read from the kernel ' +
      '(`ss -tinp`, every established socket of the process): what libp2p puts on the wire, Noise and yamux framing ' +
      'included. Each size runs twice: with the default pings (every 10 s ± 25 %, a link sample per link every 60 s, ' +
      'the coordinate every 30 s), and with pings a day apart, when nothing of the measurement layer falls in the window: ' +
      'that run is the **baseline**, what the same nodes spend on everything else. The cost is the difference of the two ' +
      'means, so it carries the noise of both (block sizes, gossip upkeep); the machine is shared, the figures are rough.',
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  const rows = report.sizes.flatMap((s) => [
    [`**${s.nodes} nodes: the measurement's cost**`, `**${kb(costPerNode(s))}**`, '', '', ''],
    [
      `▸ with pings every ${s.measuring.pingIntervalMs / 1000} s`,
      kb(mean(s.measuring.bytesPerMinute)),
      (Math.round(mean(s.measuring.peers) * 10) / 10).toString(),
      (Math.round(mean(s.measuring.links) * 10) / 10).toString(),
      (Math.round(mean(s.measuring.coordinates) * 10) / 10).toString(),
    ],
    [
      '· baseline: pings a day apart',
      kb(mean(s.off.bytesPerMinute)),
      (Math.round(mean(s.off.peers) * 10) / 10).toString(),
      (Math.round(mean(s.off.links) * 10) / 10).toString(),
      (Math.round(mean(s.off.coordinates) * 10) / 10).toString(),
    ],
  ]);
  parts.push(
    markdownTable(['run', 'TCP bytes per node per minute (mean)', 'peers per node', 'link samples held', 'coordinates held'], rows, [
      false,
      true,
      true,
      true,
      true,
    ]),
  );
  parts.push(`Window ${report.sizes[0] ? report.sizes[0].measuring.windowMs / 1000 : '–'} s per run.`);
  return parts.join('\n\n');
}

export const NETGRAPH_REPORT: ReportKind<NetgraphReport> = { name: 'netgraph', evaluate: evaluateNetgraphGoals, render: renderNetgraphSection };
