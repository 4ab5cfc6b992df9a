/**
 * `mesh bench coords`, on Node: the PlanetLab and Seattle RTT matrices replayed through the
 * network-coordinate code (cases.ts), each figure next to the median-RTT baseline; writes
 * bench/results/coords.json and the coords section of bench/RESULTS.md.
 */
import { loadSharedData } from '#shared-data';
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { parseCommand } from '../../host-node/cli/run.ts';
import { integer } from '../../host-node/cli/values.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type ResultPaths } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { type Dataset, measureCoords } from './cases.ts';
import { COORDS_REPORT, type CoordsReport } from './report.ts';

const coordsOptions = {
  ...runOptions,
  rounds: option({ value: 'N', description: 'rounds in which every host measures --peers peers', parse: integer(1, 100_000), shown: '200; 50 with --quick' }),
  peers: option({ value: 'N', description: 'peers each host measures per round', parse: integer(1, 64), shown: '4' }),
  runs: option({ value: 'N', description: 'runs of each replay, seeds 1 to N', parse: integer(1, 20), shown: '3; 1 with --quick' }),
};

export interface CoordsBenchOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly rounds: number;
  readonly peers: number;
  readonly runs: number;
  /** Where the results go when written (default bench/RESULTS.md and bench/results/coords.json). */
  readonly paths?: ResultPaths;
  /** Other matrices than PlanetLab's and Seattle's (tests). */
  readonly datasets?: readonly Dataset[];
  /** Where files are read from (tests: a table of their own); default loadSharedData. */
  readonly load?: (file: string) => Promise<Uint8Array>;
}

function coordsBenchOptions(values: OptionValues<typeof coordsOptions>): CoordsBenchOptions {
  return { ...runFlags(values), rounds: values.rounds ?? (values.quick ? 50 : 200), peers: values.peers ?? 4, runs: values.runs ?? (values.quick ? 1 : 3) };
}

/** Parses the arguments after `bench coords`; throws a UsageError (a RangeError) for the user. */
export function parseCoordsBenchArgs(args: readonly string[]): CoordsBenchOptions {
  return coordsBenchOptions(parseCommand(coordsBenchCommand, args).options);
}

/** Rounds after which the error is also taken: how fast the coordinates settle. */
export const CHECKPOINTS = [10, 25, 50, 100];

/** Runs the benchmark with parsed options; resolves to the exit code. */
export async function runCoordsBenchWith(options: CoordsBenchOptions, commandText: string): Promise<number> {
  const log = printLine;
  const started = Date.now();
  const source = await sourceState();
  log('mesh bench coords: measured RTT matrices replayed through Vivaldi, next to predicting every pair by the median RTT (Node only)');
  const result = await measureCoords({
    rounds: options.rounds,
    peersPerRound: options.peers,
    seeds: Array.from({ length: options.runs }, (_, i) => i + 1),
    checkpoints: CHECKPOINTS,
    load: options.load ?? ((file) => loadSharedData(file)),
    log,
    ...(options.datasets && { datasets: options.datasets }),
  });
  const report: CoordsReport = {
    command: commandText,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node, v8: process.versions.v8 },
    result,
    ...(source ? { source } : {}),
    elapsedMs: Date.now() - started,
  };
  await publishReport(COORDS_REPORT, report, { write: options.write, log, ...(options.paths && { paths: options.paths }) });
  return 0;
}

export const coordsBenchCommand = command({
  description:
    'The PlanetLab (490 hosts) and Seattle (99 hosts) RTT matrices replayed through the network coordinates: median and 90th-percentile relative error of the predicted RTTs, next to predicting every pair by the median RTT (Node only).',
  options: coordsOptions,
  run: (input) => runCoordsBenchWith(coordsBenchOptions(input.options), commandLine(input)),
});
