/**
 * `mesh bench sync`, on Node: a partition of 10,000 blocks healing next to the catch-up of the same
 * blocks from scratch, and a mining node's block rate under a sync-request flood from four
 * identities next to its rate without it; writes bench/results/sync.json and the sync section of
 * bench/RESULTS.md.
 */
import { command } from '../../host-node/cli/command.ts';
import { stopNode } from '../../test/mesh-process.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type ResultPaths, type RunOptions } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { measureFlood, type SyncRun, startServing, syncToLonger } from './cases.ts';
import { forkedChains } from './chains.ts';
import { SYNC_REPORT, type SyncReport } from './report.ts';

/** Runs `mesh bench sync`; resolves to the exit code. */
export async function runSyncBench(options: RunOptions & { readonly paths?: ResultPaths }): Promise<number> {
  const log = printLine;
  const started = Date.now();
  const source = await sourceState();
  const depth = options.quick ? 1_000 : 10_000;
  const chains = await forkedChains({ shared: 40, longer: depth, shorter: depth - 10, transfersPerBlock: 5, blockIntervalMs: 500 }, log);
  // Pairs of runs, one of each, taken back to back: the machine's other work moves both alike, and
  // the median of the pairs' ratios is what the goal is judged on.
  const rounds = options.quick ? 1 : 5;
  const heal: SyncRun[] = [];
  const catchUp: SyncRun[] = [];
  log(`mesh bench sync: a partition of ${depth.toLocaleString('en-US')} blocks, ${rounds} pair(s) of a heal and a catch-up`);
  const serving = await startServing(chains);
  try {
    for (let i = 0; i < rounds; i++) {
      // Each pair in the other order from the last, so neither kind always goes first.
      for (const from of i % 2 === 0 ? (['scratch', 'shorter'] as const) : (['shorter', 'scratch'] as const)) {
        const run = await syncToLonger(serving, chains, from, log);
        log(`  ${from === 'shorter' ? 'heal    ' : 'catch-up'} ${(run.syncMs / 1000).toFixed(1)} s`);
        (from === 'shorter' ? heal : catchUp).push(run);
      }
      log(`  pair ${i + 1}: ${(heal[i]!.syncMs / catchUp[i]!.syncMs).toFixed(2)}×`);
    }
  } finally {
    await stopNode(serving);
  }
  log('sync flood:');
  const flood = await measureFlood(chains, { windowMs: options.quick ? 10_000 : 30_000, concurrency: 8, log });
  log(`  ${flood.baselineBlocks} blocks alone, ${flood.floodBlocks} under the flood`);
  const report: SyncReport = {
    command: options.command,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    chains: chains.info,
    heal,
    catchUp,
    flood,
    ...(source ? { source } : {}),
    elapsedMs: Date.now() - started,
  };
  await publishReport(SYNC_REPORT, report, { write: options.write, log, ...(options.paths && { paths: options.paths }) });
  return 0;
}

export const syncBenchCommand = command({
  description:
    'A partition of 10,000 blocks healing next to the catch-up of the same blocks from scratch; block production under a sync-request flood from 4 identities next to without (Node only).',
  options: runOptions,
  run: (input) => runSyncBench({ ...runFlags(input.options), command: commandLine(input) }),
});
