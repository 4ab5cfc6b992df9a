/**
 * The messaging benchmark's report: its goals judged on a run's figures, and the Markdown section
 * of bench/RESULTS.md. Pure functions of the results; node.ts measures and writes.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { median, percentile } from '../lib/timing.ts';
import { BUSY_SHARE } from '../mesh/report.ts';
import { BATCHES_IN_FLIGHT, type LatencySample, singleCount, type ThroughputOptions, type ThroughputRound } from './cases.ts';

export interface MessagingReport extends RunInfo {
  readonly node: { readonly version: string };
  /** The share of the machine other processes kept busy in a quiet moment before the runs. */
  readonly othersShare: number | null;
  readonly latency: { readonly size: number; readonly warmup: number; readonly samples: readonly LatencySample[] } | null;
  readonly throughput: (ThroughputOptions & { readonly rounds: readonly ThroughputRound[] }) | null;
}

export const LATENCY_MEDIAN_GOAL_MS = 10;
export const LATENCY_P99_GOAL_MS = 50;
/** The messages' rate as a share of the bare stream's. */
export const THROUGHPUT_SHARE_GOAL = 0.5;

const msText = (ms: number): string => `${ms.toFixed(ms < 10 ? 2 : ms < 100 ? 1 : 0)} ms`;
const perSecond = (count: number, ms: number): number => (count / ms) * 1000;

export interface ThroughputFigures {
  /** Medians over the rounds, messages a second. */
  readonly batched: number;
  readonly batchedJson: number;
  readonly single: number;
  readonly lane: number;
  readonly bare: number;
  readonly rpc: number;
  /** The batched API's rate as a share of the bare stream's: the median of the rounds' shares. */
  readonly share: number;
}

export function throughputFigures(t: NonNullable<MessagingReport['throughput']>): ThroughputFigures {
  const few = singleCount(t.count);
  const rate = (pick: (r: ThroughputRound) => number, count = t.count): number => median(t.rounds.map((r) => perSecond(count, pick(r))));
  // The share is taken in each round, the two measured side by side, then its median: a busy
  // moment that slows one round's both ways does not count against one of them alone.
  const share = median(t.rounds.map((r) => r.bareMs / r.batchedMs));
  return {
    batched: rate((r) => r.batchedMs),
    batchedJson: rate((r) => r.batchedJsonMs),
    single: rate((r) => r.singleMs, few),
    lane: rate((r) => r.laneMs),
    bare: rate((r) => r.bareMs),
    rpc: rate((r) => r.rpcMs, few),
    share,
  };
}

export function evaluateMessagingGoals(report: MessagingReport): Goal[] {
  const goals: Goal[] = [];
  const samples = report.latency?.samples ?? [];
  const events = samples.map((s) => s.eventMs);
  const medianTitle = `Latency: the median time from a directed message's POST /mesh/send on A to its event on B's /mesh/messages/stream under ${LATENCY_MEDIAN_GOAL_MS} ms on loopback`;
  const p99Title = `Latency: the 99th percentile of the same under ${LATENCY_P99_GOAL_MS} ms`;
  if (events.length === 0) {
    goals.push(unmeasured(medianTitle), unmeasured(p99Title));
  } else {
    const m = median(events);
    const p99 = percentile(events, 99);
    goals.push({
      title: medianTitle,
      met: m < LATENCY_MEDIAN_GOAL_MS,
      detail: `median ${msText(m)} over ${events.length} messages of ${report.latency!.size} bytes`,
    });
    goals.push({ title: p99Title, met: p99 < LATENCY_P99_GOAL_MS, detail: `p99 ${msText(p99)}, worst ${msText(Math.max(...events))}` });
  }
  const t = report.throughput;
  const size = t?.size ?? 1024;
  const throughputTitle = `Throughput: messages of ${size} bytes through the API (POST /mesh/send-batch on A, its batches as bytes, to B's stream as bytes) at least ${THROUGHPUT_SHARE_GOAL * 100} % of the messages a second one bare libp2p stream between the same two processes carries`;
  if (t === null || t.rounds.length === 0) {
    goals.push(unmeasured(throughputTitle));
  } else {
    const f = throughputFigures(t);
    goals.push({
      title: throughputTitle,
      met: f.share >= THROUGHPUT_SHARE_GOAL,
      detail: `${Math.round(f.batched)} messages/s against the bare stream's ${Math.round(f.bare)}/s: ${(f.share * 100).toFixed(1)} % (medians of ${t.rounds.length} rounds of ${t.count} messages, the share taken in each round; ${t.batch} a POST, ${BATCHES_IN_FLIGHT} POSTs at a time)`,
    });
  }
  return goals;
}

function latencySection(l: NonNullable<MessagingReport['latency']>): string {
  const rows = (['eventMs', 'postMs'] as const).map((key) => {
    const values = l.samples.map((s) => s[key]);
    const label = key === 'eventMs' ? "**POST on A → the event on B's stream**" : "POST on A → its answer (B's acknowledgement)";
    return [
      label,
      msText(median(values)),
      msText(percentile(values, 90)),
      msText(percentile(values, 99)),
      msText(Math.min(...values)),
      msText(Math.max(...values)),
    ];
  });
  return (
    `### Latency\n\n${l.samples.length} messages of ${l.size} bytes, one at a time, after ${l.warmup} uncounted ones: POST /mesh/send on A ` +
    "timed from the request being sent to the message's event arriving on B's `/mesh/messages/stream` (read by the benchmark as it " +
    "comes), and to the POST's answer. The path: HTTP into A, the AppMessage on A's lane to B (one libp2p stream kept open, noise and yamux), B's check of the sender and its inbox, " +
    "the SSE event out of B, and B's AppAck back.\n\n" +
    markdownTable(['measurement', 'median', 'p90', 'p99', 'min', 'max'], rows, [false, true, true, true, true, true])
  );
}

function throughputSection(t: NonNullable<MessagingReport['throughput']>): string {
  const f = throughputFigures(t);
  const row = (label: string, rate: number): string[] => [label, `${Math.round(rate)}`, ((rate * t.size) / 1e6).toFixed(2), `${(rate / f.bare).toFixed(3)}`];
  const cpu = (pick: (r: ThroughputRound) => number | null): string => {
    const values = t.rounds.map(pick).filter((v): v is number => v !== null);
    return values.length === 0 ? '–' : `${((median(values) / t.count) * 1000).toFixed(0)} µs`;
  };
  const table = markdownTable(
    ['way', 'messages/s', 'MB/s', 'ratio to the bare stream'],
    [
      row(`**messages: POST /mesh/send-batch on A as bytes (${t.batch} a POST) → B's stream**`, f.batched),
      row(`messages: POST /mesh/send-batch on A as JSON (${t.batch} a POST) → B's stream`, f.batchedJson),
      row("messages: POST /mesh/send on A (one a POST) → B's stream", f.single),
      row("messages from inside A (its lane to B, no HTTP into A), to B's acknowledgement", f.lane),
      row('requests on the network port, one stream each (no HTTP, no inbox)', f.rpc),
      row('one bare libp2p stream, length-prefixed frames (ref)', f.bare),
    ],
    [false, true, true, true],
  );
  return (
    `### Throughput\n\n${t.rounds.length} rounds; in each, messages of ${t.size} bytes from A to B six ways, in rotating order (${t.count} by the batched ways and the bare stream, ${singleCount(t.count)} by the ways that take a POST or a stream each, so that each way runs long enough to measure): ` +
    `after an uncounted quarter round of the batched ways and the bare stream: ` +
    `through the API in batches (POST /mesh/send-batch on A, ${t.batch} messages each, ${BATCHES_IN_FLIGHT} POSTs at a time), as bytes and as JSON, and one a POST ` +
    `(POST /mesh/send, ${t.concurrency} at a time), each until the last is on B's stream (read as bytes: Accept: application/octet-stream); from inside A's process, its messaging sending ` +
    `the same batches on its lane to B (no HTTP, JSON or hex on A's side), until the last acknowledgement; as many requests on the network port's ` +
    `\`bench.rpc\` (${t.concurrency} at a time, each its own libp2p stream, answered empty); and one bare libp2p stream from A to a sink on B, ` +
    "written in batches of 64 frames, timed from the dial to the sink's count. MB/s counts payload bytes. " +
    `Medians of the rounds. CPU per message while the batched API carried them as bytes: A ${cpu((r) => r.batchedCpuMs.a)}, B ${cpu((r) => r.batchedCpuMs.b)}.\n\n${table}\n\n` +
    'Messages travel on a lane: one libp2p stream from A to B kept open, AppMessage frames written back to back and AppAck frames ' +
    'coming back in order. A message through the API also costs its share of an HTTP request into A (as bytes: a decode; as JSON: ' +
    "a parse, a check per field and hex), B's check and inbox, and a frame out of B's stream; the bare stream carries frames back to back with nothing to do at either end."
  );
}

export function renderMessagingSection(report: MessagingReport, goals: readonly Goal[] = evaluateMessagingGoals(report)): string {
  const parts = ['## App messaging'];
  parts.push(measuredLine(report, `Node ${report.node.version}`, 'messages'));
  parts.push(
    "Two node processes on loopback (bench/messaging/peer.ts: the node `mesh node --devnet` runs — MeshNode on the Node host's libp2p, " +
      "its HTTP API on node:http — over a chain in memory, which messaging never touches, with the baselines' protocols added), " +
      "A bootstrapped from B. The benchmark process sends through A's HTTP API and reads B's event stream.",
  );
  const share = report.othersShare;
  parts.push(
    `Other processes on the machine kept ${share === null ? '–' : `${Math.round(share * 100)}%`} of its ${report.machine.cores} cores busy while the benchmark waited before the runs` +
      (share !== null && share >= BUSY_SHARE ? ': the machine was shared, and every figure here reads slower than on a quiet one.' : '.'),
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  if (report.latency !== null && report.latency.samples.length > 0) parts.push(latencySection(report.latency));
  if (report.throughput !== null && report.throughput.rounds.length > 0) parts.push(throughputSection(report.throughput));
  return parts.join('\n\n');
}

export const MESSAGING_REPORT: ReportKind<MessagingReport> = { name: 'messaging', evaluate: evaluateMessagingGoals, render: renderMessagingSection };
