/**
 * The hole-punching benchmark's report: its goals judged on a run's figures, and the Markdown
 * section of bench/RESULTS.md. Pure functions of the results; node.ts measures and writes.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { median, percentile } from '../lib/timing.ts';
import type { Via } from '../tunnel/peer.ts';
import { type Attempt, mbps, PUNCH_WAIT_MS, type Sample, VIAS } from './cases.ts';
import type { Path } from './peer.ts';

export interface PunchReport extends RunInfo {
  readonly node: { readonly version: string };
  readonly attempts: readonly Attempt[];
  readonly runs: number;
  /** Bytes of each exchange, on either connection. */
  readonly bytes: number;
  readonly samples: readonly Sample[];
}

/** The goal: hole punching between the two cone NATs succeeds in at least this share of attempts. */
export const PUNCH_SUCCESS_GOAL = 0.95;

const percent = (share: number): string => `${(share * 100).toFixed(share === 1 || share === 0 ? 0 : 1)}%`;
const rate = (value: number): string => `${value.toFixed(value < 10 ? 2 : 0)} MB/s`;

/** The median MB/s of one path and way of sending, or null when not measured. */
export function medianRate(samples: readonly Sample[], path: Path, via: Via): number | null {
  const mine = samples.filter((s) => s.path === path && s.via === via).map(mbps);
  return mine.length === 0 ? null : median(mine);
}

export function evaluatePunchGoals(report: PunchReport): Goal[] {
  const title = `Hole punching between the two cone NATs succeeds in at least ${percent(PUNCH_SUCCESS_GOAL)} of attempts`;
  const { attempts } = report;
  if (attempts.length === 0) return [unmeasured(title)];
  const ok = attempts.filter((a) => a.ok);
  const times = ok.map((a) => a.ms);
  const timing = times.length > 0 ? `; to direct: median ${median(times).toFixed(0)} ms, p90 ${percentile(times, 90).toFixed(0)} ms` : '';
  return [
    {
      title,
      met: ok.length / attempts.length >= PUNCH_SUCCESS_GOAL,
      detail: `${ok.length} of ${attempts.length} (${percent(ok.length / attempts.length)})${timing}`,
    },
  ];
}

const PATHS: Record<Path, string> = {
  direct: '**direct** A–B (WebRTC through two cone NATs)',
  relayed: '**relayed** A–C (circuit relay; C behind the symmetric NAT)',
};
const LABELS: Record<Via, string> = { libp2p: '· bare libp2p stream', port: '▸ raw stream of the network port' };

export function renderPunchSection(report: PunchReport, goals: readonly Goal[]): string {
  const rows: string[][] = [];
  for (const path of ['direct', 'relayed'] as const) {
    const bare = medianRate(report.samples, path, 'libp2p');
    for (const via of VIAS) {
      const value = medianRate(report.samples, path, via);
      if (value === null) continue;
      const all = report.samples.filter((s) => s.path === path && s.via === via).map(mbps);
      rows.push([
        via === VIAS[0] ? PATHS[path] : '',
        LABELS[via],
        rate(value),
        `${rate(Math.min(...all))} – ${rate(Math.max(...all))}`,
        bare === null ? '–' : via === 'libp2p' ? '1 (ref)' : (value / bare).toFixed(2),
      ]);
    }
  }
  const failures = report.attempts.filter((a) => !a.ok);
  const reasons = [...new Set(failures.map((a) => a.reason ?? 'unknown'))];
  const retries = report.attempts.reduce((sum, a) => sum + a.relayRetries, 0);
  const direct = medianRate(report.samples, 'direct', 'port');
  const relayed = medianRate(report.samples, 'relayed', 'port');
  return [
    '## Hole punching',
    '',
    measuredLine(report, `Node ${report.node.version}`, 'attempts'),
    '',
    `In the NAT lab (test/nat-lab.ts: network namespaces in 198.18.0.0/15, Linux masquerading routers), a relay with a STUN responder on the public segment, ` +
      `A and B behind the two cone NATs, C behind the symmetric one; each a process running the node's libp2p (bench/punch/peer.ts: host-node/p2p.ts without the chain) with a reservation on the relay and the relay's STUN. ` +
      `Each of ${report.attempts.length} attempts: A hangs up on B, dials B through the relay, and the network upgrades the relayed connection over WebRTC (SDP and ICE candidates through the relay, ICE with STUN); ` +
      `an attempt succeeds when A lists B as direct within ${PUNCH_WAIT_MS / 1000} s, timed from the dial. Each attempt opens new ICE sockets, so new NAT mappings; conntrack entries of earlier attempts stay until they expire.` +
      (reasons.length > 0 ? ` Failures said: ${reasons.map((r) => `“${r}”`).join('; ')}.` : '') +
      ` A dial through the relay that fails, or whose connection is dropped before the upgrade starts, is made again and not counted against the punch: ${retries} such retries in this run (libp2p takes at most 5 new connections a second from one address, and a peer sees every circuit come from the relay's).`,
    '',
    `Throughput: A sends the same bytes through a bare libp2p stream and through a raw stream of the network port (the tunnel's and the messaging lanes' path) on the same connection, ${report.runs} rounds after a warm-up; ` +
      `the receiver counts to the FIN and answers the count. Each exchange carries ${report.bytes / (1024 * 1024)} MiB; on the relayed connection each has a fresh circuit (a relay lets one carry 16 MiB, docs/network.md "Relay limits"; bulk traffic of the mesh waits for a direct connection instead). ` +
      `**ratio** is the median over the bare libp2p stream's on the same path.` +
      (direct !== null && relayed !== null ? ` Direct over relayed, through the network port: ${(direct / relayed).toFixed(1)}×.` : ''),
    '',
    '### Goals',
    '',
    goalList(goals),
    '',
    markdownTable(['path', 'case', 'median', 'min – max', 'ratio'], rows, [false, false, true, true, true]),
  ].join('\n');
}

export const PUNCH_REPORT: ReportKind<PunchReport> = { name: 'punch', evaluate: evaluatePunchGoals, render: renderPunchSection };
