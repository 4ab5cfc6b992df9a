/**
 * The sync benchmark's report: its goals judged on a run's figures and the Markdown section of
 * bench/RESULTS.md. Pure functions of the results; node.ts writes the files.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import type { FloodRun, SyncRun } from './cases.ts';
import type { ForkInfo } from './chains.ts';

export interface SyncReport extends RunInfo {
  readonly node: { readonly version: string };
  readonly chains: ForkInfo;
  /** Heal and catch-up runs, in pairs: `heal[i]` and `catchUp[i]` were taken back to back. */
  readonly heal: readonly SyncRun[];
  readonly catchUp: readonly SyncRun[];
  readonly flood: FloodRun | null;
}

/** A heal takes at most this many times the catch-up of the same blocks from scratch. */
export const HEAL_GOAL = 1.2;
/** Under the flood, blocks a second stay at least this share of the rate without it. */
export const FLOOD_GOAL = 0.9;

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
// Each heal's time over that of the catch-up taken next to it.
const pairRatios = (report: SyncReport): number[] => report.heal.slice(0, report.catchUp.length).map((h, i) => h.syncMs / report.catchUp[i]!.syncMs);
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** What a flooder may get in a window: a second's budget to start (the bucket starts full), then the rate, and one answer in flight. */
export function floodAllowance(perSecond: number, windowMs: number, answerBytes: number): number {
  return perSecond * (1 + windowMs / 1000) + answerBytes;
}

export function evaluateSyncGoals(report: SyncReport): Goal[] {
  const healTitle = `A partition of ${report.chains.longer.toLocaleString('en-US')} blocks heals within ${HEAL_GOAL}× the catch-up time of the same blocks from scratch`;
  const floodTitle = `Under a sync-request flood from 4 identities, block production stays at ≥ ${FLOOD_GOAL * 100} % of its rate without the flood, and the bytes the node sends to the flooders stay within their serve budgets`;
  const goals: Goal[] = [];
  if (report.heal.length === 0 || report.catchUp.length === 0) goals.push(unmeasured(healTitle));
  else {
    const heal = median(report.heal.map((r) => r.syncMs));
    const catchUp = median(report.catchUp.map((r) => r.syncMs));
    const ratio = median(pairRatios(report));
    goals.push({
      title: healTitle,
      met: ratio <= HEAL_GOAL,
      detail:
        `${ratio.toFixed(2)}×, the median of ${report.heal.length} pairs of a heal and a catch-up taken back to back ` +
        `(medians: heal ${seconds(heal)}, catch-up ${seconds(catchUp)})`,
    });
  }
  const flood = report.flood;
  if (flood === null) goals.push(unmeasured(floodTitle));
  else {
    const share = flood.baselineBlocks === 0 ? 0 : flood.floodBlocks / flood.baselineBlocks;
    const allowance = floodAllowance(flood.budgetPerPeer, flood.windowMs, 2 ** 21);
    const most = Math.max(...flood.flooders.map((f) => f.bytes));
    const all = flood.flooders.reduce((sum, f) => sum + f.bytes, 0);
    const allAllowance = floodAllowance(flood.budgetInAll, flood.windowMs, 4 * 2 ** 21);
    goals.push({
      title: floodTitle,
      met: share >= FLOOD_GOAL && most <= allowance && all <= allAllowance,
      detail:
        `${flood.floodBlocks} blocks in ${seconds(flood.windowMs)} under the flood against ${flood.baselineBlocks} without: ${(share * 100).toFixed(0)} %; ` +
        `the most any flooder got ${mib(most)} of an allowance of ${mib(allowance)} (${mib(flood.budgetPerPeer)}/s), all four ${mib(all)} of ${mib(allAllowance)}`,
    });
  }
  return goals;
}

export function renderSyncSection(report: SyncReport, goals: readonly Goal[] = evaluateSyncGoals(report)): string {
  const c = report.chains;
  const parts: string[] = ['## Sync across forks and under a flood'];
  parts.push(measuredLine(report, `Node ${report.node.version}`, 'runs'));
  parts.push(
    'Real `mesh node --devnet` processes on loopback (LevelDB, libp2p over TCP), started and read by the benchmark, on the same ' +
      'machine as the benchmark itself — a 2-core machine shared with other work, so the figures move from run to run.',
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  parts.push('### Partition heal');
  parts.push(
    `Two chains share ${c.shared} blocks, then one producer mined ${c.longer.toLocaleString('en-US')} more and another ` +
      `${c.shorter.toLocaleString('en-US')} more, each block with up to ${c.transfersPerBlock} transfers (the longer chain: ` +
      `${mib(c.longerBytes)} of encoded blocks). **heal**: a node on the shorter half started with \`--bootstrap\` to a node on the ` +
      'longer half (not mining), until its `/beacon` shows the longer tip: it finds the fork point, fetches the longer branch, ' +
      'rewinds its own and applies the other. **catch-up**: a fresh node bootstrapped to the same peer, until the same tip: the ' +
      "same blocks fetched and applied, from scratch. Both timed from the node's start output; runs taken in pairs, one of " +
      'each back to back, each pair in the other order from the one before, so that the other work on the machine weighs on ' +
      "both runs of a pair alike: the goal is judged on the median of the pairs' ratios.",
  );
  const cpuText = (r: SyncRun | undefined): string => (r === undefined || r.cpuMs === null ? '' : seconds(r.cpuMs));
  const ratios = pairRatios(report);
  const rows = report.heal.map((h, i) => {
    const c = report.catchUp[i];
    return [
      String(i + 1),
      seconds(h.syncMs),
      c === undefined ? '' : seconds(c.syncMs),
      ratios[i] === undefined ? '' : `${ratios[i]!.toFixed(2)}×`,
      cpuText(h),
      cpuText(c),
    ];
  });
  parts.push(
    markdownTable(['pair', 'heal', 'catch-up', 'heal / catch-up', 'CPU of the healing node', 'CPU of the catching-up node'], rows, [
      false,
      true,
      true,
      true,
      true,
      true,
    ]),
  );
  const cpu = (runs: readonly SyncRun[]): number | null => (runs.every((r) => r.cpuMs !== null) && runs.length > 0 ? median(runs.map((r) => r.cpuMs!)) : null);
  const healCpu = cpu(report.heal);
  const catchUpCpu = cpu(report.catchUp);
  parts.push(
    'What a heal does beyond a catch-up of the same blocks: the longer branch cannot be adopted before it is higher than the ' +
      "node's own tip (the longest chain wins), so the healing node holds it while it fetches it, and then switches in one " +
      'step: it rewinds its own blocks, applies the new ones and writes both in one batch. While the branch is held, sync reads ' +
      'the blocks it replaces and their undo records, and once those reach back to the fork point it applies ' +
      "each held range to a copy of the state rewound there and stages the switch's batch in the store (docs/chain.md, " +
      '"Finding the fork point"), as a catch-up applies each range while the next is fetched. What is left for the switch: ' +
      "the last range, the copy's net change, the write of the one batch (the removed blocks' entries and the new ones, some " +
      '56 MB) and the events of every block removed and added. On a machine this shared, the time of both moves with the ' +
      'other work, and the CPU each takes says more' +
      (healCpu !== null && catchUpCpu !== null
        ? `: medians of ${seconds(healCpu)} for a heal, ${seconds(catchUpCpu)} for a catch-up (${(healCpu / catchUpCpu).toFixed(2)}×).`
        : '.'),
  );
  const f = report.flood;
  if (f) {
    parts.push('### Sync-request flood');
    parts.push(
      `A node mining on the longer chain (block interval ${f.blockIntervalMs} ms): its blocks in ${seconds(f.windowMs)} alone, then in ` +
        `${seconds(f.windowMs)} while four fresh identities (libp2p peers in the benchmark's process) each keep ${f.concurrency} ` +
        'requests for the first 500 blocks in flight (`sync.blocks`, locator: genesis). The node holds each peer to ' +
        `${mib(f.budgetPerPeer)} a second and all together to ${mib(f.budgetInAll)} (sync ranges and segments together) and ` +
        "answers requests over budget as busy. A flooder may get a second's budget at once (the bucket starts full), then the rate, " +
        'plus one answer in flight. Answers are read one at a time with three waiting, the rest refused as busy, so with four ' +
        'flooders that read lane, not the byte budget, is what bounds them. CPU of the mining node: ' +
        `${f.baselineCpuMs === null ? 'n/a' : seconds(f.baselineCpuMs)} alone, ${f.floodCpuMs === null ? 'n/a' : seconds(f.floodCpuMs)} under the flood.`,
    );
    parts.push(
      markdownTable(
        ['flooder', 'requests', 'answered', 'busy', 'failed', 'bytes received', 'allowance'],
        f.flooders.map((x, i) => [
          String(i + 1),
          String(x.requests),
          String(x.answered),
          String(x.busy),
          String(x.failed),
          mib(x.bytes),
          mib(floodAllowance(f.budgetPerPeer, f.windowMs, 2 ** 21)),
        ]),
        [false, true, true, true, true, true, true],
      ),
    );
  }
  return parts.join('\n\n');
}

export const SYNC_REPORT: ReportKind<SyncReport> = { name: 'sync', evaluate: evaluateSyncGoals, render: renderSyncSection };
