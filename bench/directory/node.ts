/**
 * `mesh bench directory`: the directory over HTTP with a generated dataset (1,000,000 records by
 * default). Starts the real server process, measures start-up time and resident memory, search
 * latency (median and p99) for typical queries at concurrency 1 and 32 next to `/api/v1/stats` (the
 * router's floor), and the streamed export's memory; writes bench/results/directory.json and the
 * directory section of bench/RESULTS.md.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rename, rm, stat } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { indexPathOf } from '../../directory/adapter/index-cache.ts';
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { parseCommand, runCommand } from '../../host-node/cli/run.ts';
import { integer } from '../../host-node/cli/values.ts';
import { describeMachine, REPO_ROOT } from '../lib/environment.ts';
import { goalMark } from '../lib/goals.ts';
import { otherProcessesMeter, processCpuMs as processCpuMsOf } from '../lib/processes.ts';
import { writeReport } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { GENERATOR_VERSION, generatedBrands, writeGeneratedDataset } from './generate.ts';
import { compareEngine, ENGINES, type EngineResult, type LibraryCase } from './library.ts';
import {
  type CaseGroup,
  type CaseResult,
  DIRECTORY_CONSOLE_MARKS,
  DIRECTORY_REPORT,
  type DirectoryReport,
  type ExportResult,
  type LatencyResult,
  type RunSummary,
  type StartResult,
  summarizeRun,
} from './report.ts';

export interface DirectoryBenchOptions {
  readonly records: number;
  readonly seed: number;
  readonly quick: boolean;
  readonly write: boolean;
  readonly dataDir: string;
}

const directoryOptions = {
  records: option({ value: 'N', description: 'records in the generated dataset', parse: integer(100), default: 1_000_000 }),
  seed: option({ value: 'N', description: 'generator seed', parse: integer(0), default: 1 }),
  ...runOptions,
  'data-dir': option({ value: 'DIR', description: 'where generated datasets are kept between runs', default: tmpdir(), shown: "the system's temp dir" }),
};

function directoryBenchOptions(values: OptionValues<typeof directoryOptions>): DirectoryBenchOptions {
  return { records: values.records, seed: values.seed, ...runFlags(values), dataDir: values['data-dir'] };
}

/** Parses the arguments after `bench directory`; throws a UsageError (a RangeError) with a message for the user. */
export function parseDirectoryBenchArgs(args: readonly string[]): DirectoryBenchOptions {
  return directoryBenchOptions(parseCommand(directoryBenchCommand, args).options);
}

const say = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** The generated dataset for (records, seed), made once and kept in `dataDir` (created when missing): a million records take a while. */
export async function keptDataset(options: DirectoryBenchOptions): Promise<{ path: string; bytes: number; generateSeconds: number | null }> {
  await mkdir(options.dataDir, { recursive: true });
  const path = join(options.dataDir, `mesh-directory-bench-v${GENERATOR_VERSION}-${options.records}-s${options.seed}.json`);
  const existing = await stat(path).catch(() => null);
  if (existing) return { path, bytes: existing.size, generateSeconds: null };
  say(`generating ${options.records} records into ${path} …`);
  const started = performance.now();
  const temporary = `${path}.${process.pid}.tmp`;
  const bytes = await writeGeneratedDataset(temporary, options.records, options.seed);
  await rename(temporary, path);
  return { path, bytes, generateSeconds: (performance.now() - started) / 1000 };
}

/** VmRSS and VmHWM of a process, in MB (Linux /proc). */
async function memoryOf(pid: number): Promise<{ rssMb: number; peakMb: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
}

interface Server {
  readonly child: ChildProcess;
  readonly url: string;
  readonly startupMs: number;
  /** Threads serving (`mesh directory` starts one per core, the others once the first serves), and when the last began. */
  readonly threads: number;
  readonly threadsMs: number;
  /** The share of the machine other processes used while it started. */
  readonly otherShare: number | null;
  stop(): Promise<void>;
}

/** Starts the server, reads its memory once it answers, and stops it. */
async function measureStart(dataPath: string, submissions: string, what: string): Promise<StartResult> {
  const server = await startServer(dataPath, submissions);
  try {
    const memory = await memoryOf(server.child.pid!);
    say(`${what}: serving after ${(server.startupMs / 1000).toFixed(1)} s, ${memory.rssMb.toFixed(0)} MB resident (peak ${memory.peakMb.toFixed(0)} MB)`);
    return {
      ms: server.startupMs,
      threads: server.threads,
      threadsMs: server.threadsMs,
      rssMb: memory.rssMb,
      peakRssMb: memory.peakMb,
      otherShare: server.otherShare,
    };
  } finally {
    await server.stop();
  }
}

async function startServer(dataPath: string, submissions: string): Promise<Server> {
  const meter = await otherProcessesMeter([]);
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'bin', 'mesh.js'), 'directory', '--data', dataPath, '--port', '0', '--rate-limit', '0', '--submissions', submissions],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  let stdout = '';
  let threads = 1;
  let threadsMs = 0;
  const spread = new Promise<void>((resolve) => {
    child.stdout!.on('data', () => {
      const m = /serving on (\d+) threads/.exec(stdout);
      if (m) {
        threads = Number(m[1]);
        threadsMs = performance.now() - started;
        resolve();
      }
    });
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.prependListener('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const m = /directory listening on (http:\/\/\S+)/.exec(stdout);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the directory server exited (${code}) before listening: ${stderr.trim()}`)));
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  for (;;) {
    const ok = await fetch(`${url}/api/v1/stats`)
      .then(async (r) => {
        await r.arrayBuffer();
        return r.ok;
      })
      .catch(() => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const startupMs = performance.now() - started;
  // The other threads start once the first serves: measured from them all.
  if (cpus().length > 1) await Promise.race([spread, new Promise((r) => setTimeout(r, 60_000))]);
  // The server's own CPU is counted as others' here (it cannot be read once it is gone): subtracted below.
  const others = await meter.stop();
  const serverCpu = await processCpuMsOf(child.pid);
  const busy = others.share === null || serverCpu === null ? null : Math.max(0, others.share - serverCpu / (startupMs * cpus().length));
  return { child, url, startupMs, threads, threadsMs, otherShare: busy, stop };
}

// The measuring client: wrk (Debian's `wrk`), one thread, one kept-alive connection per request in
// flight, reading each answer whole. It costs a few microseconds of CPU a request; a client in
// Node (node:http: ~100 µs, fetch: ~250 µs) took as much of the two cores as the server it
// measured, and at concurrency 32 its own queue showed up as the server's latency.
const execFileAsync = promisify(execFile);
const WRK_SCRIPT = join(REPO_ROOT, 'bench', 'directory', 'wrk-case.lua');

interface WrkFigures {
  readonly requests: number;
  readonly durationUs: number;
  readonly socketErrors: number;
  readonly statusErrors: number;
  readonly timeouts: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly maxUs: number;
}

/** Fails at once, with what to install, when wrk is missing. */
async function requireWrk(): Promise<void> {
  await execFileAsync('wrk', ['--version']).catch((error: NodeJS.ErrnoException & { stdout?: string }) => {
    // `wrk --version` prints its version and exits 1.
    if (error.code === 'ENOENT') throw new Error('mesh bench directory measures with wrk: install it first (apt-get install wrk)');
  });
}

/** `paths` of `base` in turn, `concurrency` at a time, for `seconds`. */
async function measure(base: string, paths: readonly string[], concurrency: number, seconds: number): Promise<LatencyResult> {
  const args = ['-t1', `-c${concurrency}`, `-d${seconds}s`, '--timeout', '10s', '-s', WRK_SCRIPT, base, '--', ...paths];
  const { stdout } = await execFileAsync('wrk', args, { maxBuffer: 1 << 20 });
  const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'));
  if (line === undefined) throw new Error(`wrk printed no figures: ${stdout.trim()}`);
  const w = JSON.parse(line) as WrkFigures;
  if (w.socketErrors + w.statusErrors + w.timeouts > 0 || w.requests === 0) {
    throw new Error(`${base}${paths[0]}: ${w.requests} answers, ${w.statusErrors} not 2xx/3xx, ${w.socketErrors} socket errors, ${w.timeouts} timeouts`);
  }
  return {
    concurrency,
    requests: w.requests,
    medianMs: w.p50Us / 1000,
    p99Ms: w.p99Us / 1000,
    maxMs: w.maxUs / 1000,
    throughput: w.requests / (w.durationUs / 1e6),
  };
}

interface CaseSpec {
  readonly group: CaseGroup;
  readonly name: string;
  /** The request (the first of `rotate`, when given). */
  readonly path: string;
  /** Requests taken in turn, for a case that must not repeat itself (a cold cache). */
  readonly rotate?: readonly string[];
}

/** A word of the generated names that occurs in a few records only (found by asking the server). */
async function rareWord(base: string, seed: number): Promise<string> {
  const brands = generatedBrands(seed);
  for (let i = brands.length - 1; i > brands.length - 400 && i >= 0; i--) {
    const word = brands[i]!.toLowerCase();
    const body = (await (await fetch(`${base}/api/v1/factories?q=${word}&limit=1`)).json()) as { total: number };
    if (body.total >= 1 && body.total <= 50) return word;
  }
  return brands.at(-1)!.toLowerCase();
}

/**
 * Four-letter beginnings of made-up brand words, all different, more than the index keeps unions
 * for (256): taken in turn, every request finds its prefix's union not yet made.
 */
function coldPrefixes(seed: number): string[] {
  const prefixes = new Set<string>();
  for (const brand of generatedBrands(seed)) {
    if (brand.length > 5) prefixes.add(brand.slice(0, 4).toLowerCase());
    if (prefixes.size === 600) break;
  }
  return [...prefixes].map((p) => `/api/v1/factories?q=${p}&limit=20`);
}

function cases(rare: string, seed: number): CaseSpec[] {
  const c = (group: CaseGroup, name: string, path: string): CaseSpec => ({ group, name, path });
  const cold = coldPrefixes(seed);
  return [
    c('filtered', 'country', '/api/v1/factories?country=US&limit=20'),
    c('filtered', 'country + category', '/api/v1/factories?country=DE&category=cnc-machining&limit=20'),
    c('filtered', 'category + contact', '/api/v1/factories?category=surface-finishing&contact=website&limit=20'),
    c('filtered', 'country + contact, deep page', '/api/v1/factories?country=CN&contact=observed-email&offset=2000&limit=20'),
    c('free text', 'common word', '/api/v1/factories?q=precision&limit=20'),
    c('free text', 'rare word', `/api/v1/factories?q=${rare}&limit=20`),
    c('free text', 'prefix while typing', '/api/v1/factories?q=mach&limit=20'),
    { group: 'free text', name: `prefix, each one new (${cold.length} in turn)`, path: cold[0]!, rotate: cold },
    c('free text', 'two words', '/api/v1/factories?q=precision%20machining&limit=20'),
    c('free text', 'accented', '/api/v1/factories?q=M%C3%BCller&limit=20'),
    c('free text', 'common word, deep page', '/api/v1/factories?q=precision&offset=1000&limit=20'),
    c('combined', 'word + country + category', '/api/v1/factories?q=precision&country=US&category=cnc-machining&limit=20'),
    c('combined', 'word + country + contact', '/api/v1/factories?q=plastics&country=CN&contact=website&limit=20'),
    c('floor', 'statistics', '/api/v1/stats'),
  ];
}

async function measureExport(base: string, pid: number): Promise<ExportResult> {
  const before = (await memoryOf(pid)).rssMb;
  let peak = before;
  const sampler = setInterval(() => {
    memoryOf(pid)
      .then((m) => {
        peak = Math.max(peak, m.rssMb);
      })
      .catch(() => {});
  }, 50);
  const started = performance.now();
  // Uncompressed, as the search cases are (wrk asks for no encoding): the figure is the export's own cost.
  const response = await fetch(`${base}/directory.json`, { headers: { 'accept-encoding': 'identity' } });
  if (!response.ok || response.body === null) throw new Error(`/directory.json: HTTP ${response.status}`);
  let bytes = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
  }
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, (await memoryOf(pid)).rssMb);
  const etag = response.headers.get('etag');
  let conditional: ExportResult['conditional'] = null;
  if (etag) {
    const start = performance.now();
    const again = await fetch(`${base}/directory.json`, { headers: { 'if-none-match': etag, 'accept-encoding': 'identity' } });
    await again.arrayBuffer();
    conditional = { status: again.status, ms: performance.now() - start };
  }
  return { bytes, seconds, rssBeforeMb: before, rssPeakMb: peak, rssAfterMb: (await memoryOf(pid)).rssMb, conditional };
}

/** `mesh bench directory`. */
export const directoryBenchCommand = command({
  description: `The directory server over HTTP with generated records: start-up, memory, search latency at
concurrency 1 and 32, the streamed export.`,
  options: directoryOptions,
  run: (input) => runDirectoryBenchWith(directoryBenchOptions(input.options), commandLine(input)),
});

/** Runs `mesh bench directory …` (the arguments after `directory`); resolves to the exit code. */
export function runDirectoryBench(args: string[]): Promise<number> {
  return runCommand(directoryBenchCommand, args, 'mesh bench directory');
}

/** Consecutive runs of every case at concurrency 32: the goals must hold in each. */
const RUNS = 5;

/** Runs every case (at concurrency 1 and 32 when `withC1`, else 32 only); says each figure as it comes. */
async function runCases(
  server: Server,
  specs: readonly CaseSpec[],
  perCase: { c1Seconds: number; c32Seconds: number },
  withC1: boolean,
): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const spec of specs) {
    const url = `${server.url}${spec.path}`;
    const rotate = spec.rotate;
    const paths = rotate ?? [spec.path];
    const first = (await (await fetch(url)).json()) as { total?: number };
    const runs = withC1
      ? [await measure(server.url, paths, 1, perCase.c1Seconds), await measure(server.url, paths, 32, perCase.c32Seconds)]
      : [await measure(server.url, paths, 32, perCase.c32Seconds)];
    const matches = spec.group !== 'floor' && typeof first.total === 'number' ? first.total : null;
    results.push({ group: spec.group, name: spec.name, path: spec.path, matches, runs });
    say(
      `${spec.group.padEnd(9)} ${spec.name.padEnd(30)} ` +
        runs.map((r) => `c${r.concurrency}: median ${r.medianMs.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms`).join('; '),
    );
  }
  return results;
}

/** The cases of the library comparison: every search case of the HTTP run (not the stats floor). */
function libraryCases(specs: readonly CaseSpec[]): LibraryCase[] {
  return specs.filter((s) => s.group !== 'floor').map((s) => ({ name: s.name, paths: s.rotate ?? [s.path] }));
}

async function runDirectoryBenchWith(options: DirectoryBenchOptions, commandText: string): Promise<number> {
  const began = performance.now();
  await requireWrk();
  const data = await keptDataset(options);
  const submissions = await mkdtemp(join(tmpdir(), 'mesh-bench-submissions-'));
  try {
    // A first start indexes the dataset and writes its index file (as on a machine whose import
    // wrote none); the second starts from that file, as every start after an import does.
    await rm(indexPathOf(data.path), { force: true });
    say(`starting the directory on ${data.path} (${(data.bytes / 1e6).toFixed(0)} MB) without its index file …`);
    const cold = await measureStart(data.path, submissions, 'first start, indexing the dataset');
    say('starting it again, from the index file …');
    const server = await startServer(data.path, submissions);
    let report: DirectoryReport;
    try {
      const pid = server.child.pid!;
      const startupMemory = await memoryOf(pid);
      const warm: StartResult = {
        ms: server.startupMs,
        threads: server.threads,
        threadsMs: server.threadsMs,
        rssMb: startupMemory.rssMb,
        peakRssMb: startupMemory.peakMb,
        otherShare: server.otherShare,
      };
      say(
        `start from the index file: serving after ${(warm.ms / 1000).toFixed(1)} s, ${warm.rssMb.toFixed(0)} MB resident (peak ${warm.peakRssMb.toFixed(0)} MB)`,
      );
      const rare = await rareWord(server.url, options.seed);
      const perCase = options.quick ? { c1Seconds: 1, c32Seconds: 1 } : { c1Seconds: 2, c32Seconds: 3 };
      const specs = cases(rare, options.seed);
      // A round of every case that repeats itself, at concurrency 32, not counted: the figures are
      // the server's steady state, its code compiled and the first full collection after loading
      // (tens of ms, once) behind it. The rotating case is left cold.
      const steady = specs.filter((spec) => spec.rotate === undefined).map((spec) => spec.path);
      await measure(server.url, steady, 32, options.quick ? 1 : 3);
      const runs: RunSummary[] = [];
      let first: CaseResult[] = [];
      for (let run = 1; run <= RUNS; run++) {
        say(`run ${run} of ${RUNS}${run === 1 ? ' (concurrency 1 and 32)' : ' (concurrency 32)'}`);
        const meter = await otherProcessesMeter([pid]);
        const results = await runCases(server, specs, perCase, run === 1);
        const load = await meter.stop();
        if (run === 1) first = results;
        runs.push(summarizeRun(results, load.share));
        say(`run ${run}: other processes used ${load.share === null ? 'an unknown share' : `${(load.share * 100).toFixed(0)} %`} of the machine`);
      }
      say('streaming the export …');
      const exported = await measureExport(server.url, pid);
      const { rssMb: rssAfterMb, peakMb: rssPeakMb } = await memoryOf(pid);
      await server.stop();
      // The library comparison runs with the server stopped: each engine in its own process.
      const library: EngineResult[] = [];
      const perQuery = options.quick ? { count: 20, budgetMs: 1000 } : { count: 200, budgetMs: 5000 };
      for (const engine of ENGINES) {
        say(`building ${engine} over the same records and running the same queries …`);
        const result = await compareEngine(engine, data.path, libraryCases(specs), perQuery.count, perQuery.budgetMs);
        say(`${engine}: built in ${result.buildSeconds.toFixed(1)} s, ${result.rssMb.toFixed(0)} MB resident, ${result.heapMb.toFixed(0)} MB heap`);
        library.push(result);
      }
      report = {
        command: commandText,
        date: new Date().toISOString(),
        quick: options.quick,
        machine: { ...(await describeMachine()), node: process.versions.node },
        dataset: { records: options.records, seed: options.seed, bytes: data.bytes, generateSeconds: data.generateSeconds },
        startup: warm,
        coldStartup: cold,
        cases: first,
        runs,
        export: exported,
        rssAfterMb,
        rssPeakMb,
        library,
        elapsedMs: performance.now() - began,
      };
    } finally {
      await server.stop();
    }
    for (const g of DIRECTORY_REPORT.evaluate(report)) say(`${goalMark(g, DIRECTORY_CONSOLE_MARKS)}: ${g.title}. ${g.detail}`);
    if (options.write) {
      await writeReport(DIRECTORY_REPORT, report);
      say('wrote bench/results/directory.json and bench/RESULTS.md');
    }
    return 0;
  } finally {
    await rm(submissions, { recursive: true, force: true });
  }
}
