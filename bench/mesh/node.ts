/**
 * `mesh bench mesh`: real nodes on loopback. A fresh node catching up a generated chain from a peer
 * next to the same blocks applied from local storage, and the latency of a transfer from one node's
 * POST /transfer to its peer's /transactions/stream next to the POST alone. Writes
 * bench/results/mesh.json and the mesh section of bench/RESULTS.md.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { installNativeCrypto } from '../../host-node/native-crypto.ts';
import { stopAll, stopNode } from '../../test/mesh-process.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type ResultPaths } from '../lib/results.ts';
import { sourceChain } from './chain.ts';
import { applyLocally, catchUpOverNetwork, startServingNode, transferLatency, type CaseOptions, type LocalRun, type NetworkRun } from './cases.ts';
import { MESH_REPORT, type MeshReport } from './report.ts';

export const MESH_USAGE = `Usage: mesh bench mesh [--quick] [--write] [--blocks N] [--runs N] [--transfers N]
                       [--transfers-per-block N] [--block-interval-ms N] [--cache-dir DIR] [--cpu-prof DIR]

  Real mesh nodes on loopback: a fresh node catching up a generated chain from a peer (next to
  applying the same blocks from local storage), and transfer latency from one node's POST /transfer
  to its peer's /transactions/stream (next to the POST's own round trip).

  --quick                  1,000 blocks, 1 run, 20 transfers; results written only with --write
  --write                  write bench/results/mesh.json and bench/RESULTS.md after a --quick run
  --blocks N               blocks in the generated chain (default 10000; 0 skips the catch-up)
  --runs N                 catch-up runs, local and network each (default 3)
  --transfers N            measured transfers (default 200; 0 skips the latency case)
  --transfers-per-block N  transfers in each generated block (default 20)
  --block-interval-ms N    the devnet's block interval, for the chain and every node (default 1000)
  --cache-dir DIR          where generated chains are kept between runs (default the temp directory)
  --cpu-prof DIR           run the node processes with --cpu-prof, writing their profiles to DIR
`;

export interface MeshBenchOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly blocks: number;
  readonly runs: number;
  readonly transfers: number;
  readonly transfersPerBlock: number;
  readonly blockIntervalMs: number;
  readonly cacheDir: string;
  readonly cpuProfDir: string | null;
  /** Where the results go when written (default bench/RESULTS.md and bench/results/mesh.json). */
  readonly paths?: ResultPaths;
}

/** Parses the arguments after `bench mesh`; throws a RangeError with a message for the user. */
export function parseMeshBenchArgs(args: readonly string[]): MeshBenchOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        quick: { type: 'boolean', default: false },
        write: { type: 'boolean', default: false },
        blocks: { type: 'string' },
        runs: { type: 'string' },
        transfers: { type: 'string' },
        'transfers-per-block': { type: 'string' },
        'block-interval-ms': { type: 'string' },
        'cache-dir': { type: 'string', default: tmpdir() },
        'cpu-prof': { type: 'string' },
      },
    }));
  } catch (error) {
    throw new RangeError((error as Error).message);
  }
  const count = (flag: string, text: string | undefined, fallback: number, min: number, max: number): number => {
    if (text === undefined) return fallback;
    if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
      throw new RangeError(`--${flag} takes an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
    }
    return Number(text);
  };
  const quick = values.quick;
  return {
    quick,
    write: values.write || !quick,
    blocks: count('blocks', values.blocks, quick ? 1_000 : 10_000, 0, 1_000_000),
    runs: count('runs', values.runs, quick ? 1 : 3, 1, 50),
    transfers: count('transfers', values.transfers, quick ? 20 : 200, 0, 100_000),
    transfersPerBlock: count('transfers-per-block', values['transfers-per-block'], 20, 0, 1_000),
    blockIntervalMs: count('block-interval-ms', values['block-interval-ms'], 1_000, 10, 600_000),
    cacheDir: values['cache-dir'],
    cpuProfDir: values['cpu-prof'] === undefined ? null : resolve(values['cpu-prof']),
  };
}

const s = (ms: number | null): string => (ms === null ? '–' : `${(ms / 1000).toFixed(2)} s`);

/** Runs the benchmark with parsed options; resolves to the exit code. */
export async function runMeshBenchWith(options: MeshBenchOptions, command: string): Promise<number> {
  const log = printLine;
  const started = performance.now();
  // The local replay runs in this process: with the hasher the node processes install.
  installNativeCrypto();
  const source = await sourceState();
  const caseOptions: CaseOptions = {
    log,
    ...(options.cpuProfDir === null ? {} : { nodeEnv: { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${options.cpuProfDir}` } }),
  };
  let catchUp: MeshReport['catchUp'] = null;
  let latency: MeshReport['latency'] = null;
  try {
    if (options.blocks > 0) {
      const chain = await sourceChain(
        { blocks: options.blocks, transfersPerBlock: options.transfersPerBlock, blockIntervalMs: options.blockIntervalMs, cacheDir: options.cacheDir },
        log,
      );
      log(`\n== catch-up: ${chain.info.blocks.toLocaleString('en-US')} blocks, ${chain.info.txs.toLocaleString('en-US')} transactions`);
      const serving = await startServingNode(chain, caseOptions);
      const local: LocalRun[] = [];
      const network: NetworkRun[] = [];
      try {
        for (let run = 1; run <= options.runs; run++) {
          const l = await applyLocally(chain, await mkdtemp(join(tmpdir(), 'mesh-bench-local-')));
          local.push(l);
          log(
            `  run ${run}: local ${s(l.totalMs)} (read ${s(l.readMs)}, addBranch ${s(l.applyMs)}; CPU ${s(l.cpuMs)}, ` +
              `other processes ${s(l.othersCpuMs)})`,
          );
          const n = await catchUpOverNetwork(serving, chain, caseOptions);
          network.push(n);
          log(
            `  run ${run}: network ${s(n.syncMs)} after a start-up of ${s(n.startupMs)} (CPU: syncing node ` +
              `${s(n.syncingCpuMs)}, serving node ${s(n.servingCpuMs)}, other processes ${s(n.othersCpuMs)})`,
          );
        }
      } finally {
        await stopNode(serving);
        await rm(serving.dataDir, { recursive: true, force: true });
      }
      catchUp = { chain: chain.info, local, network };
    }
    if (options.transfers > 0) {
      log(`\n== transfer latency: ${options.transfers} transfers`);
      latency = await transferLatency(options.transfers, options.blockIntervalMs, caseOptions, options.quick ? 5 : 10);
    }
  } finally {
    await stopAll();
  }

  const report: MeshReport = {
    command,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    catchUp,
    latency,
    ...(source ? { source } : {}),
    elapsedMs: performance.now() - started,
  };
  await publishReport(MESH_REPORT, report, { write: options.write, log, paths: options.paths });
  if (options.cpuProfDir !== null) log(`node profiles in ${options.cpuProfDir}`);
  log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return 0;
}

/** Runs `mesh bench mesh …`; resolves to the exit code. */
export async function runMeshBench(args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(MESH_USAGE);
    return 0;
  }
  let options: MeshBenchOptions;
  try {
    options = parseMeshBenchArgs(args);
  } catch (error) {
    process.stderr.write(`mesh bench mesh: ${(error as Error).message}\n\n${MESH_USAGE}`);
    return 2;
  }
  return runMeshBenchWith(options, ['npx mesh bench mesh', ...args].join(' '));
}
