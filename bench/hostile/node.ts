/**
 * `mesh bench hostile`, on Node: after the hostile-peer sequence, how long a three-node mining
 * devnet takes to agree on one tip, next to the time it takes after an ordinary new block
 * (cases.ts); writes bench/results/hostile.json and the hostile section of bench/RESULTS.md.
 */
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { integer } from '../../host-node/cli/values.ts';
import { stopAll } from '../../test/mesh-process.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type ResultPaths } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { type HostileRun, hostileRun } from './cases.ts';
import { HOSTILE_REPORT, type HostileReport } from './report.ts';

const hostileOptions = {
  ...runOptions,
  runs: option({ value: 'N', description: 'devnets to attack, each fresh', parse: integer(1, 50), shown: '5; 1 with --quick' }),
  'block-interval-ms': option({ value: 'N', description: "the devnet's block interval", parse: integer(100, 60_000), default: 300 }),
};

export interface HostileBenchOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly runs: number;
  readonly blockIntervalMs: number;
  readonly paths?: ResultPaths;
}

function hostileBenchOptions(values: OptionValues<typeof hostileOptions>): HostileBenchOptions {
  return { ...runFlags(values), runs: values.runs ?? (values.quick ? 1 : 5), blockIntervalMs: values['block-interval-ms'] };
}

export async function runHostileBenchWith(options: HostileBenchOptions, commandText: string): Promise<number> {
  const log = printLine;
  const started = Date.now();
  const source = await sourceState();
  log('mesh bench hostile: time to one tip after the hostile-peer sequence, next to the time after an ordinary block');
  const runs: HostileRun[] = [];
  try {
    for (let i = 0; i < options.runs; i++) {
      const run = await hostileRun({ blockIntervalMs: options.blockIntervalMs, blocks: 5 });
      runs.push(run);
      const after = run.afterAttackMs === null ? 'no tip' : `${run.afterAttackMs} ms`;
      log(`run ${i + 1}: one tip ${after} after ${run.attackMs} ms of attack; baseline ${run.baselineMs} ms`);
    }
  } finally {
    await stopAll();
  }
  const report: HostileReport = {
    command: commandText,
    date: new Date(started).toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    blockIntervalMs: options.blockIntervalMs,
    runs,
    ...(source ? { source } : {}),
    elapsedMs: Date.now() - started,
  };
  await publishReport(HOSTILE_REPORT, report, { write: options.write, log, ...(options.paths && { paths: options.paths }) });
  return 0;
}

export const hostileBenchCommand = command({
  description:
    'After the hostile-peer sequence (junk on every topic, forged transactions, 1 MiB and 3 MiB frames, oversized and stalled request streams, a fresh identity per phase) against one node of a three-node mining devnet, the time until the three agree on one tip, next to the time after an ordinary new block (Node only).',
  options: hostileOptions,
  run: (input) => runHostileBenchWith(hostileBenchOptions(input.options), commandLine(input)),
});
