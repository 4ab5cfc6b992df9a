/**
 * `mesh bench punch`: hole punching between the two cone NATs of the NAT lab over WebRTC (the
 * share of attempts that end direct, and how long they take), and throughput on the direct and
 * the relayed connection, each next to a bare libp2p stream on the same connection. Needs root
 * (the lab's namespaces). Writes bench/results/punch.json and the punch section of bench/RESULTS.md.
 */
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { integer } from '../../host-node/cli/values.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { type Attempt, measureThroughput, punchAttempts, type Sample, startSetup, stopSetup } from './cases.ts';
import { PUNCH_REPORT, type PunchReport } from './report.ts';

const punchOptions = {
  ...runOptions,
  attempts: option({ value: 'N', description: 'hole-punching attempts', parse: integer(1, 1000), shown: '50; 5 with --quick' }),
  runs: option({ value: 'N', description: 'throughput rounds, each case on each path once a round', parse: integer(1, 100), shown: '5; 2 with --quick' }),
  // A relayed connection may carry 16 MiB (RelayLimits), and each exchange on one has a fresh circuit.
  mib: option({ value: 'N', description: 'MiB each exchange carries', parse: integer(1, 12), shown: '8; 2 with --quick' }),
};

export interface PunchBenchOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly attempts: number;
  readonly runs: number;
  readonly mib: number;
}

function punchBenchOptions(values: OptionValues<typeof punchOptions>): PunchBenchOptions {
  const quick = values.quick;
  return {
    ...runFlags(values),
    attempts: values.attempts ?? (quick ? 5 : 50),
    runs: values.runs ?? (quick ? 2 : 5),
    mib: values.mib ?? (quick ? 2 : 8),
  };
}

async function runPunchBench(options: PunchBenchOptions, command: string): Promise<number> {
  const log = printLine;
  const started = performance.now();
  const source = await sourceState();
  log('== the NAT lab: a relay with STUN, A and B behind cone NATs, C behind a symmetric NAT');
  const setup = await startSetup();
  let attempts: Attempt[];
  let samples: Sample[];
  try {
    log(`== ${options.attempts} hole-punching attempts, A to B`);
    attempts = await punchAttempts(setup, options.attempts, log);
    log(`== throughput: ${options.runs} rounds, ${options.mib} MiB an exchange`);
    samples = await measureThroughput(setup, options.runs, options.mib * 1024 * 1024, log);
  } catch (error) {
    log(`A's log:\n${setup.a.log()}\nB's log:\n${setup.b.log()}\nC's log:\n${setup.c.log()}`);
    throw error;
  } finally {
    await stopSetup(setup);
  }
  const report: PunchReport = {
    command,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    attempts,
    runs: options.runs,
    bytes: options.mib * 1024 * 1024,
    samples,
    ...(source ? { source } : {}),
    elapsedMs: performance.now() - started,
  };
  await publishReport(PUNCH_REPORT, report, { write: options.write, log });
  log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return 0;
}

/** `mesh bench punch`. */
export const punchBenchCommand = command({
  description: `Hole punching over WebRTC between the two cone NATs of the NAT lab (needs root): the share of attempts
that end on a direct connection, and throughput on the direct and the relayed connection next to a bare libp2p stream.`,
  options: punchOptions,
  run: (input) => runPunchBench(punchBenchOptions(input.options), commandLine(input)),
});
