/**
 * The directory benchmark's report: latency summaries, the goals judged on a run's figures, and
 * the Markdown section of bench/RESULTS.md. Pure functions of the results; measuring is in
 * node.ts.
 */
import { measuredLine, type Machine, type RunInfo } from '../lib/environment.ts';
import { goalList, unmeasured, type Goal, type GoalMarks } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { formatDuration, percentile } from '../lib/timing.ts';

export type CaseGroup = 'filtered' | 'free text' | 'combined' | 'floor';

/** Latencies of one case at one concurrency. */
export interface LatencyResult {
  readonly concurrency: number;
  readonly requests: number;
  readonly medianMs: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Completed requests per second over the run. */
  readonly throughput: number;
}

export interface CaseResult {
  readonly group: CaseGroup;
  readonly name: string;
  /** Path and query string as requested. */
  readonly path: string;
  /** `total` of the first answer (null for the stats floor). */
  readonly matches: number | null;
  readonly runs: readonly LatencyResult[];
}

export interface ExportResult {
  readonly bytes: number;
  readonly seconds: number;
  readonly rssBeforeMb: number;
  readonly rssPeakMb: number;
  readonly rssAfterMb: number;
  /** A conditional GET with the export's ETag: its status and time. */
  readonly conditional: { readonly status: number; readonly ms: number } | null;
}

export interface DirectoryReport extends RunInfo {
  readonly machine: Machine & { readonly node: string };
  readonly dataset: { readonly records: number; readonly seed: number; readonly bytes: number; readonly generateSeconds: number | null };
  readonly startup: { readonly ms: number; readonly rssMb: number; readonly peakRssMb: number };
  readonly cases: readonly CaseResult[];
  readonly export: ExportResult | null;
  readonly rssAfterMb: number;
}

/** How the directory's goals are marked, in its section and on the terminal. */
export const DIRECTORY_MARKS: GoalMarks = { met: '✅ met', missed: '❌ not met', unmeasured: '➖ not measured' };
export const DIRECTORY_CONSOLE_MARKS: GoalMarks = { met: 'met', missed: 'NOT met', unmeasured: '–' };

/** Summarizes one run's latencies (ms) taken over `elapsedMs`. */
export function summarize(concurrency: number, latencies: readonly number[], elapsedMs: number): LatencyResult {
  return {
    concurrency,
    requests: latencies.length,
    medianMs: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: percentile(latencies, 100),
    throughput: latencies.length / (elapsedMs / 1000),
  };
}

const ms = (value: number): string => formatDuration(value * 1e6);

function run(c: CaseResult, concurrency: number): LatencyResult | undefined {
  return c.runs.find((r) => r.concurrency === concurrency);
}

function floorOf(report: DirectoryReport): CaseResult | undefined {
  return report.cases.find((c) => c.group === 'floor');
}

/** Judges the issue's goals: p99 under 20 ms filtered and under 50 ms with free text, at each concurrency; a constant-memory export. */
export function evaluateDirectoryGoals(report: DirectoryReport): Goal[] {
  const goals: Goal[] = [];
  const concurrencies = [...new Set(report.cases.flatMap((c) => c.runs.map((r) => r.concurrency)))].sort((a, b) => a - b);
  // One goal per target and concurrency: at 1 the figure is the server's own; at 32 it is mostly
  // the queue in front of a single thread on a machine the client shares.
  const target = (what: string, groups: readonly CaseGroup[], limitMs: number): void => {
    const cases = report.cases.filter((c) => groups.includes(c.group));
    for (const concurrency of concurrencies) {
      const title = `p99 under ${limitMs} ms for ${what} at concurrency ${concurrency} (${report.dataset.records.toLocaleString('en')} records)`;
      const worst = cases
        .map((c) => ({ c, r: run(c, concurrency) }))
        .filter((x): x is { c: CaseResult; r: LatencyResult } => x.r !== undefined)
        .sort((a, b) => b.r.p99Ms - a.r.p99Ms)[0];
      if (!worst) goals.push(unmeasured(title));
      else goals.push({ title, met: worst.r.p99Ms < limitMs, detail: `worst p99 ${ms(worst.r.p99Ms)} (${worst.c.name})` });
    }
  };
  target('filtered queries', ['filtered'], 20);
  target('free-text queries, alone or with filters', ['free text', 'combined'], 50);
  const e = report.export;
  if (e === null) goals.push(unmeasured('the export streams in constant memory'));
  else {
    const growth = e.rssPeakMb - e.rssBeforeMb;
    // An export built in memory would grow the process by at least what it sends; streamed, the
    // growth is a bounded batch, a small fraction of it (a quarter at the most, to allow for GC).
    goals.push({
      title: 'the export streams in constant memory',
      met: growth < Math.max(64, (e.bytes / 1e6) / 4),
      detail: `${(e.bytes / 1e6).toFixed(0)} MB sent in ${e.seconds.toFixed(1)} s; resident memory ${e.rssBeforeMb.toFixed(0)} MB before, peak ${e.rssPeakMb.toFixed(0)} MB during (+${growth.toFixed(0)} MB)`,
    });
  }
  return goals;
}

/** The body of the directory section (without markers). */
export function renderDirectorySection(report: DirectoryReport, goals: readonly Goal[] = evaluateDirectoryGoals(report)): string {
  const floor = floorOf(report);
  const parts: string[] = ['## Directory'];
  const d = report.dataset;
  parts.push(
    `${measuredLine(report, `Node ${report.machine.node}`, 'requests')} Dataset: ` +
      `${d.records.toLocaleString('en')} generated records (\`bench/directory/generate.ts\`, seed ${d.seed}, ` +
      `${(d.bytes / 1e6).toFixed(0)} MB${d.generateSeconds === null ? ', cached' : `, generated in ${d.generateSeconds.toFixed(0)} s`}).`,
  );
  parts.push(
    'The real server process (`mesh directory --data FILE --port 0 --rate-limit 0`) is measured over HTTP on ' +
      'loopback by a client in another process on the same machine, so the client takes CPU from the server. ' +
      'The client is `node:http` over kept-alive connections (Node\'s `fetch` spends about twice the server\'s ' +
      'CPU on each request, and on two cores its own queue showed up as the server\'s latency). ' +
      'Each request reads the whole answer (20 records a page). Before the first case, every case that repeats ' +
      'itself runs 2,000 requests (200 with --quick) at concurrency 32, not counted: the figures are the server\'s steady state. ' +
      'A prefix\'s union of words is kept for the next ' +
      'query (256 at most), so "prefix while typing" repeats a warm prefix and "each one new" takes 600 prefixes ' +
      'in turn, none of them kept. *Concurrency 32*: 32 requests always in flight; ' +
      'the server runs on one thread, so these queue. **ratio** = median ÷ the median of `/api/v1/stats` at ' +
      'the same concurrency (the router\'s own floor: a request that does no search).',
  );
  parts.push('### Goals');
  parts.push(goalList(goals, DIRECTORY_MARKS));
  parts.push('### Start-up and memory');
  parts.push(
    markdownTable(
      ['measure', 'value'],
      [
        ['start-up: process spawn to the first successful response', ms(report.startup.ms)],
        ['resident memory (VmRSS) once serving', `${report.startup.rssMb.toFixed(0)} MB`],
        ['peak resident memory during start-up (VmHWM)', `${report.startup.peakRssMb.toFixed(0)} MB`],
        ['resident memory after the benchmark', `${report.rssAfterMb.toFixed(0)} MB`],
      ],
      [false, true],
    ),
  );
  parts.push('### Search latency');
  const concurrencies = [...new Set(report.cases.flatMap((c) => c.runs.map((r) => r.concurrency)))].sort((a, b) => a - b);
  const rows: string[][] = [];
  for (const c of report.cases) {
    for (const concurrency of concurrencies) {
      const r = run(c, concurrency);
      if (!r) continue;
      const base = floor ? run(floor, concurrency) : undefined;
      rows.push([
        concurrency === concurrencies[0] ? c.group : '',
        concurrency === concurrencies[0] ? `\`${c.path}\`` : '',
        concurrency === concurrencies[0] ? (c.matches === null ? '' : c.matches.toLocaleString('en')) : '',
        String(concurrency),
        ms(r.medianMs),
        ms(r.p99Ms),
        ms(r.maxMs),
        r.throughput.toFixed(0),
        base ? (c === floor ? '1 (floor)' : `${(r.medianMs / base.medianMs).toFixed(2)}`) : '',
      ]);
    }
  }
  parts.push(
    markdownTable(
      ['kind', 'request', 'matches', 'concurrency', 'median', 'p99', 'max', 'req/s', 'ratio'],
      rows,
      [false, false, true, true, true, true, true, true, true],
    ),
  );
  if (report.export) {
    const e = report.export;
    parts.push('### Export');
    parts.push(
      `\`GET /directory.json\`: ${(e.bytes / 1e6).toFixed(0)} MB in ${e.seconds.toFixed(1)} s ` +
        `(${(e.bytes / 1e6 / e.seconds).toFixed(0)} MB/s), read and discarded by the client as it arrives. The server's ` +
        `resident memory, sampled every 50 ms: ${e.rssBeforeMb.toFixed(0)} MB before, ${e.rssPeakMb.toFixed(0)} MB at ` +
        `its peak during the export, ${e.rssAfterMb.toFixed(0)} MB after.` +
        (e.conditional ? ` A conditional GET with the export's ETag answered ${e.conditional.status} in ${ms(e.conditional.ms)}.` : ''),
    );
  }
  return parts.join('\n\n');
}

export const DIRECTORY_REPORT: ReportKind<DirectoryReport> = {
  name: 'directory',
  evaluate: evaluateDirectoryGoals,
  render: renderDirectorySection,
};
