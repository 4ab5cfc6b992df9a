/**
 * `mesh bench sim`, on Node: the simulator at scale (docs/sim.md, docs/scale.md). Runs the mesh at
 * each size for the simulated span asked for, each in a process of its own, then the fault scenario
 * (churn and a partition of a third) over many seeds, each seed a `mesh sim` process; writes bench/results/sim.json and the
 * "Simulation" section of bench/RESULTS.md.
 */
import { execFile, spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { SimReport } from '../../core/sim/run.ts';
import { command, list, type OptionValues, option } from '../../host-node/cli/command.ts';
import { parseCommand } from '../../host-node/cli/run.ts';
import { duration } from '../../host-node/cli/sim.ts';
import { integer } from '../../host-node/cli/values.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type ResultPaths } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { type FaultRuns, overheadPerNode, type ScaleRun, SIM_REPORT, type SimBenchReport } from './report.ts';
import type { SizeRun } from './size-run.ts';

const simOptions = {
  ...runOptions,
  nodes: list({ value: 'N', description: 'a mesh size to run (repeatable; default 100, 300 and 1000; 30 with --quick)', parse: integer(2, 100_000) }),
  duration: option({ value: 'SPAN', description: 'simulated time of each size', parse: duration, shown: '1h; 5m with --quick' }),
  seeds: option({ value: 'N', description: 'seeds of the fault scenario; 0 skips it', parse: integer(0, 10_000), shown: '100; 3 with --quick' }),
  'fault-nodes': option({ value: 'N', description: 'nodes of the fault scenario', parse: integer(2, 100_000), shown: '20' }),
  jobs: option({ value: 'N', description: 'fault runs at once, each a process', parse: integer(1, 256), shown: "the machine's cores" }),
  'fault-duration': option({
    value: 'SPAN',
    description: 'simulated time of each fault run (the partition starts at a third of it)',
    parse: duration,
    shown: '30m; 6m with --quick',
  }),
};

export interface SimBenchOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly nodes: readonly number[];
  readonly durationMs: number;
  readonly seeds: number;
  readonly faultNodes: number;
  readonly faultDurationMs: number;
  readonly jobs: number;
  readonly paths?: ResultPaths;
}

function simBenchOptions(values: OptionValues<typeof simOptions>): SimBenchOptions {
  const quick = values.quick;
  return {
    ...runFlags(values),
    nodes: values.nodes.length > 0 ? [...new Set(values.nodes)] : quick ? [30] : [100, 300, 1_000],
    durationMs: values.duration ?? (quick ? 5 * 60_000 : 3_600_000),
    seeds: values.seeds ?? (quick ? 3 : 100),
    faultNodes: values['fault-nodes'] ?? 20,
    faultDurationMs: values['fault-duration'] ?? (quick ? 6 * 60_000 : 30 * 60_000),
    jobs: values.jobs ?? availableParallelism(),
  };
}

export function parseSimBenchArgs(args: readonly string[]): SimBenchOptions {
  return simBenchOptions(parseCommand(simBenchCommand, args).options);
}

/** The churn and the partition of the fault scenario: a fifth of the nodes an hour, and a third parted for 10 minutes (or a third of a shorter run). */
export function faultScenario(durationMs: number): Pick<FaultRuns, 'churnPerHour' | 'partition'> {
  const forMs = Math.min(10 * 60_000, Math.floor(durationMs / 3));
  return { churnPerHour: 0.2, partition: { atMs: Math.floor(durationMs / 3), forMs, share: 0.33 } };
}

const MESH = fileURLToPath(new URL('../../bin/mesh.js', import.meta.url));

/** What `mesh ARGS` prints, run under this Node; rejects when it fails. */
function meshOutput(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [MESH, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 }, (error, stdout, stderr) =>
      error ? reject(new Error(`mesh ${args.join(' ')}: ${error.message}\n${stderr}`)) : resolve(stdout),
    ),
  );
}

const SIZE_RUN = fileURLToPath(new URL('./size-run.ts', import.meta.url));

/** Runs one size in a process of its own (size-run.ts), its progress passed on to this one's stderr. */
function measured(nodes: number, durationMs: number, seed: string): Promise<SizeRun> {
  const args = ['--max-old-space-size=16384', SIZE_RUN, String(nodes), String(durationMs), seed];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code !== 0) return reject(new Error(`the run of ${nodes} nodes ended with ${code ?? signal}`));
      try {
        resolve(JSON.parse(Buffer.concat(out).toString('utf8')) as SizeRun);
      } catch (error) {
        reject(new Error(`the run of ${nodes} nodes printed no report: ${String(error)}`));
      }
    });
  });
}

export async function runSimBenchWith(options: SimBenchOptions, commandText: string): Promise<number> {
  const log = printLine;
  const started = Date.now();
  const source = await sourceState();
  log('mesh bench sim: the mesh in the simulator at scale, each size alone, then the fault seeds on every core');
  const scale: ScaleRun[] = [];
  for (const nodes of options.nodes) {
    log(`  ${nodes} nodes for ${options.durationMs / 60_000} simulated min…`);
    const { report, wallMs, peakRssBytes } = await measured(nodes, options.durationMs, 'bench');
    const f = report.figures;
    const run: ScaleRun = {
      nodes,
      durationMs: options.durationMs,
      wallMs: Math.round(wallMs),
      peakRssBytes,
      invariantsHeld: report.invariants.every((i) => i.held),
      to99: f.propagationMs.to99,
      blocksShort: f.propagationMs.blocksShort,
      forksPerHour: f.forksPerHour,
      bytesPerNodePerSec: f.bytesPerNodePerSec,
    };
    scale.push(run);
    log(
      `    wall ${(wallMs / 1000).toFixed(0)} s, peak RSS ${(peakRssBytes / 2 ** 30).toFixed(2)} GiB; block to 99 % p99 ${run.to99.p99 ?? '–'} ms; ` +
        `overhead ${(overheadPerNode(run.bytesPerNodePerSec) / 1000).toFixed(2)} kB/s per node; invariants ${run.invariantsHeld ? 'held' : 'BROKE'}`,
    );
  }
  let faults: FaultRuns | null = null;
  if (options.seeds > 0) {
    const scenario = faultScenario(options.faultDurationMs);
    const broke: { seed: string; invariants: string[] }[] = [];
    const healMs: (number | null)[] = new Array(options.seeds).fill(null);
    log(
      `  the fault scenario: ${options.seeds} seeds of ${options.faultNodes} nodes for ${options.faultDurationMs / 60_000} simulated min, ${options.jobs} at a time…`,
    );
    const { partition } = scenario;
    const args = (seed: string): string[] => [
      ...['sim', '--nodes', String(options.faultNodes), '--duration', `${options.faultDurationMs / 1000}s`, '--seed', seed],
      ...['--churn', String(scenario.churnPerHour), '--partition', `${partition.atMs / 1000}s:${partition.forMs / 1000}s:${partition.share}`, '--json'],
    ];
    // Each seed is a `mesh sim` process of its own: the runs are independent, and the cores share them.
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < options.seeds; i = next++) {
        const seed = `fault-${i + 1}`;
        const report = JSON.parse(await meshOutput(args(seed))) as SimReport;
        const bad = report.invariants.filter((inv) => !inv.held).map((inv) => inv.name);
        if (bad.length > 0) broke.push({ seed, invariants: bad });
        healMs[i] = report.figures.healMs[0] ?? null;
        log(`    seed ${seed}: ${bad.length === 0 ? 'held' : `BROKE ${bad.join(', ')}`}, heal ${report.figures.healMs[0] ?? 'not within the run'} ms`);
      }
    };
    await Promise.all(Array.from({ length: Math.min(options.jobs, options.seeds) }, worker));
    broke.sort((a, b) => Number(a.seed.slice(6)) - Number(b.seed.slice(6)));
    faults = { nodes: options.faultNodes, durationMs: options.faultDurationMs, ...scenario, seeds: options.seeds, broke, healMs };
  }
  const report: SimBenchReport = {
    command: commandText,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    scale,
    faults,
    ...(source ? { source } : {}),
    elapsedMs: Date.now() - started,
  };
  await publishReport(SIM_REPORT, report, { write: options.write, log, ...(options.paths && { paths: options.paths }) });
  return 0;
}

export const simBenchCommand = command({
  description:
    'The mesh in the simulator at scale (docs/scale.md): 100, 300 and 1,000 nodes for a simulated hour over PlanetLab latencies (wall time, memory, block propagation, overhead per node), then churn and a partition of a third over 100 seeds (Node only; each size a process alone, then the seeds a process per core).',
  options: simOptions,
  run: (input) => runSimBenchWith(simBenchOptions(input.options), commandLine(input)),
});
