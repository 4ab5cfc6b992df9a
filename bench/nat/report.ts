/**
 * The NAT benchmark's report: the share of node pairs in the lab that reached each other by
 * NodeId within 10 s of joining, and the first message to a node never met next to the second;
 * with the goals of issue 31 and the Markdown section of bench/RESULTS.md.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { median, percentile } from '../lib/timing.ts';
import type { FirstMessageRound, ReachRound } from './cases.ts';

export const REACH_GOAL_MS = 10_000;
export const FIRST_MESSAGE_GOAL_MS = 1_000;

export interface NatReport extends RunInfo {
  readonly node: { readonly version: string };
  /** The lab: its routers' NAT kinds and hosts behind each. */
  readonly nats: readonly { readonly kind: string; readonly hosts: number }[];
  readonly iptables: string;
  readonly reach: readonly ReachRound[];
  readonly firstMessages: readonly FirstMessageRound[];
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

/** Every ordered pair's time to reach, null for those that never did. */
export function reachTimes(report: NatReport): (number | null)[] {
  return report.reach.flatMap((r) => r.pairs.map((p) => p.ms));
}

export function evaluateNatGoals(report: NatReport): Goal[] {
  const reachTitle = `100 % of node pairs in the lab reach each other by NodeId within ${REACH_GOAL_MS / 1000} s of joining`;
  const firstTitle = `First message to a node never met before (lookup, dial, deliver): median ≤ ${FIRST_MESSAGE_GOAL_MS / 1000} s in the lab`;
  const goals: Goal[] = [];
  const times = reachTimes(report);
  if (times.length === 0) goals.push(unmeasured(reachTitle));
  else {
    const within = times.filter((t) => t !== null && t <= REACH_GOAL_MS).length;
    const reached = times.filter((t): t is number => t !== null);
    goals.push({
      title: reachTitle,
      met: within === times.length,
      detail:
        `${within} of ${times.length} ordered pairs (${((100 * within) / times.length).toFixed(1)} %) within ${REACH_GOAL_MS / 1000} s` +
        (reached.length > 0 ? `; median ${seconds(median(reached))}, slowest ${seconds(Math.max(...reached))}` : '') +
        (reached.length < times.length ? `; ${times.length - reached.length} never within ${seconds(30_000)}` : ''),
    });
  }
  const first = report.firstMessages.flatMap((r) => r.firstMs);
  const second = report.firstMessages.flatMap((r) => r.secondMs);
  if (first.length === 0) goals.push(unmeasured(firstTitle));
  else {
    goals.push({
      title: firstTitle,
      met: median(first) <= FIRST_MESSAGE_GOAL_MS,
      detail: `median ${seconds(median(first))} over ${first.length} pairs (p90 ${seconds(percentile(first, 90))}), next to ${seconds(median(second))} for the second message on the same way`,
    });
  }
  return goals;
}

export function renderNatSection(report: NatReport, goals: readonly Goal[] = evaluateNatGoals(report)): string {
  const parts = ['## Through NATs: reaching nodes by NodeId'];
  parts.push(measuredLine(report, `Node ${report.node.version}`, 'rounds'));
  parts.push(
    'Real `mesh node --devnet` processes in the NAT lab (`test/nat-lab.ts`: network namespaces, veth pairs and ' +
      `${report.iptables} on one machine, addresses from 198.18.0.0/15): a relay on the public segment and, behind ` +
      `${report.nats.map((n) => `a ${n.kind} NAT, ${n.hosts} host${n.hosts === 1 ? '' : 's'}`).join('; ')}. ` +
      'The NATed nodes are first reached through their relay reservations; the WebRTC upgrade that may follow runs ' +
      'in the background and is not waited for (`mesh bench punch` measures it). **Reach**: the NATed nodes ' +
      'start at once, bootstrapped to the relay; every ordered pair of them and the relay sends `POST /mesh/send` ' +
      'every 200 ms until one is delivered, timed from the later of the two joins (the node printed its addresses). ' +
      '**First message**: fresh NATed nodes, once each holds a reservation, send one message per pair that never met ' +
      '(the request finds no address, dials through the relay, delivers), timed over HTTP; the **baseline** is the ' +
      'second message of the same pair on the connection the first opened.',
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  const times = reachTimes(report);
  const reached = times.filter((t): t is number => t !== null);
  const first = report.firstMessages.flatMap((r) => r.firstMs);
  const second = report.firstMessages.flatMap((r) => r.secondMs);
  const rows: string[][] = [];
  if (reached.length > 0) {
    rows.push([
      'reach by NodeId after joining',
      String(times.length),
      seconds(median(reached)),
      seconds(percentile(reached, 90)),
      seconds(Math.max(...reached)),
    ]);
  }
  if (first.length > 0) {
    rows.push([
      '**first message, never met**',
      String(first.length),
      `**${seconds(median(first))}**`,
      seconds(percentile(first, 90)),
      seconds(Math.max(...first)),
    ]);
    rows.push(['· baseline: second message', String(second.length), seconds(median(second)), seconds(percentile(second, 90)), seconds(Math.max(...second))]);
  }
  if (rows.length > 0) parts.push(markdownTable(['what', 'samples', 'median', 'p90', 'slowest'], rows, [false, true, true, true, true]));
  parts.push(`${report.reach.length} reach round(s), ${report.firstMessages.length} first-message round(s).`);
  return parts.join('\n\n');
}

export const NAT_REPORT: ReportKind<NatReport> = { name: 'nat', evaluate: evaluateNatGoals, render: renderNatSection };
