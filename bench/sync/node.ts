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
  const rounds = options.quick ? 1 : 3;
  const heal: SyncRun[] = [];
  const catchUp: SyncRun[] = [];
  log(`mesh bench sync: a partition of ${depth.toLocaleString('en-US')} blocks, ${rounds} run(s) each of heal and catch-up, in turns`);
  const serving = await startServing(chains);
  try {
    for (let i = 0; i < rounds; i++) {
      const c = await syncToLonger(serving, chains, 'scratch', log);
      log(`  catch-up ${(c.syncMs / 1000).toFixed(1)} s`);
      catchUp.push(c);
      const h = await syncToLonger(serving, chains, 'shorter', log);
      log(`  heal     ${(h.syncMs / 1000).toFixed(1)} s`);
      heal.push(h);
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
