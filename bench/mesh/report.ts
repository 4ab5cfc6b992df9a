/**
 * The node benchmark's report: the two goals judged on a run's figures and the Markdown section of
 * bench/RESULTS.md. Pure functions of the results; node.ts measures and writes.
 */
import { VERIFY_WINDOW, WINDOWS_AHEAD } from '../../core/ledger/validate.ts';
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { median, percentile } from '../lib/timing.ts';
import type { LatencyRun, LocalRun, NetworkRun, ReplayRun, SignatureRun } from './cases.ts';
import type { ChainInfo } from './chain.ts';

export interface MeshReport extends RunInfo {
  readonly node: { readonly version: string };
  /** The chain caught up, and the runs of each measurement, taken in turns (signatures, local, network). */
  readonly catchUp: {
    readonly chain: ChainInfo;
    readonly signatures: readonly SignatureRun[];
    readonly local: readonly LocalRun[];
    readonly network: readonly NetworkRun[];
    /** The chain replayed on the serving node's /blocks/stream, once after each network run (absent in reports before it). */
    readonly replay?: readonly ReplayRun[];
  } | null;
  readonly latency: LatencyRun | null;
}

/** The catch-up goal: the network sync in at most this many times its blocks' signature checks alone. */
export const CATCH_UP_RATIO_GOAL = 1.5;
/** The latency goal: median POST-to-peer's-stream time under this many ms. */
export const LATENCY_GOAL_MS = 100;

/** The medians the goals and tables use. */
export interface CatchUpFigures {
  /** Checking the blocks' signatures alone: the baseline. */
  readonly signaturesMs: number;
  readonly localMs: number;
  readonly readMs: number;
  readonly applyMs: number;
  readonly syncMs: number;
  readonly startupMs: number;
  readonly totalMs: number;
  /** syncMs ÷ signaturesMs: the goal's figure. */
  readonly ratio: number;
  /** totalMs ÷ signaturesMs (the start-up counted as network cost). */
  readonly ratioWithStartup: number;
  /** localMs ÷ signaturesMs. */
  readonly localRatio: number;
  /** The median of the network runs' ratios, each to the signature run taken just before it. */
  readonly pairedRatio: number;
}

export function catchUpFigures(catchUp: NonNullable<MeshReport['catchUp']>): CatchUpFigures {
  const signaturesMs = median(catchUp.signatures.map((r) => r.totalMs));
  const localMs = median(catchUp.local.map((r) => r.totalMs));
  const syncMs = median(catchUp.network.map((r) => r.syncMs));
  const totalMs = median(catchUp.network.map((r) => r.totalMs));
  const paired = catchUp.network.flatMap((r, i) => (catchUp.signatures[i] ? [r.syncMs / catchUp.signatures[i]!.totalMs] : []));
  return {
    signaturesMs,
    localMs,
    readMs: median(catchUp.local.map((r) => r.readMs)),
    applyMs: median(catchUp.local.map((r) => r.applyMs)),
    syncMs,
    startupMs: median(catchUp.network.map((r) => r.startupMs)),
    totalMs,
    ratio: syncMs / signaturesMs,
    ratioWithStartup: totalMs / signaturesMs,
    localRatio: localMs / signaturesMs,
    pairedRatio: paired.length > 0 ? median(paired) : NaN,
  };
}

export interface LatencySummary {
  readonly medianMs: number;
  readonly p90Ms: number;
  readonly maxMs: number;
}

export function summarizeLatency(values: readonly number[]): LatencySummary {
  return { medianMs: median(values), p90Ms: percentile(values, 90), maxMs: percentile(values, 100) };
}

/** A first range applied this much later than the quickest run's is called late in the report. */
const LATE_FIRST_RANGE_MS = 3_000;
/** From this share of the machine's CPU taken by other processes on, a run is flagged as disturbed. */
export const BUSY_SHARE = 0.05;

function share(othersCpuMs: number | null, elapsedMs: number, cores: number): number | null {
  return othersCpuMs === null || elapsedMs <= 0 ? null : othersCpuMs / (elapsedMs * cores);
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
const msText = (ms: number): string => `${ms.toFixed(ms < 10 ? 2 : 1)} ms`;
const rate = (count: number, ms: number): string => Math.round(count / (ms / 1000)).toLocaleString('en-US');
const times = (x: number): string => `${x.toFixed(2)}×`;
const thousands = (n: number): string => n.toLocaleString('en-US');

/** Judges the two goals on a run's figures. */
export function evaluateMeshGoals(report: MeshReport): Goal[] {
  const goals: Goal[] = [];
  const blocks = report.catchUp ? thousands(report.catchUp.chain.blocks) : 'N';
  {
    const title =
      `Catch-up: a fresh node syncing ${blocks} blocks from a peer on loopback in at most ${CATCH_UP_RATIO_GOAL}× ` +
      "the time of checking the same blocks' signatures alone on both cores";
    if (!report.catchUp || report.catchUp.signatures.length === 0 || report.catchUp.local.length === 0 || report.catchUp.network.length === 0) {
      goals.push(unmeasured(title));
    } else {
      const f = catchUpFigures(report.catchUp);
      const { blocks: n, txs } = report.catchUp.chain;
      goals.push({
        title,
        met: f.ratio <= CATCH_UP_RATIO_GOAL,
        detail:
          `network ${seconds(f.syncMs)} after the node's start-up (${rate(n, f.syncMs)} blocks/s, ${rate(txs, f.syncMs)} tx/s) ` +
          `vs signatures alone ${seconds(f.signaturesMs)} (${rate(txs, f.signaturesMs)} tx/s): ${times(f.ratio)} ` +
          `(median of the per-run ratios ${times(f.pairedRatio)}); from the process's spawn, start-up of ` +
          `${seconds(f.startupMs)} included, ${times(f.ratioWithStartup)}; the local replay ${seconds(f.localMs)} ` +
          `(${rate(txs, f.localMs)} tx/s), ${times(f.localRatio)} (medians of ${report.catchUp.network.length} runs)`,
      });
    }
  }
  {
    const title = `Transfer latency: median time from POST /transfer on one node to the event on its peer's /transactions/stream under ${LATENCY_GOAL_MS} ms`;
    const latency = report.latency;
    if (!latency || latency.samples.length === 0) {
      goals.push(unmeasured(title));
    } else {
      const gossip = summarizeLatency(latency.samples.map((s) => s.gossipMs));
      const post = summarizeLatency(latency.samples.map((s) => s.postMs));
      goals.push({
        title,
        met: gossip.medianMs < LATENCY_GOAL_MS,
        detail:
          `median ${msText(gossip.medianMs)}, p90 ${msText(gossip.p90Ms)}, max ${msText(gossip.maxMs)} over ` +
          `${latency.samples.length} transfers; the POST's own round trip on the sending node median ${msText(post.medianMs)}`,
      });
    }
  }
  return goals;
}

function catchUpSection(report: MeshReport, catchUp: NonNullable<MeshReport['catchUp']>): string {
  const c = catchUp.chain;
  const f = catchUpFigures(catchUp);
  const intro =
    `The chain: ${thousands(c.blocks)} devnet blocks (block interval ${c.blockIntervalMs} ms), each the producer's ` +
    `UptimeReward and, from block 2 on, ${c.transfersPerBlock} transfers among ${c.accounts} accounts (the producer ` +
    `and ${c.accounts - 1} others): ${thousands(c.txs)} transactions, ${(c.blockBytes / 1e6).toFixed(1)} MB of encoded ` +
    `blocks (${Math.round(c.blockBytes / c.blocks).toLocaleString('en-US')} B a block), built once by the benchmark ` +
    `and kept in a LevelDB data directory under the temp directory.\n\n` +
    `**signatures alone**: in the benchmark's process, every signature of the blocks (each header's and each ` +
    `sender's) checked with the core's batch check (\`findInvalidSignatures\`, a range in windows of ` +
    `${VERIFY_WINDOW.toLocaleString('en-US')} signatures, ${WINDOWS_AHEAD} in flight on both ` +
    `cores), range of 500 after range, the ranges read beforehand: the least a catch-up must do. ` +
    `**local**: in the benchmark's process, \`blocksFrom\` on the stored chain in ranges of 500 and \`addBranch\` of ` +
    `each range on a fresh LevelDB chain (synced writes, as a node opens its store), while one range is added the ` +
    `next one's signatures checked and the one after it read, as sync does: what sync does, minus the network. ` +
    `**network**: \`mesh node --devnet\` serving a copy of the stored chain (not mining), and a fresh \`mesh node\` ` +
    `started with \`--bootstrap\` to it, until the fresh node's \`/beacon\` shows the tip (polled every 100 ms, every ` +
    `5 ms over the last range); timed ` +
    `from the fresh node's start output (its HTTP and p2p addresses printed) and from its process's spawn. ` +
    `${catchUp.network.length} runs of each, taken in turns; the serving node stays up for all of them. ` +
    `**ratio** = median ÷ the median of the signatures alone.`;
  const n = c.blocks;
  const runs = (values: number[]): string => values.map(seconds).join(', ');
  const perSignatures = (ms: number): string => (ms / f.signaturesMs).toFixed(2);
  const signatures = catchUp.signatures[0]?.signatures ?? 0;
  const rows = [
    [
      `**signatures alone**: ${thousands(signatures)} checks`,
      seconds(f.signaturesMs),
      rate(n, f.signaturesMs),
      rate(c.txs, f.signaturesMs),
      '1 (ref)',
      runs(catchUp.signatures.map((r) => r.totalMs)),
    ],
    [
      '**local**: read + addBranch in one process',
      seconds(f.localMs),
      rate(n, f.localMs),
      rate(c.txs, f.localMs),
      perSignatures(f.localMs),
      runs(catchUp.local.map((r) => r.totalMs)),
    ],
    ['  of which waiting for the reads (blocksFrom)', seconds(f.readMs), '', '', perSignatures(f.readMs), runs(catchUp.local.map((r) => r.readMs))],
    ['  of which the rest: checks and addBranch', seconds(f.applyMs), '', '', perSignatures(f.applyMs), runs(catchUp.local.map((r) => r.applyMs))],
    [
      "**network**: after the fresh node's start-up",
      seconds(f.syncMs),
      rate(n, f.syncMs),
      rate(c.txs, f.syncMs),
      f.ratio.toFixed(2),
      runs(catchUp.network.map((r) => r.syncMs)),
    ],
    [
      "network, from the process's spawn",
      seconds(f.totalMs),
      rate(n, f.totalMs),
      rate(c.txs, f.totalMs),
      f.ratioWithStartup.toFixed(2),
      runs(catchUp.network.map((r) => r.totalMs)),
    ],
    ["  the fresh node's start-up", seconds(f.startupMs), '', '', '', runs(catchUp.network.map((r) => r.startupMs))],
  ];
  const first = catchUp.network.map((r) => r.firstRangeMs);
  if (first.every((v) => v !== null)) {
    rows.push(['  start output to the first range applied', seconds(median(first as number[])), '', '', '', runs(first as number[])]);
  }
  const table = markdownTable(['measurement', 'median', 'blocks/s', 'tx/s', 'ratio', 'runs'], rows, [false, true, true, true, true, false]);
  const cpu = (values: (number | null)[]): number | null => (values.some((v) => v === null) ? null : median(values as number[]));
  const serving = cpu(catchUp.network.map((r) => r.servingCpuMs));
  const syncing = cpu(catchUp.network.map((r) => r.syncingCpuMs));
  const local = median(catchUp.local.map((r) => r.cpuMs));
  const signatureCpu = median(catchUp.signatures.map((r) => r.cpuMs));
  const cpuLine =
    serving === null || syncing === null
      ? ''
      : `\n\nCPU time (user + system, all threads; medians): the signatures alone ${seconds(signatureCpu)} in ` +
        `${seconds(f.signaturesMs)}; the local replay ${seconds(local)} in ${seconds(f.localMs)}; ` +
        `during the network catch-up the syncing node ${seconds(syncing)} and the serving node ${seconds(serving)} ` +
        `in ${seconds(f.syncMs)}, on ${report.machine.cores} cores.`;
  const firsts = catchUp.network.map((r) => r.firstRangeMs).filter((v) => v !== null);
  const best = firsts.length > 0 ? Math.min(...firsts) : null;
  const late = catchUp.network.flatMap((r, i) =>
    r.firstRangeMs !== null && best !== null && r.firstRangeMs - best > LATE_FIRST_RANGE_MS ? [`run ${i + 1} (${seconds(r.firstRangeMs)})`] : [],
  );
  const lateLine =
    late.length === 0
      ? ''
      : `\n\nThe first range came late in ${late.join(' and ')}, against ${seconds(best!)} at best: waiting ` +
        'for it, not applying the blocks, made that run slower. A fresh node asks for blocks once it hears its ' +
        'peer announce a higher tip, which the peer does when it sees the node subscribe and then every 15 s.';
  const busy = [
    ...catchUp.signatures.map((r, i) => ({ what: `signature run ${i + 1}`, share: share(r.othersCpuMs, r.totalMs, report.machine.cores) })),
    ...catchUp.local.map((r, i) => ({ what: `local run ${i + 1}`, share: share(r.othersCpuMs, r.totalMs, report.machine.cores) })),
    ...catchUp.network.map((r, i) => ({ what: `network run ${i + 1}`, share: share(r.othersCpuMs, r.syncMs, report.machine.cores) })),
  ].filter((b) => b.share !== null && b.share >= BUSY_SHARE);
  const busyLine =
    busy.length === 0
      ? ''
      : `\n\nOther processes on the machine took ${busy.map((b) => `${Math.round(b.share! * 100)}% of its CPU during ${b.what}`).join(', ')}: ` +
        'those runs read slow.';
  return `### Catch-up\n\n${intro}\n\n${table}${cpuLine}${lateLine}${busyLine}`;
}

function replaySection(chain: ChainInfo, replay: readonly ReplayRun[]): string {
  const intro =
    `The node serving the catch-up's chain (${thousands(chain.blocks)} blocks) sends all of it on ` +
    "`GET /blocks/stream?min_height=1`, timed from the request to the tip's event as the benchmark reads the " +
    'frames (each height checked to follow the one before). The stream reads the block objects from its store in ' +
    "pages of 100, headers only, no faster than the client's queue takes them (docs/node-api.md). Next to it, in " +
    "the benchmark's process on the source store: the same pages of `blockEventsFrom` (what the stream reads), " +
    'and `blocksFrom` in ranges of 500 with every block decoded (what reading whole blocks would cost). ' +
    `${replay.length} runs, one after each network run; **ratio** = median ÷ the median of the header pages.`;
  const headers = median(replay.map((r) => r.headersMs));
  const runs = (values: number[]): string => values.map(seconds).join(', ');
  const row = (what: string, values: number[]): string[] => {
    const m = median(values);
    return [what, seconds(m), rate(chain.blocks, m), (m / headers).toFixed(2), runs(values)];
  };
  const rows = [
    row(
      "**/blocks/stream** on the serving node, to the tip's event",
      replay.map((r) => r.streamMs),
    ),
    ['  to the first event', seconds(median(replay.map((r) => r.firstEventMs))), '', '', runs(replay.map((r) => r.firstEventMs))],
    row(
      '**header pages** (blockEventsFrom) in one process (baseline)',
      replay.map((r) => r.headersMs),
    ),
    row(
      'whole blocks decoded (blocksFrom + blockEvent)',
      replay.map((r) => r.blocksMs),
    ),
  ];
  rows[2]![3] = '1 (ref)';
  const table = markdownTable(['measurement', 'median', 'blocks/s', 'ratio', 'runs'], rows, [false, true, true, true, false]);
  return `### Block stream replay\n\n${intro}\n\n${table}`;
}

function latencySection(latency: LatencyRun): string {
  const gossip = summarizeLatency(latency.samples.map((s) => s.gossipMs));
  const post = summarizeLatency(latency.samples.map((s) => s.postMs));
  const intro =
    `Two \`mesh node --devnet\` processes (block interval ${latency.blockIntervalMs} ms): A mining, B bootstrapped ` +
    `from A and on its tip. ${latency.samples.length} transfers from A to B, one at a time with a pause of 0–20 ms ` +
    `between them (and at most ${latency.perBlock} per block of A: its pool holds 64 of one sender), after ` +
    `${latency.warmup} uncounted ones; A's height went from ${latency.heights[0]} to ${latency.heights[1]} meanwhile, ` +
    `so some transfers met a block being made. Each transfer is timed from the ` +
    `moment its POST is sent to the moment its event reaches the benchmark on B's \`/transactions/stream\` (SSE), ` +
    "matched by its amount so that an event arriving before the POST's answer is timed too; the baseline is the same " +
    "POST's own round trip on A (signing, the mempool and the gossip publish happen before A answers).";
  const rows = [
    [
      "POST /transfer on A → event on B's /transactions/stream",
      msText(gossip.medianMs),
      msText(gossip.p90Ms),
      msText(gossip.maxMs),
      (gossip.medianMs / post.medianMs).toFixed(2),
    ],
    ['POST /transfer on A, its round trip (baseline)', msText(post.medianMs), msText(post.p90Ms), msText(post.maxMs), '1 (ref)'],
  ];
  const table = markdownTable(['measurement', 'median', 'p90', 'max', 'ratio'], rows, [false, true, true, true, true]);
  const refused =
    latency.refused.length === 0
      ? ''
      : `\n\nThe sending node refused ${latency.refused.length} of the POSTs with 400 (sent again, and timed again): ` +
        `${[...new Set(latency.refused.map((r) => r.split(':')[0]))].map((r) => `\`${r}\``).join(', ')}. ` +
        'A POST /transfer that arrives while the node writes a new block to its store takes its nonce from the ' +
        "block's state and also counts the block's transactions still in the pool, so it skips ahead.";
  const slow = latency.samples.filter((x) => x.gossipMs > latency.blockIntervalMs / 2).map((x) => msText(x.gossipMs));
  const slowLine =
    slow.length === 0
      ? ''
      : `\n\n${slow.length} of the transfers took more than half a block interval (${slow.join(', ')}): their gossip ` +
        "reached B while B was writing A's latest block, whose transactions B's pool still held against a state that " +
        'already had them, so B refused the new one and streamed it only with the block that confirmed it.';
  return `### Transfer latency\n\n${intro}\n\n${table}${refused}${slowLine}`;
}

/** The body of the mesh section (without markers). */
export function renderMeshSection(report: MeshReport, goals: readonly Goal[] = evaluateMeshGoals(report)): string {
  const parts: string[] = ['## Mesh nodes'];
  parts.push(measuredLine(report, `Node ${report.node.version}`));
  parts.push(
    'Real `mesh node` processes on loopback (LevelDB store, libp2p over TCP, gossipsub, the HTTP API), started ' +
      'and read by the benchmark as the multi-node tests do, on the same machine as the benchmark itself.',
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  if (report.catchUp && report.catchUp.signatures.length > 0 && report.catchUp.local.length > 0 && report.catchUp.network.length > 0)
    parts.push(catchUpSection(report, report.catchUp));
  const replay = report.catchUp?.replay ?? [];
  if (report.catchUp && replay.length > 0) parts.push(replaySection(report.catchUp.chain, replay));
  if (report.latency && report.latency.samples.length > 0) parts.push(latencySection(report.latency));
  return parts.join('\n\n');
}

export const MESH_REPORT: ReportKind<MeshReport> = { name: 'mesh', evaluate: evaluateMeshGoals, render: renderMeshSection };
