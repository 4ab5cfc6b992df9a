/**
 * `mesh bench netgraph`, on Node: the measurement layer's bytes per node per minute at 3 and 10
 * real nodes on loopback, next to the same nodes without it (cases.ts); writes
 * bench/results/netgraph.json and the netgraph section of bench/RESULTS.md.
 */

import { PING_INTERVAL_MS } from '../../core/netgraph/peer-pings.ts';
import { command, list, type OptionValues, option } from '../../host-node/cli/command.ts';
import { parseCommand } from '../../host-node/cli/run.ts';
import { integer } from '../../host-node/cli/values.ts';
import { stopAll } from '../../test/mesh-process.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type ResultPaths } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { measureTraffic } from './cases.ts';
import { NETGRAPH_REPORT, type NetgraphReport, type SizeResult } from './report.ts';

/** Pings a day apart: no round, sample or coordinate falls in any window. */
const OFF_MS = 86_400_000;

const netgraphOptions = {
  ...runOptions,
  nodes: list({ value: 'N', description: 'a mesh size to measure (repeatable; default 3 and 10)', parse: integer(2, 30) }),
  'window-s': option({ value: 'S', description: 'seconds over which the bytes are counted, per run', parse: integer(5, 3_600), shown: '90; 20 with --quick' }),
  'warmup-s': option({ value: 'S', description: 'seconds the nodes run before the window', parse: integer(0, 600), shown: '20; 8 with --quick' }),
  'block-interval-ms': option({ value: 'N', description: "the devnet's block interval", parse: integer(100, 600_000), default: 5_000 }),
};

export interface NetgraphBenchOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly nodes: number[];
  readonly windowMs: number;
  readonly warmupMs: number;
  readonly blockIntervalMs: number;
  readonly paths?: ResultPaths;
}

function netgraphBenchOptions(values: OptionValues<typeof netgraphOptions>): NetgraphBenchOptions {
  const quick = values.quick;
  return {
    ...runFlags(values),
    nodes: values.nodes.length > 0 ? [...new Set(values.nodes)] : [3, 10],
    windowMs: 1000 * (values['window-s'] ?? (quick ? 20 : 90)),
    warmupMs: 1000 * (values['warmup-s'] ?? (quick ? 8 : 20)),
    blockIntervalMs: values['block-interval-ms'],
  };
}

export function parseNetgraphBenchArgs(args: readonly string[]): NetgraphBenchOptions {
  return netgraphBenchOptions(parseCommand(netgraphBenchCommand, args).options);
}

export async function runNetgraphBenchWith(options: NetgraphBenchOptions, commandText: string): Promise<number> {
  const log = printLine;
  const started = Date.now();
  const source = await sourceState();
  log('mesh bench netgraph: TCP bytes per node per minute with the measurement layer, next to the same nodes without it');
  const sizes: SizeResult[] = [];
  try {
    for (const nodes of options.nodes) {
      const common = { nodes, warmupMs: options.warmupMs, windowMs: options.windowMs, blockIntervalMs: options.blockIntervalMs, log };
      const measuring = await measureTraffic({ ...common, pingIntervalMs: PING_INTERVAL_MS });
      const off = await measureTraffic({ ...common, pingIntervalMs: OFF_MS });
      sizes.push({ nodes, measuring, off });
    }
  } finally {
    await stopAll();
  }
  const report: NetgraphReport = {
    command: commandText,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    blockIntervalMs: options.blockIntervalMs,
    sizes,
    ...(source ? { source } : {}),
    elapsedMs: Date.now() - started,
  };
  await publishReport(NETGRAPH_REPORT, report, { write: options.write, log, ...(options.paths && { paths: options.paths }) });
  return 0;
}

export const netgraphBenchCommand = command({
  description:
    "The measurement layer's cost: TCP bytes per node per minute of real nodes on loopback (3 and 10) with the default pings, link samples and coordinates, next to the same nodes with pings a day apart (Node only).",
  options: netgraphOptions,
  run: (input) => runNetgraphBenchWith(netgraphBenchOptions(input.options), commandLine(input)),
});
