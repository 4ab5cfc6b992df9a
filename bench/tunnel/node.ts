/**
 * `mesh bench tunnel`: throughput through a tunnel (TCP → A → libp2p → B → TCP) next to a bare
 * libp2p stream, a raw stream of the network port and loopback TCP, between the same two peer
 * processes in one run. Writes bench/results/tunnel.json and the tunnel section of bench/RESULTS.md.
 */
import { resolve } from 'node:path';
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { parseCommand } from '../../host-node/cli/run.ts';
import { integer } from '../../host-node/cli/values.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { otherProcessesShare } from '../lib/processes.ts';
import { printLine, publishReport, type ResultPaths } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { measureRounds, type Sample, startSetup, stopSetup } from './cases.ts';
import { TUNNEL_REPORT, type TunnelReport } from './report.ts';

const tunnelOptions = {
  ...runOptions,
  runs: option({ value: 'N', description: 'rounds, each case each way once a round', parse: integer(1, 100), shown: '7; 2 with --quick' }),
  mib: option({ value: 'N', description: 'MiB each exchange carries', parse: integer(1, 4096), shown: '64; 8 with --quick' }),
  'cpu-prof': option({ value: 'DIR', description: 'run the peer processes with --cpu-prof, writing their profiles to DIR' }),
};

export interface TunnelBenchOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly runs: number;
  readonly mib: number;
  readonly cpuProfDir: string | null;
  /** Where the results go when written (default bench/RESULTS.md and bench/results/tunnel.json). */
  readonly paths?: ResultPaths;
}

function tunnelBenchOptions(values: OptionValues<typeof tunnelOptions>): TunnelBenchOptions {
  const quick = values.quick;
  return {
    ...runFlags(values),
    runs: values.runs ?? (quick ? 2 : 7),
    mib: values.mib ?? (quick ? 8 : 64),
    cpuProfDir: values['cpu-prof'] === undefined ? null : resolve(values['cpu-prof']),
  };
}

/** Parses the arguments after `bench tunnel`; throws a UsageError (a RangeError) with a message for the user. */
export function parseTunnelBenchArgs(args: readonly string[]): TunnelBenchOptions {
  return tunnelBenchOptions(parseCommand(tunnelBenchCommand, args).options);
}

/** Runs the benchmark with parsed options; resolves to the exit code. */
export async function runTunnelBenchWith(options: TunnelBenchOptions, command: string): Promise<number> {
  const log = printLine;
  const started = performance.now();
  const source = await sourceState();
  const bytes = options.mib * 1024 * 1024;
  log(`== two peers on loopback, A forwarding to B's listeners; ${options.runs} rounds of ${options.mib} MiB each way per case`);
  const setup = await startSetup({ cpuProfDir: options.cpuProfDir });
  let samples: Sample[];
  let othersShare: number | null;
  try {
    othersShare = (await otherProcessesShare([setup.a.pid, setup.b.pid], options.quick ? 500 : 2_000)).share;
    samples = await measureRounds(setup, options.runs, bytes, log);
  } catch (error) {
    log(`A's log:\n${setup.a.log()}\nB's log:\n${setup.b.log()}`);
    throw error;
  } finally {
    await stopSetup(setup);
  }
  const report: TunnelReport = {
    command,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    bytes,
    runs: options.runs,
    othersShare,
    samples,
    ...(source ? { source } : {}),
    elapsedMs: performance.now() - started,
  };
  await publishReport(TUNNEL_REPORT, report, { write: options.write, log, ...(options.paths ? { paths: options.paths } : {}) });
  log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return 0;
}

/** `mesh bench tunnel`. */
export const tunnelBenchCommand = command({
  description: `Throughput through a tunnel (TCP → A → libp2p → B → TCP) next to a bare libp2p stream,
a raw stream of the network port and loopback TCP, between the same two peer processes, each way.`,
  options: tunnelOptions,
  run: (input) => runTunnelBenchWith(tunnelBenchOptions(input.options), commandLine(input)),
});
