/**
 * `mesh bench mesh`: real nodes on loopback. A fresh node catching up a generated chain from a peer
 * next to the same blocks' signatures checked alone and applied from local storage, the serving
 * node replaying the chain on /blocks/stream next to the same objects read from the store, and the
 * latency of a transfer from one node's POST /transfer to its peer's /transactions/stream next to
 * the POST alone. Writes
 * bench/results/mesh.json and the mesh section of bench/RESULTS.md.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { parseCommand } from '../../host-node/cli/run.ts';
import { integer } from '../../host-node/cli/values.ts';
import { nodeCrypto } from '../../host-node/native-crypto.ts';
import { stopAll, stopNode } from '../../test/mesh-process.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type ResultPaths } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import {
  applyLocally,
  type CaseOptions,
  catchUpOverNetwork,
  checkSignaturesAlone,
  type LocalRun,
  type NetworkRun,
  type ReplayRun,
  replayRun,
  type SignatureRun,
  startServingNode,
  transferLatency,
} from './cases.ts';
import { sourceChain } from './chain.ts';
import { MESH_REPORT, type MeshReport } from './report.ts';

const meshOptions = {
  ...runOptions,
  blocks: option({
    value: 'N',
    description: 'blocks in the generated chain; 0 skips the catch-up',
    parse: integer(0, 1_000_000),
    shown: '10000; 1000 with --quick',
  }),
  runs: option({ value: 'N', description: 'catch-up runs, local and network each', parse: integer(1, 50), shown: '3; 1 with --quick' }),
  transfers: option({ value: 'N', description: 'measured transfers; 0 skips the latency case', parse: integer(0, 100_000), shown: '200; 20 with --quick' }),
  'transfers-per-block': option({ value: 'N', description: 'transfers in each generated block', parse: integer(0, 1_000), default: 20 }),
  'block-interval-ms': option({
    value: 'N',
    description: "the devnet's block interval, for the chain and every node",
    parse: integer(10, 600_000),
    default: 1_000,
  }),
  'cache-dir': option({ value: 'DIR', description: 'where generated chains are kept between runs', default: tmpdir(), shown: 'the temp directory' }),
  'cpu-prof': option({ value: 'DIR', description: 'run the node processes with --cpu-prof, writing their profiles to DIR' }),
};

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

/** The benchmark's settings from its options: --quick makes the defaults small. */
function meshBenchOptions(values: OptionValues<typeof meshOptions>): MeshBenchOptions {
  const quick = values.quick;
  return {
    ...runFlags(values),
    blocks: values.blocks ?? (quick ? 1_000 : 10_000),
    runs: values.runs ?? (quick ? 1 : 3),
    transfers: values.transfers ?? (quick ? 20 : 200),
    transfersPerBlock: values['transfers-per-block'],
    blockIntervalMs: values['block-interval-ms'],
    cacheDir: values['cache-dir'],
    cpuProfDir: values['cpu-prof'] === undefined ? null : resolve(values['cpu-prof']),
  };
}

/** Parses the arguments after `bench mesh`; throws a UsageError (a RangeError) with a message for the user. */
export function parseMeshBenchArgs(args: readonly string[]): MeshBenchOptions {
  return meshBenchOptions(parseCommand(meshBenchCommand, args).options);
}

const s = (ms: number | null): string => (ms === null ? '–' : `${(ms / 1000).toFixed(2)} s`);

/** Runs the benchmark with parsed options; resolves to the exit code. */
export async function runMeshBenchWith(options: MeshBenchOptions, command: string): Promise<number> {
  const log = printLine;
  const started = performance.now();
  // The local replay runs in this process: with the crypto the node processes are given.
  const crypto = await nodeCrypto();
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
        crypto,
      );
      log(`\n== catch-up: ${chain.info.blocks.toLocaleString('en-US')} blocks, ${chain.info.txs.toLocaleString('en-US')} transactions`);
      const serving = await startServingNode(chain, caseOptions);
      const signatures: SignatureRun[] = [];
      const local: LocalRun[] = [];
      const network: NetworkRun[] = [];
      const replay: ReplayRun[] = [];
      try {
        for (let run = 1; run <= options.runs; run++) {
          const g = await checkSignaturesAlone(chain, crypto);
          signatures.push(g);
          log(`  run ${run}: signatures alone ${s(g.totalMs)} (${g.signatures} checks; CPU ${s(g.cpuMs)}, other processes ${s(g.othersCpuMs)})`);
          const l = await applyLocally(chain, await mkdtemp(join(tmpdir(), 'mesh-bench-local-')), crypto);
          local.push(l);
          log(
            `  run ${run}: local ${s(l.totalMs)} (read ${s(l.readMs)}, addBranch ${s(l.applyMs)}; CPU ${s(l.cpuMs)}, ` + `other processes ${s(l.othersCpuMs)})`,
          );
          const n = await catchUpOverNetwork(serving, chain, caseOptions);
          network.push(n);
          log(
            `  run ${run}: network ${s(n.syncMs)} after a start-up of ${s(n.startupMs)} (CPU: syncing node ` +
              `${s(n.syncingCpuMs)}, serving node ${s(n.servingCpuMs)}, other processes ${s(n.othersCpuMs)})`,
          );
          const r = await replayRun(serving, chain, crypto);
          replay.push(r);
          log(
            `  run ${run}: /blocks/stream replay ${s(r.streamMs)} (first event ${s(r.firstEventMs)}; read here: headers ${s(r.headersMs)}, whole blocks ${s(r.blocksMs)})`,
          );
        }
      } finally {
        await stopNode(serving);
        await rm(serving.dataDir, { recursive: true, force: true });
      }
      catchUp = { chain: chain.info, signatures, local, network, replay };
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

/** `mesh bench mesh`. */
export const meshBenchCommand = command({
  description: `Real mesh nodes on loopback: a fresh node catching up a generated chain from a peer (next to
checking the same blocks' signatures alone, and applying them from local storage), the chain replayed on
/blocks/stream (next to reading the same block objects from the store), and transfer latency
from one node's POST /transfer to its peer's /transactions/stream (next to the POST's own round trip).`,
  options: meshOptions,
  run: (input) => runMeshBenchWith(meshBenchOptions(input.options), commandLine(input)),
});
