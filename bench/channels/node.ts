/**
 * `mesh bench channels`, on Node: receipts per second a payer signs and a host verifies and
 * stores, next to raw Ed25519 (cases.ts), with the crypto a node's channels use (the core's own);
 * writes bench/results/channels.json and the channels section of bench/RESULTS.md.
 */
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { parseCommand } from '../../host-node/cli/run.ts';
import { integer } from '../../host-node/cli/values.ts';
import { watchOthers } from '../ledger/node.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type ResultPaths } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { measureChannels } from './cases.ts';
import { CHANNELS_REPORT, type ChannelsReport, formatRows } from './report.ts';

const channelsOptions = {
  ...runOptions,
  samples: option({ value: 'N', description: 'samples of each measurement', parse: integer(1, 100), shown: '9; 3 with --quick' }),
  receipts: option({ value: 'N', description: 'receipts one at a time in a sample', parse: integer(10, 100_000), shown: '500; 50 with --quick' }),
};

export interface ChannelsBenchOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly samples: number;
  readonly receipts: number;
  /** Where the results go when written (default bench/RESULTS.md and bench/results/channels.json). */
  readonly paths?: ResultPaths;
}

function channelsBenchOptions(values: OptionValues<typeof channelsOptions>): ChannelsBenchOptions {
  return { ...runFlags(values), samples: values.samples ?? (values.quick ? 3 : 9), receipts: values.receipts ?? (values.quick ? 50 : 500) };
}

/** Parses the arguments after `bench channels`; throws a UsageError (a RangeError) for the user. */
export function parseChannelsBenchArgs(args: readonly string[]): ChannelsBenchOptions {
  return channelsBenchOptions(parseCommand(channelsBenchCommand, args).options);
}

/** Runs the benchmark with parsed options; resolves to the exit code. */
export async function runChannelsBenchWith(options: ChannelsBenchOptions, command: string): Promise<number> {
  const log = printLine;
  const started = Date.now();
  const source = await sourceState();
  log('mesh bench channels: receipts signed by a payer and taken by a host, next to raw Ed25519 (Node only)');
  const othersSince = watchOthers();
  const channels = await measureChannels({ samples: options.samples, opsPerSample: options.receipts, log });
  const othersCpu = othersSince();
  log(formatRows(channels.rows));
  const report: ChannelsReport = {
    command,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node, v8: process.versions.v8, openssl: process.versions.openssl },
    channels,
    othersCpu,
    ...(source ? { source } : {}),
    elapsedMs: Date.now() - started,
  };
  await publishReport(CHANNELS_REPORT, report, { write: options.write, log, ...(options.paths && { paths: options.paths }) });
  log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return 0;
}

export const channelsBenchCommand = command({
  description:
    'Receipts per second: a payer node signing and a host node verifying and storing them (its LevelDB), next to raw Ed25519 sign and verify (Node only).',
  options: channelsOptions,
  run: (input) => runChannelsBenchWith(channelsBenchOptions(input.options), commandLine(input)),
});
