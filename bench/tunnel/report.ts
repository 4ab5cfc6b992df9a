/**
 * The tunnel benchmark's report: its goal judged on a run's figures, and the Markdown section of
 * bench/RESULTS.md. Pure functions of the results; node.ts measures and writes.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { median } from '../lib/timing.ts';
import { BUSY_SHARE } from '../mesh/report.ts';
import { CASES, type Case, DIRECTIONS, mbps, type Sample } from './cases.ts';
import type { Direction } from './peer.ts';

export interface TunnelReport extends RunInfo {
  readonly node: { readonly version: string };
  /** Bytes each exchange carries. */
  readonly bytes: number;
  readonly runs: number;
  /** The share of the machine other processes kept busy in a quiet moment before the runs. */
  readonly othersShare: number | null;
  readonly samples: readonly Sample[];
}

/** The goal: the tunnel at least this share of the bare libp2p stream's throughput, each way. */
export const TUNNEL_SHARE_GOAL = 0.5;

/** The medians of one case one way. */
export interface CaseFigures {
  readonly case: Case;
  readonly direction: Direction;
  readonly runs: number;
  readonly medianMbps: number;
  readonly minMbps: number;
  readonly maxMbps: number;
  /** CPU time of A and B together per MiB carried, median; null for tcp. */
  readonly cpuMsPerMib: number | null;
}

export function caseFigures(samples: readonly Sample[], kind: Case, direction: Direction): CaseFigures | null {
  const mine = samples.filter((s) => s.case === kind && s.direction === direction);
  if (mine.length === 0) return null;
  const rates = mine.map(mbps);
  const cpu = mine.flatMap((s) => (s.cpuMs === null ? [] : [(s.cpuMs.a + s.cpuMs.b) / (s.bytes / (1024 * 1024))]));
  return {
    case: kind,
    direction,
    runs: mine.length,
    medianMbps: median(rates),
    minMbps: Math.min(...rates),
    maxMbps: Math.max(...rates),
    cpuMsPerMib: cpu.length > 0 ? median(cpu) : null,
  };
}

/** The tunnel's median over the bare stream's, one way; null when either was not measured. */
export function tunnelShare(samples: readonly Sample[], direction: Direction): { share: number; tunnel: CaseFigures; bare: CaseFigures } | null {
  const tunnel = caseFigures(samples, 'tunnel', direction);
  const bare = caseFigures(samples, 'libp2p', direction);
  return tunnel === null || bare === null ? null : { share: tunnel.medianMbps / bare.medianMbps, tunnel, bare };
}

const rate = (mbpsValue: number): string => `${mbpsValue.toFixed(mbpsValue < 10 ? 1 : 0)} MB/s`;
const percent = (share: number): string => `${Math.round(share * 100)}%`;
const WAYS: Record<Direction, string> = { up: 'A → B', down: 'B → A' };

const GOAL_TITLE = `Through a tunnel (TCP → A → libp2p → B → TCP) at least ${percent(TUNNEL_SHARE_GOAL)} of a bare libp2p stream's throughput between the same two processes, each way`;

export function evaluateTunnelGoals(report: TunnelReport): Goal[] {
  const shares = DIRECTIONS.map((direction) => ({ direction, figures: tunnelShare(report.samples, direction) }));
  if (shares.some((s) => s.figures === null)) return [unmeasured(GOAL_TITLE)];
  const detail = shares
    .map(({ direction, figures }) => `${WAYS[direction]} ${rate(figures!.tunnel.medianMbps)} vs ${rate(figures!.bare.medianMbps)}: ${percent(figures!.share)}`)
    .join('; ');
  return [
    {
      title: GOAL_TITLE,
      met: shares.every((s) => s.figures!.share >= TUNNEL_SHARE_GOAL),
      detail: `${detail} (medians of ${report.runs} runs of ${report.bytes / (1024 * 1024)} MiB)`,
    },
  ];
}

const LABELS: Record<Case, string> = {
  libp2p: '· bare libp2p stream (send / message events)',
  port: '▸ raw stream of the network port',
  tunnel: '▸ tunnel: TCP → A → libp2p → B → TCP',
  tcp: '· loopback TCP, this process to itself',
};

export function renderTunnelSection(report: TunnelReport, goals: readonly Goal[]): string {
  const rows: string[][] = [];
  for (const direction of DIRECTIONS) {
    const bare = caseFigures(report.samples, 'libp2p', direction);
    for (const kind of CASES) {
      const f = caseFigures(report.samples, kind, direction);
      if (f === null) continue;
      rows.push([
        kind === CASES[0] ? `**${WAYS[direction]}**` : '',
        LABELS[kind],
        rate(f.medianMbps),
        `${rate(f.minMbps)} – ${rate(f.maxMbps)}`,
        bare === null ? '–' : kind === 'libp2p' ? '1 (ref)' : (f.medianMbps / bare.medianMbps).toFixed(2),
        f.cpuMsPerMib === null ? '–' : `${f.cpuMsPerMib.toFixed(1)} ms`,
      ]);
    }
  }
  const busy = report.othersShare !== null && report.othersShare >= BUSY_SHARE;
  return [
    '## Tunnel',
    '',
    measuredLine(report, `Node ${report.node.version}`, 'runs'),
    '',
    `Two peer processes on loopback (bench/tunnel/peer.ts: the node's libp2p of host-node/p2p.ts and the tunnel service on node:net sockets, without the chain), A connected to B. ` +
      `In each of ${report.runs} rounds, after a warm-up round, ${report.bytes / (1024 * 1024)} MiB go each way through each case in turn, so a busy moment hits them alike. ` +
      `**Up** (A → B): the sender sends, the receiver counts to the FIN and answers the count, timed to the answer; **down** (B → A): the receiver asks and counts to the FIN. ` +
      `The tunnel's TCP ends are in the benchmark's own process: its client connects to A's forwarded port, and B's listener connects to its sink or source. ` +
      `**ratio** is the median throughput over the bare libp2p stream's; **CPU** is A's and B's CPU time together per MiB carried (the TCP ends' own is not counted). ` +
      `Other processes kept ${report.othersShare === null ? '–' : percent(report.othersShare)} of the machine busy just before the runs${busy ? ' (a shared machine: the spread of the figures shows it)' : ''}.`,
    '',
    '### Goals',
    '',
    goalList(goals),
    '',
    markdownTable(['way', 'case', 'median', 'min – max', 'ratio', 'CPU per MiB'], rows, [false, false, true, true, true, true]),
  ].join('\n');
}

export const TUNNEL_REPORT: ReportKind<TunnelReport> = { name: 'tunnel', evaluate: evaluateTunnelGoals, render: renderTunnelSection };
