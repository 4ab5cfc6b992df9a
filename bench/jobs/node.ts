/**
 * `mesh bench jobs`: the compute market on real nodes and a real container engine. A job's bid to
 * its container running on the host next to a bare create + start through the same engine, its
 * container's exit to the block that settles it, and a batch of jobs at once on one host with its
 * balances checked to the base unit. Writes bench/results/jobs.json and the jobs section of
 * bench/RESULTS.md.
 */
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { parseCommand } from '../../host-node/cli/run.ts';
import { integer } from '../../host-node/cli/values.ts';
import { stopAll } from '../../test/mesh-process.ts';
import { TEST_IMAGE } from '../../test/podman.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type ResultPaths } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import {
  bareBatch,
  JOB_BID,
  JOB_CMD,
  JOB_CORES,
  JOB_DURATION_SECS,
  JOB_MEM_MB,
  jobBatch,
  POLL_MS,
  quietShare,
  sequentialRuns,
  startSetup,
  stopSetup,
} from './cases.ts';
import { JOBS_REPORT, type JobsReport } from './report.ts';

const jobsOptions = {
  ...runOptions,
  runs: option({
    value: 'N',
    description: 'jobs and bare containers timed one at a time, of each; 0 skips them',
    parse: integer(0, 200),
    shown: '9; 3 with --quick',
  }),
  concurrent: option({
    value: 'N',
    description: 'jobs bid at once on one host (and bare containers started at once); 0 skips the batch',
    parse: integer(0, 200),
    shown: '20; 4 with --quick',
  }),
  'block-interval-ms': option({ value: 'N', description: "the devnet's block interval", parse: integer(100, 60_000), default: 1_000 }),
};

export interface JobsBenchOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly runs: number;
  readonly concurrent: number;
  readonly blockIntervalMs: number;
  /** Where the results go when written (default bench/RESULTS.md and bench/results/jobs.json). */
  readonly paths?: ResultPaths;
}

/** The benchmark's settings from its options: --quick makes the defaults small. */
function jobsBenchOptions(values: OptionValues<typeof jobsOptions>): JobsBenchOptions {
  const quick = values.quick;
  return {
    ...runFlags(values),
    runs: values.runs ?? (quick ? 3 : 9),
    concurrent: values.concurrent ?? (quick ? 4 : 20),
    blockIntervalMs: values['block-interval-ms'],
  };
}

/** Parses the arguments after `bench jobs`; throws a UsageError (a RangeError) with a message for the user. */
export function parseJobsBenchArgs(args: readonly string[]): JobsBenchOptions {
  return jobsBenchOptions(parseCommand(jobsBenchCommand, args).options);
}

/** Runs the benchmark with parsed options; resolves to the exit code. */
export async function runJobsBenchWith(options: JobsBenchOptions, command: string): Promise<number> {
  const log = printLine;
  const started = performance.now();
  const source = await sourceState();
  log(`== a payer and a host (block interval ${options.blockIntervalMs} ms) on the Podman service`);
  const setup = await startSetup({ blockIntervalMs: options.blockIntervalMs, concurrent: options.concurrent, log });
  let sequential: JobsReport['sequential'] = null;
  let batch: JobsReport['batch'] = null;
  let othersShare: number | null = null;
  try {
    othersShare = await quietShare(setup, options.quick ? 1_000 : 3_000);
    log(`  other processes kept ${othersShare === null ? '–' : `${Math.round(othersShare * 100)}%`} of the machine busy while the benchmark waited`);
    if (options.runs > 0) {
      log(`\n== bid → running and exit → settled: ${options.runs} jobs and ${options.runs} bare containers, one at a time`);
      sequential = await sequentialRuns(setup, options.runs, 1);
    }
    if (options.concurrent > 0) {
      log(`\n== ${options.concurrent} at once`);
      const bare = await bareBatch(setup, options.concurrent);
      log(
        `  ${options.concurrent} bare containers: all started in ${(bare.allStartedMs / 1000).toFixed(2)} s, all exited in ${(bare.allExitedMs / 1000).toFixed(2)} s`,
      );
      const jobs = await jobBatch(setup, options.concurrent, options.quick ? 2_000 : 5_000);
      log(
        `  ${options.concurrent} jobs: all running in ${(jobs.allRunningMs / 1000).toFixed(2)} s, all settled in ${(jobs.allSettledMs / 1000).toFixed(2)} s after the first bid`,
      );
      batch = { bare, jobs };
    }
  } catch (error) {
    log(`payer's log:\n${setup.payer.log()}\nhost's log:\n${setup.host.log()}`);
    throw error;
  } finally {
    await stopSetup(setup);
    await stopAll();
  }
  const report: JobsReport = {
    command,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    engine: { engine: setup.engine.engine, runtime: setup.engine.runtime, sandboxed: setup.engine.sandboxed },
    blockIntervalMs: options.blockIntervalMs,
    job: { image: TEST_IMAGE, cmd: JOB_CMD, cpuCores: JOB_CORES, memMb: JOB_MEM_MB, bid: JOB_BID.toString(), durationSecs: JOB_DURATION_SECS },
    pollMs: POLL_MS,
    othersShare,
    sequential,
    batch,
    ...(source ? { source } : {}),
    elapsedMs: performance.now() - started,
  };
  await publishReport(JOBS_REPORT, report, { write: options.write, log, paths: options.paths });
  log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return 0;
}

/** `mesh bench jobs`. */
export const jobsBenchCommand = command({
  description: `The compute market on a payer and a host node (devnet) and the Podman service: bid to the
container running on the host next to a bare create + start through the same engine, the
container's exit to the block holding its JobSettle, and a batch of jobs at once on one host with
exact balances, its wall time and CPU time.`,
  options: jobsOptions,
  run: (input) => runJobsBenchWith(jobsBenchOptions(input.options), commandLine(input)),
});
