/**
 * `mesh bench messaging`: app messaging between two node processes on loopback. A directed
 * message's latency from POST /mesh/send on one node to its event on the other's stream, and the
 * messages a second the API carries next to one bare libp2p stream between the same two processes
 * and to the network port's requests alone. Writes bench/results/messaging.json and the messaging
 * section of bench/RESULTS.md.
 */

import { MAX_BATCH_MESSAGES } from '../../core/messaging/messaging.ts';
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { parseCommand } from '../../host-node/cli/run.ts';
import { integer } from '../../host-node/cli/values.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { otherProcessesShare } from '../lib/processes.ts';
import { printLine, publishReport, type ResultPaths } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { median, percentile } from '../lib/timing.ts';
import { latency, startPair, stopPair, throughput } from './cases.ts';
import { MESSAGING_REPORT, type MessagingReport, throughputFigures } from './report.ts';

const messagingOptions = {
  ...runOptions,
  messages: option({
    value: 'N',
    description: 'messages timed one at a time for the latency; 0 skips it',
    parse: integer(0, 100_000),
    shown: '1000; 100 with --quick',
  }),
  count: option({
    value: 'N',
    description: 'messages in each throughput round; 0 skips the throughput',
    parse: integer(0, 1_000_000),
    shown: '20000; 2000 with --quick',
  }),
  rounds: option({ value: 'N', description: 'throughput rounds', parse: integer(1, 50), shown: '3; 1 with --quick' }),
  concurrency: option({ value: 'N', description: 'single POSTs (and network-port requests) in flight at a time', parse: integer(1, 256), default: 32 }),
  batch: option({ value: 'N', description: 'messages in one POST /mesh/send-batch', parse: integer(1, MAX_BATCH_MESSAGES), default: MAX_BATCH_MESSAGES }),
  size: option({ value: 'BYTES', description: 'payload of every message', parse: integer(8, 64 * 1024), default: 1024 }),
};

export interface MessagingBenchOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly messages: number;
  readonly count: number;
  readonly rounds: number;
  readonly concurrency: number;
  readonly batch: number;
  readonly size: number;
  /** Where the results go when written (default bench/RESULTS.md and bench/results/messaging.json). */
  readonly paths?: ResultPaths;
}

function messagingBenchOptions(values: OptionValues<typeof messagingOptions>): MessagingBenchOptions {
  const quick = values.quick;
  return {
    ...runFlags(values),
    messages: values.messages ?? (quick ? 100 : 1_000),
    count: values.count ?? (quick ? 2_000 : 20_000),
    rounds: values.rounds ?? (quick ? 1 : 3),
    concurrency: values.concurrency,
    batch: values.batch,
    size: values.size,
  };
}

/** Parses the arguments after `bench messaging`; throws a UsageError (a RangeError) with a message for the user. */
export function parseMessagingBenchArgs(args: readonly string[]): MessagingBenchOptions {
  return messagingBenchOptions(parseCommand(messagingBenchCommand, args).options);
}

const WARMUP = 20;

/** Runs the benchmark with parsed options; resolves to the exit code. */
export async function runMessagingBenchWith(options: MessagingBenchOptions, command: string): Promise<number> {
  const log = printLine;
  const started = performance.now();
  const source = await sourceState();
  log('== two node processes on loopback');
  const pair = await startPair();
  let latencyPart: MessagingReport['latency'] = null;
  let throughputPart: MessagingReport['throughput'] = null;
  let othersShare: number | null = null;
  try {
    othersShare = (await otherProcessesShare([pair.a.child.pid, pair.b.child.pid], options.quick ? 1_000 : 3_000)).share;
    log(`  other processes kept ${othersShare === null ? '–' : `${Math.round(othersShare * 100)}%`} of the machine busy while the benchmark waited`);
    if (options.messages > 0) {
      log(`\n== latency: ${options.messages} messages of ${options.size} bytes, one at a time`);
      const samples = await latency(pair, options.messages, options.size, WARMUP);
      const events = samples.map((s) => s.eventMs);
      log(`  POST on A → event on B: median ${median(events).toFixed(2)} ms, p99 ${percentile(events, 99).toFixed(2)} ms`);
      latencyPart = { size: options.size, warmup: WARMUP, samples };
    }
    if (options.count > 0) {
      const o = { count: options.count, size: options.size, concurrency: options.concurrency, batch: options.batch };
      log(`\n== throughput: ${o.count} messages of ${o.size} bytes, ${options.rounds} round${options.rounds === 1 ? '' : 's'}`);
      throughputPart = { ...o, rounds: await throughput(pair, o, options.rounds, log) };
      const f = throughputFigures(throughputPart);
      log(
        `  medians: batched ${Math.round(f.batched)}/s, bare stream ${Math.round(f.bare)}/s (${(f.share * 100).toFixed(1)} %), one per POST ${Math.round(f.single)}/s`,
      );
    }
  } catch (error) {
    log(`A's log:\n${pair.a.log()}\nB's log:\n${pair.b.log()}`);
    throw error;
  } finally {
    await stopPair(pair);
  }
  const report: MessagingReport = {
    command,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    othersShare,
    latency: latencyPart,
    throughput: throughputPart,
    ...(source ? { source } : {}),
    elapsedMs: performance.now() - started,
  };
  await publishReport(MESSAGING_REPORT, report, { write: options.write, log, paths: options.paths });
  log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return 0;
}

/** `mesh bench messaging`. */
export const messagingBenchCommand = command({
  description: `App messaging between two node processes on loopback: a directed message from POST /mesh/send on
one to its event on the other's stream, and messages a second through the API next to one bare
libp2p stream between the same two processes and to the network port's requests alone.`,
  options: messagingOptions,
  run: (input) => runMessagingBenchWith(messagingBenchOptions(input.options), commandLine(input)),
});
