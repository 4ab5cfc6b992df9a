/**
 * The directory benchmark's report: latency summaries, the goals judged on a run's figures, and
 * the Markdown section of bench/RESULTS.md. Pure functions of the results; measuring is in
 * node.ts.
 */
import { type Machine, measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, type GoalMarks, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { formatDuration } from '../lib/timing.ts';
import type { EngineResult } from './library.ts';

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

/** One start of the server: spawn to the first answer, and its memory then. */
export interface StartResult {
  readonly ms: number;
  readonly rssMb: number;
  readonly peakRssMb: number;
  /** The share of the machine's cores other processes used meanwhile (0.5: one of two); null when unknown. */
  readonly otherShare?: number | null;
  /** Threads serving, and spawn to the moment the last of them began (the others start once the first serves). */
  readonly threads?: number;
  readonly threadsMs?: number;
}

/** The worst p99 of a group of cases in one run at concurrency 32. */
export interface WorstCase {
  readonly name: string;
  readonly p99Ms: number;
}

/** One of the consecutive runs at concurrency 32. */
export interface RunSummary {
  /** The share of the machine's cores other processes used during the run; null when unknown. */
  readonly otherShare: number | null;
  /** The stats floor at concurrency 32. */
  readonly floor: { readonly medianMs: number; readonly p99Ms: number } | null;
  readonly filtered: WorstCase | null;
  readonly freeText: WorstCase | null;
}

export interface DirectoryReport extends RunInfo {
  readonly machine: Machine & { readonly node: string };
  readonly dataset: { readonly records: number; readonly seed: number; readonly bytes: number; readonly generateSeconds: number | null };
  /** The start from the index file, as every start after an import. */
  readonly startup: StartResult;
  /** The first start, which indexes the dataset and writes the index file. */
  readonly coldStartup?: StartResult;
  /** The first run: every case at concurrency 1 and 32. */
  readonly cases: readonly CaseResult[];
  /** Every run at concurrency 32, the first included. */
  readonly runs?: readonly RunSummary[];
  readonly export: ExportResult | null;
  readonly rssAfterMb: number;
  /** The server's peak resident memory over its whole life (VmHWM after the export): start, runs and export. */
  readonly rssPeakMb?: number;
  /** The directory's index and MiniSearch on the same records and queries. */
  readonly library?: readonly EngineResult[];
}

/** How the directory's goals are marked, in its section and on the terminal. */
export const DIRECTORY_MARKS: GoalMarks = { met: '✅ met', missed: '❌ not met', unmeasured: '➖ not measured' };
export const DIRECTORY_CONSOLE_MARKS: GoalMarks = { met: 'met', missed: 'NOT met', unmeasured: '–' };

const ms = (value: number): string => formatDuration(value * 1e6);

/** The worst p99 at concurrency 32 among `cases` of `groups`. */
function worstOf(cases: readonly CaseResult[], groups: readonly CaseGroup[]): WorstCase | null {
  let worst: WorstCase | null = null;
  for (const c of cases) {
    const r = groups.includes(c.group) ? run(c, 32) : undefined;
    if (r !== undefined && (worst === null || r.p99Ms > worst.p99Ms)) worst = { name: c.name, p99Ms: r.p99Ms };
  }
  return worst;
}

/** What the goals need of one run at concurrency 32. */
export function summarizeRun(cases: readonly CaseResult[], otherShare: number | null): RunSummary {
  const floor = cases.find((c) => c.group === 'floor');
  const f = floor ? run(floor, 32) : undefined;
  return {
    otherShare,
    floor: f ? { medianMs: f.medianMs, p99Ms: f.p99Ms } : null,
    filtered: worstOf(cases, ['filtered']),
    freeText: worstOf(cases, ['free text', 'combined']),
  };
}

const share = (value: number | null | undefined): string => (value === null || value === undefined ? 'unknown' : `${(value * 100).toFixed(0)} %`);

/** The memory a Deno Deploy isolate has, which one process must fit. */
const DEPLOY_MB = 512;
/** The start-up goal on a warm disk. */
const START_MS = 5000;

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
  goals.push({
    title: `serves within ${START_MS / 1000} s of start, from its index file on a warm disk`,
    met: report.startup.ms < START_MS,
    detail:
      `${ms(report.startup.ms)} from spawn to the first answer` +
      (report.coldStartup ? `; the first start, indexing the dataset and writing the index file, ${ms(report.coldStartup.ms)}` : ''),
  });
  goals.push({
    title: `stays under ${DEPLOY_MB} MB resident, so one process fits a Deno Deploy isolate`,
    met: Math.max(report.startup.rssMb, report.startup.peakRssMb, report.rssAfterMb, report.export?.rssPeakMb ?? 0, report.rssPeakMb ?? 0) < DEPLOY_MB,
    detail:
      `${report.startup.rssMb.toFixed(0)} MB once serving, peak ${report.startup.peakRssMb.toFixed(0)} MB while starting, ` +
      `${report.rssAfterMb.toFixed(0)} MB after the benchmark` +
      (report.rssPeakMb === undefined ? '' : `, ${report.rssPeakMb.toFixed(0)} MB at most over the whole benchmark`) +
      (report.export ? `, ${report.export.rssPeakMb.toFixed(0)} MB at most during the export` : '') +
      (report.coldStartup ? ` (the first start, indexing, peaks at ${report.coldStartup.peakRssMb.toFixed(0)} MB)` : ''),
  });
  target('filtered queries', ['filtered'], 20);
  target('free-text queries, alone or with filters', ['free text', 'combined'], 50);
  // The same targets at concurrency 32 in each of the consecutive runs.
  const runs = report.runs ?? [];
  const eachRun = (what: string, pick: (r: RunSummary) => WorstCase | null, limitMs: number): void => {
    const title = `p99 under ${limitMs} ms for ${what} at concurrency 32 in each of ${runs.length} consecutive runs`;
    const worst = runs.map(pick);
    if (runs.length === 0 || worst.some((w) => w === null)) goals.push(unmeasured(title));
    else {
      goals.push({
        title,
        met: worst.every((w) => w!.p99Ms < limitMs),
        detail: `worst p99 per run: ${worst.map((w) => `${ms(w!.p99Ms)} (${w!.name})`).join(', ')}; other processes' share of the machine per run: ${runs.map((r) => share(r.otherShare)).join(', ')}`,
      });
    }
  };
  eachRun('filtered queries', (r) => r.filtered, 20);
  eachRun('free-text queries, alone or with filters', (r) => r.freeText, 50);
  const e = report.export;
  if (e === null) goals.push(unmeasured('the export streams in constant memory'));
  else {
    const growth = e.rssPeakMb - e.rssBeforeMb;
    // An export built in memory would grow the process by at least what it sends; streamed, the
    // growth is a bounded batch, a small fraction of it (a quarter at the most, to allow for GC).
    goals.push({
      title: 'the export streams in constant memory',
      met: growth < Math.max(64, e.bytes / 1e6 / 4),
      detail: `${(e.bytes / 1e6).toFixed(0)} MB sent in ${e.seconds.toFixed(1)} s; resident memory ${e.rssBeforeMb.toFixed(0)} MB before, peak ${e.rssPeakMb.toFixed(0)} MB during (+${growth.toFixed(0)} MB)`,
    });
  }
  return goals;
}

/** How many threads served the measured requests, said for the reader of the latency tables. */
function serverThreads(report: DirectoryReport): string {
  const threads = report.startup.threads ?? 1;
  return threads < 2 ? 'the server runs on one thread' : `the server runs on ${threads} threads (one per core), each taking its share of the connections`;
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
      'The client is wrk (one thread, a kept-alive connection per request in flight), which costs a few ' +
      'microseconds of CPU a request: a client in Node (node:http about 100 µs a request, fetch about 250 µs) took ' +
      "as much of the two cores as the server, and its own queue showed up as the server's latency. " +
      'Each request reads the whole answer (20 records a page). Each case runs for a set time (2 s at concurrency 1, ' +
      '3 s at 32; 1 s each with --quick). Before the first case, every case that repeats ' +
      "itself runs for 3 s (1 s with --quick) at concurrency 32, not counted: the figures are the server's steady state. " +
      "A prefix's union of words is kept for the next " +
      'query (256 at most), so "prefix while typing" repeats a warm prefix and "each one new" takes 600 prefixes ' +
      'in turn, none of them kept. *Concurrency 32*: 32 requests always in flight; ' +
      serverThreads(report) +
      ', so these queue. **ratio** = median ÷ the median of `/api/v1/stats` at ' +
      "the same concurrency (the router's own floor: a request that does no search).",
  );
  parts.push('### Goals');
  parts.push(goalList(goals, DIRECTORY_MARKS));
  parts.push('### Start-up and memory');
  const cold = report.coldStartup;
  parts.push(
    'Two starts of the server on the same dataset file: the first without its index file (it parses, checks and ' +
      'indexes every record, then writes `<dataset>.index`, as a server does whose dataset came without one), the ' +
      'second from that file (as every start after `mesh directory import`, which writes it): one read of the file, ' +
      'and the dataset hashed to check that the index is its own. The dataset file is in the page cache (a warm disk).',
  );
  parts.push(
    markdownTable(
      ['measure', 'from the index file', cold ? 'first start, indexing (baseline)' : ''],
      [
        ['process spawn to the first successful response', ms(report.startup.ms), cold ? ms(cold.ms) : ''],
        ...(report.startup.threads === undefined || report.startup.threads < 2
          ? []
          : [[`process spawn to all ${report.startup.threads} threads serving`, ms(report.startup.threadsMs ?? 0), cold?.threadsMs ? ms(cold.threadsMs) : '']]),
        ['resident memory (VmRSS) once serving', `${report.startup.rssMb.toFixed(0)} MB`, cold ? `${cold.rssMb.toFixed(0)} MB` : ''],
        ['peak resident memory during start-up (VmHWM)', `${report.startup.peakRssMb.toFixed(0)} MB`, cold ? `${cold.peakRssMb.toFixed(0)} MB` : ''],
        ["other processes' share of the machine meanwhile", share(report.startup.otherShare), cold ? share(cold.otherShare) : ''],
        ['resident memory after the benchmark', `${report.rssAfterMb.toFixed(0)} MB`, ''],
        ...(report.rssPeakMb === undefined ? [] : [['peak resident memory over the whole benchmark (VmHWM)', `${report.rssPeakMb.toFixed(0)} MB`, '']]),
      ],
      [false, true, true],
    ),
  );
  const runs = report.runs ?? [];
  if (runs.length > 0) {
    parts.push(`### ${runs.length} consecutive runs at concurrency 32`);
    parts.push(
      'Every case again at concurrency 32, run after run; the goals must hold in each. **others** is the share of the ' +
        "machine's two cores that processes other than the server and the client used during the run (read from " +
        '/proc): the machine is shared, and what they take the server does not get.',
    );
    parts.push(
      markdownTable(
        ['run', 'others', 'floor median', 'floor p99', 'worst filtered p99', 'worst free-text p99'],
        runs.map((r, i) => [
          String(i + 1),
          share(r.otherShare),
          r.floor ? ms(r.floor.medianMs) : '',
          r.floor ? ms(r.floor.p99Ms) : '',
          r.filtered ? `${ms(r.filtered.p99Ms)} (${r.filtered.name})` : '',
          r.freeText ? `${ms(r.freeText.p99Ms)} (${r.freeText.name})` : '',
        ]),
        [true, true, true, true, true, true],
      ),
    );
  }
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
    markdownTable(['kind', 'request', 'matches', 'concurrency', 'median', 'p99', 'max', 'req/s', 'ratio'], rows, [
      false,
      false,
      true,
      true,
      true,
      true,
      true,
      true,
      true,
    ]),
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
  if (report.library && report.library.length > 0) parts.push(...librarySection(report, report.library));
  return parts.join('\n\n');
}

/** The comparison with MiniSearch: build, memory, and each query's median and p99, side by side. */
function librarySection(report: DirectoryReport, engines: readonly EngineResult[]): string[] {
  const own = engines.find((e) => e.engine === 'directory');
  const parts = ["### The directory's index and MiniSearch"];
  parts.push(
    `Both built from the same dataset file (${report.dataset.records.toLocaleString('en')} records) in a process of their ` +
      'own, with the server stopped, and given the same queries in that process, one at a time (no HTTP): the same ' +
      "words (the directory's folding and word rules as MiniSearch's tokenizer), every word required and the last " +
      "completed from three letters, the same filters (MiniSearch's `filter` on stored fields), the same page (a slice " +
      'of its results). MiniSearch ranks by BM25, the directory by its tiers, so the order within a page differs; the ' +
      "number of records found (**total**) is the same. The directory's build here is the full indexing of a first " +
      'start; a start from its index file is in the table above. Resident memory after a build also holds what the ' +
      'build freed and the allocator kept; the index itself is its heap and array buffers. **ratio** = MiniSearch ÷ the directory.',
  );
  parts.push(
    markdownTable(
      ['measure', ...engines.map((e) => e.engine), 'ratio'],
      [
        ['build from the dataset file', ...engines.map((e) => `${e.buildSeconds.toFixed(1)} s`), ratioOf(engines, (e) => e.buildSeconds)],
        ['resident memory once built', ...engines.map((e) => `${e.rssMb.toFixed(0)} MB`), ratioOf(engines, (e) => e.rssMb)],
        ['JavaScript heap once built', ...engines.map((e) => `${e.heapMb.toFixed(0)} MB`), ratioOf(engines, (e) => e.heapMb)],
        [
          'what the index holds: heap and array buffers',
          ...engines.map((e) => `${(e.heapMb + (e.arrayBuffersMb ?? 0)).toFixed(0)} MB`),
          ratioOf(engines, (e) => e.heapMb + (e.arrayBuffersMb ?? 0)),
        ],
      ],
      [false, ...engines.map(() => true), true],
    ),
  );
  const rows: string[][] = [];
  for (const c of own?.cases ?? []) {
    const other = engines.filter((e) => e !== own).map((e) => e.cases.find((x) => x.name === c.name));
    rows.push([
      c.name,
      c.total.toLocaleString('en') + (other.every((o) => o?.total === c.total) ? '' : ` (MiniSearch: ${other.map((o) => o?.total ?? '?').join(', ')})`),
      `${ms(c.medianMs)} / ${ms(c.p99Ms)}`,
      ...other.map((o) => (o ? `${ms(o.medianMs)} / ${ms(o.p99Ms)}` : '')),
      other[0] ? `${(other[0].medianMs / c.medianMs).toFixed(0)}×` : '',
    ]);
  }
  parts.push(
    markdownTable(
      ['query', 'total', 'directory median / p99', ...engines.filter((e) => e !== own).map((e) => `${e.engine} median / p99`), 'ratio of medians'],
      rows,
      [false, true, true, ...engines.filter((e) => e !== own).map(() => true), true],
    ),
  );
  return parts;
}

function ratioOf(engines: readonly EngineResult[], value: (e: EngineResult) => number): string {
  const own = engines.find((e) => e.engine === 'directory');
  const other = engines.find((e) => e.engine !== 'directory');
  return own && other ? `${(value(other) / value(own)).toFixed(1)}×` : '';
}

export const DIRECTORY_REPORT: ReportKind<DirectoryReport> = {
  name: 'directory',
  evaluate: evaluateDirectoryGoals,
  render: renderDirectorySection,
};
