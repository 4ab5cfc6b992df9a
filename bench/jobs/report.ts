/**
 * The jobs benchmark's report: its three goals judged on a run's figures, and the Markdown section
 * of bench/RESULTS.md. Pure functions of the results; node.ts measures and writes.
 */
import { formatCredits } from '../../core/encoding/amount.ts';
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { median } from '../lib/timing.ts';
import { BUSY_SHARE } from '../mesh/report.ts';
import { BATCH_POLL_MS, type BareBatch, balancesExact, blocksToSettle, type JobBatch, type JobSample, type SequentialRuns } from './cases.ts';

export interface JobsReport extends RunInfo {
  readonly node: { readonly version: string };
  /** The engine as the executor reads it: `podman 4.3.1`, runtime `runc`. */
  readonly engine: { readonly engine: string; readonly runtime: string; readonly sandboxed: boolean };
  readonly blockIntervalMs: number;
  /** What every job and bare container ran, and each bid. */
  readonly job: {
    readonly image: string;
    readonly cmd: readonly string[];
    readonly cpuCores: number;
    readonly memMb: number;
    readonly bid: string;
    readonly durationSecs: number;
  };
  readonly pollMs: number;
  /** The share of the machine other processes kept busy in a quiet moment before the runs. */
  readonly othersShare: number | null;
  readonly sequential: SequentialRuns | null;
  readonly batch: { readonly bare: BareBatch; readonly jobs: JobBatch } | null;
}

/** The exit-to-settlement goal: the JobSettle in at most this many blocks from the exit. */
export const SETTLE_BLOCKS_GOAL = 2;
/** The bid-to-running goal's slack over the bare container, beyond one block interval. */
export const RUNNING_SLACK_MS = 1_000;

const msText = (ms: number): string => `${ms.toFixed(ms < 10 ? 2 : ms < 100 ? 1 : 0)} ms`;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const times = (x: number): string => `${x.toFixed(2)}×`;
const signed = (ms: number): string => `${ms >= 0 ? '+' : '−'}${msText(Math.abs(ms))}`;
const known = <T>(values: readonly (T | null)[]): T[] => values.filter((v): v is T => v !== null);

/** The medians of part 1. */
export interface RunningFigures {
  readonly bareMs: number;
  readonly jobMs: number;
  readonly differenceMs: number;
  readonly ratio: number;
  readonly bareEngineMs: number | null;
  readonly jobEngineMs: number | null;
}

export function runningFigures(runs: SequentialRuns): RunningFigures {
  const bareMs = median(runs.bare.map((b) => b.startMs));
  const jobMs = median(runs.jobs.map((j) => j.hostRunningMs));
  const bareEngine = known(runs.bare.map((b) => b.engineStartedMs));
  const jobEngine = known(runs.jobs.map((j) => j.engineStartedMs));
  return {
    bareMs,
    jobMs,
    differenceMs: jobMs - bareMs,
    ratio: jobMs / bareMs,
    bareEngineMs: bareEngine.length > 0 ? median(bareEngine) : null,
    jobEngineMs: jobEngine.length > 0 ? median(jobEngine) : null,
  };
}

/** Part 2 of one job: exit to each later event, in ms. */
function sinceExit(j: JobSample): { host: number; payer: number; pooled: number | null; block: number } | null {
  if (j.exitMs === null) return null;
  const e = j.exitMs;
  return { host: j.hostEndedMs - e, payer: j.payerEndedMs - e, pooled: j.settlePooledMs === null ? null : j.settlePooledMs - e, block: j.settledBlockMs - e };
}

export interface SettleFigures {
  /** Jobs whose exit time was read (the others are left out of part 2). */
  readonly measured: number;
  readonly blocks: readonly number[];
  readonly medianBlocks: number;
  readonly worstBlocks: number;
  readonly medianMs: number;
}

export function settleFigures(runs: SequentialRuns): SettleFigures | null {
  const blocks = known(runs.jobs.map(blocksToSettle));
  const ms = known(runs.jobs.map(sinceExit)).map((s) => s.block);
  if (blocks.length === 0 || ms.length === 0) return null;
  return { measured: blocks.length, blocks, medianBlocks: median(blocks), worstBlocks: Math.max(...blocks), medianMs: median(ms) };
}

const credits = (units: string): string => formatCredits(BigInt(units));
const percent = (share: number | null): string => (share === null ? '–' : `${Math.round(share * 100)}%`);

/** Shell words as a person would type them: `sh -c 'echo x; sleep 1'`. */
export function shellWords(words: readonly string[]): string {
  return words.map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", "'\\''")}'`)).join(' ');
}

/** The sentence on other work on the machine, from the quiet moments before the runs and the batch. */
function othersLine(report: JobsReport): string {
  const shares = [report.othersShare, report.batch?.jobs.othersShareBefore ?? null];
  const busy = shares.some((s) => s !== null && s >= BUSY_SHARE);
  return (
    `Other processes on the machine kept ${percent(report.othersShare)} of its ${report.machine.cores} cores busy while the ` +
    `benchmark waited before the runs${report.batch === null ? '' : ` and ${percent(report.batch.jobs.othersShareBefore)} before the batch`}` +
    (busy ? ': the machine was shared, and every figure here reads slower than on a quiet one.' : '.')
  );
}

/** Judges the three goals on a run's figures. */
export function evaluateJobsGoals(report: JobsReport): Goal[] {
  const goals: Goal[] = [];
  const interval = report.blockIntervalMs;
  const runs = report.sequential;
  {
    const title =
      `Bid → running: the median time from POST /jobs/bid on the payer to the container running on the host within ` +
      `one block interval + ${RUNNING_SLACK_MS / 1000} s (${interval + RUNNING_SLACK_MS} ms on the devnet of ${interval} ms blocks) ` +
      "of a bare container's create + start through the same engine";
    if (runs === null || runs.jobs.length === 0 || runs.bare.length === 0) {
      goals.push(unmeasured(title));
    } else {
      const f = runningFigures(runs);
      const engine =
        f.jobEngineMs === null || f.bareEngineMs === null ? '' : `; to the engine's StartedAt ${msText(f.jobEngineMs)} vs ${msText(f.bareEngineMs)}`;
      goals.push({
        title,
        met: f.differenceMs <= interval + RUNNING_SLACK_MS,
        detail: `bid → running on the host ${msText(f.jobMs)} vs bare ${msText(f.bareMs)}: ${signed(f.differenceMs)}, ${times(f.ratio)}${engine} (medians of ${runs.jobs.length} runs)`,
      });
    }
  }
  {
    const title = `Exit → settled: the JobSettle in at most ${SETTLE_BLOCKS_GOAL} blocks from the container's exit (the first block made after the exit counts 1), median over the runs`;
    const f = runs === null ? null : settleFigures(runs);
    if (runs === null || f === null) {
      goals.push(unmeasured(title));
    } else {
      const over = f.blocks.filter((b) => b > SETTLE_BLOCKS_GOAL).length;
      goals.push({
        title,
        met: f.medianBlocks <= SETTLE_BLOCKS_GOAL,
        detail:
          `median ${f.medianBlocks} block${f.medianBlocks === 1 ? '' : 's'}, worst ${f.worstBlocks} (${over} of ${f.measured} runs over ${SETTLE_BLOCKS_GOAL}); ` +
          `exit → the JobSettle's block median ${msText(f.medianMs)}, ${times(f.medianMs / interval)} the block interval`,
      });
    }
  }
  {
    const count = report.batch?.jobs.count;
    const title =
      `${count ?? 'N'} jobs at once on one host all settle with exact balances (the host's balance grows by Σ (cost − burn), ` +
      "the payer's by the blocks' rewards − Σ cost, the burned total by Σ burn, and the payer's locked bids return to 0)";
    const batch = report.batch;
    if (batch === null) {
      goals.push(unmeasured(title));
    } else {
      const { jobs, bare } = batch;
      const b = jobs.balances;
      const cpu = jobs.hostCpuMs === null ? '' : `; the host's CPU ${msText(jobs.hostCpuMs / jobs.count)} per job`;
      goals.push({
        title,
        met: balancesExact(b),
        detail:
          `all ${jobs.count} settled ${seconds(jobs.allSettledMs)} after the first bid (${jobs.count} bare containers at once: all exited in ` +
          `${seconds(bare.allExitedMs)}, ${times(jobs.allSettledMs / bare.allExitedMs)})${cpu}; host ${signedCredits(b.hostDelta)} credits ` +
          `against Σ (cost − burn) ${credits(b.hostExpected)}, payer ${signedCredits(b.payerDelta)} against ${signedCredits(b.payerExpected)}, ` +
          `burned ${signedCredits(b.burnedDelta)} against ${credits(b.burnedExpected)}, locked bids ${credits(b.lockedBids)}`,
      });
    }
  }
  return goals;
}

function signedCredits(units: string): string {
  const v = BigInt(units);
  return v < 0n ? `−${formatCredits(-v)}` : `+${formatCredits(v)}`;
}

function summary(values: readonly number[]): [string, string, string] {
  return [msText(median(values)), msText(Math.min(...values)), msText(Math.max(...values))];
}

function runningSection(report: JobsReport, runs: SequentialRuns): string {
  const f = runningFigures(runs);
  const n = runs.jobs.length;
  const intro =
    `${n} jobs and ${runs.bare.length} bare containers, one at a time in alternating order, each after a pause of up to ` +
    `a block interval (seeded), after ${runs.warmup} uncounted one${runs.warmup === 1 ? '' : 's'} of each. ` +
    `**bare**: dockerode's createContainer with the executor's own create options (the sandbox every job gets: no network, ` +
    `the CPU and memory limits, a read-only root, nobody:nogroup) and start, timed from the create request to start() ` +
    `returning (the image is present, as it is for the jobs). **job**: POST /jobs/bid on the payer, timed from the ` +
    `request to the first of the benchmark's polls of the host's GET /jobs/:id (every ${report.pollMs} ms, each timed ` +
    `when sent) that shows it running; the host sets it running when the engine's start() returns, so the two figures ` +
    `end at the same point. The payer bids, offers the job to the host over libp2p, the host checks the bid, stores ` +
    `the job and runs the container: no block is awaited. The engine's StartedAt of each container is read too ` +
    `(inspect), and timed from the same start. **ratio** = median ÷ the bare median of the same end point.`;
  const bareStart = summary(runs.bare.map((b) => b.startMs));
  const bareEngine = known(runs.bare.map((b) => b.engineStartedMs));
  const jobEngine = known(runs.jobs.map((j) => j.engineStartedMs));
  const rows: string[][] = [['**bare**: create + start returned', ...bareStart, '1 (ref)']];
  if (bareEngine.length > 0) rows.push(["  bare: create sent → the engine's StartedAt", ...summary(bareEngine), '1 (ref)']);
  rows.push([
    'job: POST /jobs/bid answered (JobBid signed and pooled)',
    ...summary(runs.jobs.map((j) => j.postMs)),
    (median(runs.jobs.map((j) => j.postMs)) / f.bareMs).toFixed(2),
  ]);
  rows.push(['**job: bid → running on the host**', ...summary(runs.jobs.map((j) => j.hostRunningMs)), f.ratio.toFixed(2)]);
  if (jobEngine.length > 0 && f.bareEngineMs !== null) {
    rows.push(["  job: bid → the engine's StartedAt", ...summary(jobEngine), (median(jobEngine) / f.bareEngineMs).toFixed(2)]);
  }
  rows.push([
    "job: bid → running on the payer (the host's report)",
    ...summary(runs.jobs.map((j) => j.payerRunningMs)),
    (median(runs.jobs.map((j) => j.payerRunningMs)) / f.bareMs).toFixed(2),
  ]);
  const table = markdownTable(['measurement', 'median', 'min', 'max', 'ratio'], rows, [false, true, true, true, true]);
  const overhead =
    `The market's own part, bid to running less the bare start: ${signed(f.differenceMs)} (median against median), ` +
    `against the goal's allowance of ${msText(report.blockIntervalMs + RUNNING_SLACK_MS)}.`;
  return `### Bid to running\n\n${intro}\n\n${table}\n\n${overhead}`;
}

function settleSection(report: JobsReport, runs: SequentialRuns): string {
  const interval = report.blockIntervalMs;
  const parts = known(runs.jobs.map(sinceExit));
  const f = settleFigures(runs);
  const intro =
    "The same jobs. The exit is the engine's FinishedAt of the container, read by the benchmark (wait, then inspect, " +
    "as the host does; its wait runs alongside the host's) before the host removes the container; blocks are counted on the payer's `/blocks/stream` (the payer " +
    'makes every block): the first block made after the exit counts 1, and the count ends at the block holding the ' +
    'JobSettle, found by its id in GET /transactions/<host>. Along the way: the host and the payer showing ' +
    `awaiting_settlement (polled every ${report.pollMs} ms), and the JobSettle reaching the payer's ` +
    '`/transactions/stream` (in its pool, gossiped by the host once the payer co-signed). The bare row is the ' +
    "engine's own delay in telling of an exit: FinishedAt to wait() returning for the bare containers, whose wait is " +
    "the only call asking the engine about them (a job's container also has the host's wait and its log stream " +
    'open). ' +
    `**ratio** = median ÷ the block interval (${interval} ms).`;
  const rows: string[][] = [];
  const notice = known(runs.bare.map((b) => b.exitNoticeMs));
  if (notice.length > 0) rows.push(["bare: exit → the engine's wait() returns", ...summary(notice), (median(notice) / interval).toFixed(2)]);
  const row = (label: string, values: number[]): void => {
    if (values.length > 0) rows.push([label, ...summary(values), (median(values) / interval).toFixed(2)]);
  };
  row(
    'job: exit → awaiting_settlement on the host',
    parts.map((p) => p.host),
  );
  row(
    'job: exit → awaiting_settlement on the payer',
    parts.map((p) => p.payer),
  );
  row("job: exit → the JobSettle on the payer's stream", known(parts.map((p) => p.pooled)));
  row(
    '**job: exit → the block holding the JobSettle**',
    parts.map((p) => p.block),
  );
  const table = markdownTable(['measurement', 'median', 'min', 'max', 'ratio'], rows, [false, true, true, true, true]);
  const counts = new Map<number, number>();
  for (const b of f?.blocks ?? []) counts.set(b, (counts.get(b) ?? 0) + 1);
  const spread = [...counts.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([b, c]) => `${b} block${b === 1 ? '' : 's'}: ${c} run${c === 1 ? '' : 's'}`)
    .join(', ');
  const gap =
    runs.blockGapMs === null
      ? ''
      : ` The payer's blocks came ${msText(runs.blockGapMs)} apart (median) during the runs, against the interval of ` +
        `${msText(interval)}: the payer has no bond, so it signs as an unranked producer, at its parent's time + the ` +
        'interval + a stagger of up to one more interval (docs/ledger.md "Block production"), 1.5 intervals apart on average.';
  const missing = runs.jobs.length - parts.length;
  const missingLine =
    missing === 0 ? '' : ` ${missing} of ${runs.jobs.length} jobs are left out: the host removed the container before its FinishedAt was read.`;
  return `### Exit to settlement\n\n${intro}\n\n${table}\n\nBlocks from the exit to the JobSettle's block: ${spread}.${gap}${missingLine}`;
}

function blockRange(heights: readonly number[]): string {
  const low = Math.min(...heights);
  const high = Math.max(...heights);
  return low === high ? `block ${low}` : `blocks ${low}–${high}`;
}

function batchSection(report: JobsReport, batch: NonNullable<JobsReport['batch']>): string {
  const { bare, jobs } = batch;
  const n = jobs.count;
  const intro =
    `${n} POST /jobs/bid on the payer at once (the host offers ${n} cores), followed on the payer's GET /jobs every ` +
    `${BATCH_POLL_MS} ms (the host is not asked: its CPU time is measured) until every job is settled; next to ${n} ` +
    'bare containers created and started at once through the same engine and awaited together. CPU time is user + ' +
    'system from /proc for the host and payer processes and the Podman service process (not conmon, runc or the ' +
    "containers themselves), and from the kernel's counters for the whole machine less the benchmark's own process. " +
    "The Podman service serves every test process on the machine (test/podman.ts): its figure, and the machine's, " +
    'count the work of others that ran alongside. ' +
    "The host's idle rate was measured over the seconds just before the bids.";
  const wallRows = [
    [`**${n} bare containers at once**: all started`, seconds(bare.allStartedMs), ''],
    ['  all exited (wait() returned)', seconds(bare.allExitedMs), '1 (ref)'],
    [`**${n} jobs at once**: first bid → all running (the payer's view)`, seconds(jobs.allRunningMs), (jobs.allRunningMs / bare.allExitedMs).toFixed(2)],
    ['  first bid → all settled', seconds(jobs.allSettledMs), (jobs.allSettledMs / bare.allExitedMs).toFixed(2)],
  ];
  const wall = markdownTable(['measurement', 'wall time', 'ratio'], wallRows, [false, true, true]);
  const per = (ms: number | null): string => (ms === null ? '–' : msText(ms / n));
  const total = (ms: number | null): string => (ms === null ? '–' : msText(ms));
  const idle = jobs.hostIdleCpuPerSec === null ? null : (jobs.hostIdleCpuPerSec * jobs.allSettledMs) / 1000;
  const cpuRows = [
    ['the host node, during the jobs', total(jobs.hostCpuMs), per(jobs.hostCpuMs), ''],
    ['  of which its idle rate would take', total(idle), per(idle), jobs.hostIdleCpuPerSec === null ? '' : `${msText(jobs.hostIdleCpuPerSec)} per second idle`],
    ['the payer node, during the jobs', total(jobs.payerCpuMs), per(jobs.payerCpuMs), 'mining, bidding, co-signing'],
    ['the Podman service, during the jobs', total(jobs.engineCpuMs), per(jobs.engineCpuMs), ''],
    ['the Podman service, during the bare containers', total(bare.engineCpuMs), per(bare.engineCpuMs), ''],
    [
      'the machine, during the jobs',
      total(jobs.machineCpuMs),
      per(jobs.machineCpuMs),
      `both nodes, the engine, conmon, runc, the containers; ${seconds(jobs.allSettledMs)}`,
    ],
    [
      'the machine, during the bare containers',
      total(bare.machineCpuMs),
      per(bare.machineCpuMs),
      `the engine, conmon, runc, the containers; ${seconds(bare.allExitedMs)}`,
    ],
  ];
  const cpu = markdownTable(['CPU time', 'total', `per job or container`, 'note'], cpuRows, [false, true, true, false]);
  const b = jobs.balances;
  const mark = (ok: boolean): string => (ok ? 'exact' : '**differs**');
  const balanceRows = [
    ["the host's balance", signedCredits(b.hostDelta), `Σ (cost − burn) = ${credits(b.hostExpected)}`, mark(b.hostDelta === b.hostExpected)],
    [
      "the payer's balance",
      signedCredits(b.payerDelta),
      `rewards of the blocks − Σ cost = ${signedCredits(b.payerExpected)}`,
      mark(b.payerDelta === b.payerExpected),
    ],
    [
      'burned in all',
      signedCredits(b.burnedDelta),
      `Σ burn (1 % of each cost, rounded down) = ${credits(b.burnedExpected)}`,
      mark(b.burnedDelta === b.burnedExpected),
    ],
    ["the payer's locked_bids after", credits(b.lockedBids), '0', mark(b.lockedBids === '0')],
  ];
  const balances = markdownTable(['credits', 'change', 'expected', ''], balanceRows, [false, true, true, false]);
  const costs = b.costs.map((c) => BigInt(c));
  const low = costs.reduce((a, c) => (c < a ? c : a), costs[0] ?? 0n);
  const high = costs.reduce((a, c) => (c > a ? c : a), costs[0] ?? 0n);
  const settleLine =
    `The JobSettles went into ${blockRange(jobs.settleHeights)} (the payer was at height ` +
    `${jobs.heights[0]} when it bid); each job cost ${formatCredits(low)}–${formatCredits(high)} credits of its bid of ` +
    `${formatCredits(BigInt(report.job.bid))} (the bid in proportion to the time it ran, of its ${report.job.durationSecs} s).`;
  return `### ${n} jobs at once\n\n${intro}\n\n${wall}\n\n${cpu}\n\n${balances}\n\n${settleLine}`;
}

/** The body of the jobs section (without markers). */
export function renderJobsSection(report: JobsReport, goals: readonly Goal[] = evaluateJobsGoals(report)): string {
  const parts: string[] = ['## Jobs'];
  parts.push(
    measuredLine(
      report,
      `Node ${report.node.version}, ${report.engine.engine} (runtime ${report.engine.runtime}${report.engine.sandboxed ? ', sandboxed' : ''})`,
      'runs',
    ),
  );
  const job = report.job;
  parts.push(
    `Two \`mesh node --devnet\` processes on loopback, block interval ${report.blockIntervalMs} ms: a payer that mines every ` +
      `block and a host (\`--allow-image localhost/busybox\`) bootstrapped from it, running jobs on the Podman Docker-API ` +
      `service of the container tests. Every job and every bare container runs \`${job.image}\` with ` +
      `\`${shellWords(job.cmd)}\` (a line of output, then a second's sleep) on ${job.cpuCores} core${job.cpuCores === 1 ? '' : 's'} and ${job.memMb} MiB; ` +
      `each bid is ${formatCredits(BigInt(job.bid))} credits for at most ${job.durationSecs} s, settled by the host with the ` +
      "payer's co-signature." +
      (report.engine.sandboxed ? '' : ` The engine has no gVisor here: jobs run under ${report.engine.runtime}, with the rest of the executor's sandbox.`),
  );
  parts.push(othersLine(report));
  parts.push('### Goals');
  parts.push(goalList(goals));
  const runs = report.sequential;
  if (runs !== null && runs.jobs.length > 0 && runs.bare.length > 0) {
    parts.push(runningSection(report, runs));
    parts.push(settleSection(report, runs));
  }
  if (report.batch !== null) parts.push(batchSection(report, report.batch));
  return parts.join('\n\n');
}

export const JOBS_REPORT: ReportKind<JobsReport> = { name: 'jobs', evaluate: evaluateJobsGoals, render: renderJobsSection };
