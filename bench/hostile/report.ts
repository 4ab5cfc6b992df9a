/**
 * The hostile-peer benchmark's report: per run the time to one tip after the attack next to the
 * baseline after an ordinary block, their medians, the goal, and the section of bench/RESULTS.md.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { GOAL_MS, type HostileRun, median } from './cases.ts';

export interface HostileReport extends RunInfo {
  readonly node: { readonly version: string };
  readonly blockIntervalMs: number;
  readonly runs: readonly HostileRun[];
}

const seconds = (ms: number | null): string => (ms === null || !Number.isFinite(ms) ? 'no tip' : `${(ms / 1000).toFixed(2)} s`);

/** The median time to one tip after the attack, a run that found none counting as longer than any. */
export function medianAfterAttack(runs: readonly HostileRun[]): number {
  return median(runs.map((r) => r.afterAttackMs ?? Number.POSITIVE_INFINITY));
}

const medianBaseline = (runs: readonly HostileRun[]): number => median(runs.map((r) => r.baselineMs));

export function evaluateHostileGoals(report: HostileReport): Goal[] {
  const title = 'After the hostile-peer sequence ends, the mesh agrees on one tip within 30 s (median of 5 runs)';
  const { runs } = report;
  if (runs.length < 5) return [unmeasured(title, `${runs.length} run${runs.length === 1 ? '' : 's'} only`)];
  const after = medianAfterAttack(runs);
  return [{ title, met: after <= GOAL_MS, detail: `median ${seconds(after)}, baseline ${seconds(medianBaseline(runs))}` }];
}

export function renderHostileSection(report: HostileReport, goals: readonly Goal[] = evaluateHostileGoals(report)): string {
  const parts = ['## Hostile peer'];
  parts.push(`${measuredLine(report, `Node ${report.node.version}`, 'runs')} The machine was shared with other work while it ran.`);
  parts.push(
    `Three \`mesh node --devnet --mine --block-interval-ms ${report.blockIntervalMs}\` processes on loopback, a fresh devnet ` +
      "each run; a foreign peer built from the project's libp2p runs the sequence of test/hostile-peer.ts against one of them " +
      '(junk on every topic, forged transactions, 1 MiB and 3 MiB gossip frames, oversized and stalled request streams, a ' +
      'fresh identity per phase). **After the attack**: from its end until all three report one tip above every height at ' +
      "the end (so it includes the wait for a next block, up to one interval: the target's blocks must reach the others " +
      'again). **Baseline**: in the same run, before the attack, from a new block first seen on any node until all three ' +
      'are on a tip at least that high (median of 5 blocks).',
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  const rows = report.runs.map((r, i) => [String(i + 1), `${(r.attackMs / 1000).toFixed(1)} s`, seconds(r.afterAttackMs), seconds(r.baselineMs)]);
  rows.push(['**median**', '', `**${seconds(medianAfterAttack(report.runs))}**`, `**${seconds(medianBaseline(report.runs))}**`]);
  parts.push(markdownTable(['run', 'attack', 'after the attack', 'baseline'], rows, [true, true, true, true]));
  return parts.join('\n\n');
}

export const HOSTILE_REPORT: ReportKind<HostileReport> = { name: 'hostile', evaluate: evaluateHostileGoals, render: renderHostileSection };
