/**
 * `mesh bench sim-check`, on Node: the simulator against real `mesh node --devnet` processes on
 * loopback (docs/sim.md "Validation"). At each size the same mesh runs both ways: every node starts
 * from one chain in which the producers earned their weight (core/sim/prefix.ts, as `mesh sim`
 * starts), each node dials up to 8 of the nodes started before it (as the simulator's nodes do),
 * no workload. From the real nodes: when each first had each block (its /blocks/stream event) and
 * what each sent by topic and protocol (GET /traffic) over a window after a warm-up; from the
 * simulator, with `--latency none`, the same figures over the same window of simulated time.
 * Writes bench/results/sim-check.json and its section of bench/RESULTS.md.
 */
import { join } from 'node:path';
import { Chain } from '../../core/chain/chain.ts';
import { CREDIT } from '../../core/encoding/amount.ts';
import type { BlockEvent } from '../../core/ledger/block.ts';
import { devnet } from '../../core/ledger/params.ts';
import type { RttTable } from '../../core/sim/latency.ts';
import { weightedPrefix } from '../../core/sim/prefix.ts';
import { DEFAULT_SIM_OPTIONS, runSim, type SimOptions } from '../../core/sim/run.ts';
import { TARGET_PEERS } from '../../core/sim/world.ts';
import { command, list, type OptionValues, option } from '../../host-node/cli/command.ts';
import { parseCommand } from '../../host-node/cli/run.ts';
import { integer } from '../../host-node/cli/values.ts';
import { IDENTITY_FILE, writeIdentityFile } from '../../host-node/data-dir.ts';
import { LevelStore } from '../../host-node/leveldb-store.ts';
import {
  type EventStream,
  getJson,
  type MeshProcess,
  openStream,
  startNode,
  stopAll,
  stopNode,
  tcpAddress,
  tempDataDir,
  waitFor,
} from '../../test/mesh-process.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { seededRandom } from '../lib/random.ts';
import { printLine, publishReport, type ResultPaths } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { benchKey, chainPath } from '../mesh/chain.ts';
import { bytesBetween, readSockets } from '../netgraph/cases.ts';
import { compareKinds, type Propagation, propagation, ratesBetween, windowRates } from './compare.ts';
import { SIM_CHECK_REPORT, type SimCheckReport, type SizeCheck } from './report.ts';

/** The weight each producer bonds before the run, as the simulator's producers do. */
const PRODUCER_WEIGHT = 100n * CREDIT;
/** How long after the window blocks born in it may still arrive. */
const TAIL_MS = 15_000;
/**
 * Every simulated node on one host, 1 ms apart, as on loopback. Not `--latency none`: its round
 * trips of 0 ms are no link sample's (rtt_ms must be above 0), so no link sample would flow.
 */
const LOOPBACK: RttTable = { hosts: 1, rtt: () => 1 };

const simCheckOptions = {
  ...runOptions,
  nodes: list({ value: 'N', description: 'a mesh size to compare (repeatable; default 10 and 20; 4 with --quick)', parse: integer(2, 40) }),
  producers: option({ value: 'N', description: 'nodes that produce blocks', parse: integer(1, 40), default: 5 }),
  'block-interval-ms': option({
    value: 'N',
    description: "the block interval, the simulator's 10 s by default",
    parse: integer(1_000, 600_000),
    default: 10_000,
  }),
  'warmup-s': option({ value: 'S', description: 'seconds the nodes run before the window', parse: integer(0, 3_600), shown: '60; 40 with --quick' }),
  'window-s': option({ value: 'S', description: 'seconds over which blocks and bytes are counted', parse: integer(10, 3_600), shown: '180; 30 with --quick' }),
};

export interface SimCheckOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly nodes: readonly number[];
  readonly producers: number;
  readonly blockIntervalMs: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  readonly paths?: ResultPaths;
}

function simCheckOptionsOf(values: OptionValues<typeof simCheckOptions>): SimCheckOptions {
  const quick = values.quick;
  return {
    ...runFlags(values),
    nodes: values.nodes.length > 0 ? [...new Set(values.nodes)] : quick ? [4] : [10, 20],
    producers: values.producers,
    blockIntervalMs: values['block-interval-ms'],
    warmupMs: 1000 * (values['warmup-s'] ?? (quick ? 40 : 60)),
    windowMs: 1000 * (values['window-s'] ?? (quick ? 30 : 180)),
  };
}

export function parseSimCheckArgs(args: readonly string[]): SimCheckOptions {
  return simCheckOptionsOf(parseCommand(simCheckCommand, args).options);
}

/** Up to `count` of `items`, drawn without replacement. */
function sample<T>(items: readonly T[], count: number, random: () => number): T[] {
  const pool = [...items];
  for (let i = pool.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, count);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const now = (): number => performance.timeOrigin + performance.now();
const mean = (values: readonly number[]): number => values.reduce((s, v) => s + v, 0) / Math.max(1, values.length);

/** Data directories holding each node's key and the chain in which the producers earned their weight. */
async function seededDataDirs(nodes: number, producers: number, blockIntervalMs: number): Promise<string[]> {
  const params = devnet(blockIntervalMs);
  const keys = Array.from({ length: nodes }, (_, i) => benchKey(`sim-check-${i}`));
  const prefix = await weightedPrefix(params, benchKey('sim-check-bootstrap'), keys.slice(0, producers), PRODUCER_WEIGHT);
  const dirs: string[] = [];
  for (const key of keys) {
    const dir = await tempDataDir();
    await writeIdentityFile(join(dir, IDENTITY_FILE), key);
    const store = await LevelStore.open(chainPath(dir, params), { sync: false });
    try {
      await (await Chain.open({ store, params })).addBranch(prefix);
    } finally {
      await store.close();
    }
    dirs.push(dir);
  }
  return dirs;
}

/** Per block hash, when each node first had it (its first /blocks/stream event for the block). */
export function firstArrivals(streams: readonly Pick<EventStream<BlockEvent>, 'events' | 'arrivals'>[]): Map<string, number[]> {
  const byBlock = new Map<string, number[]>();
  for (const stream of streams) {
    const seen = new Set<string>();
    for (const [i, event] of stream.events.entries()) {
      if (seen.has(event.hash)) continue;
      seen.add(event.hash);
      byBlock.set(event.hash, [...(byBlock.get(event.hash) ?? []), stream.arrivals[i]!]);
    }
  }
  return byBlock;
}

interface RealRun {
  readonly peers: number;
  readonly propagation: Propagation;
  readonly bytesPerNodePerSec: Record<string, number>;
  readonly tcpSentPerNodePerSec: number;
}

async function runReal(options: SimCheckOptions, nodes: number, log: (line: string) => void): Promise<RealRun> {
  const producers = Math.min(options.producers, nodes);
  const dirs = await seededDataDirs(nodes, producers, options.blockIntervalMs);
  const random = seededRandom(nodes);
  const started: MeshProcess[] = [];
  const streams: EventStream<BlockEvent>[] = [];
  try {
    for (const [i, dataDir] of dirs.entries()) {
      const bootstrap = sample(started, TARGET_PEERS, random).map(tcpAddress);
      // Every node is on 127.0.0.1: the per-address bound must not cut the mesh.
      started.push(
        await startNode({ dataDir, mine: i < producers, blockIntervalMs: options.blockIntervalMs, bootstrap, extraArgs: ['--max-connections-per-ip', '64'] }),
      );
    }
    log(`    ${nodes} nodes started`);
    await waitFor(
      'every node has a peer',
      async () => (await Promise.all(started.map((n) => getJson<{ peers: unknown[] }>(n, '/peers')))).every((p) => p.peers.length > 0),
      60_000,
    );
    for (const node of started) streams.push(await openStream<BlockEvent>(node, '/blocks/stream'));
    await sleep(options.warmupMs);
    const traffic = (): Promise<Record<string, number>[]> =>
      Promise.all(started.map(async (n) => (await getJson<{ sent: Record<string, number> }>(n, '/traffic')).sent));
    const [sockets0, traffic0, from] = [await readSockets(), await traffic(), now()];
    await sleep(options.windowMs);
    const [sockets1, traffic1, to] = [await readSockets(), await traffic(), now()];
    const peers = mean(await Promise.all(started.map(async (n) => (await getJson<{ peers: unknown[] }>(n, '/peers')).peers.length)));
    await sleep(TAIL_MS);
    const windowMs = to - from;
    const tcp = bytesBetween(sockets0, sockets1);
    const tcpSent = started.reduce((sum, n) => sum + (tcp.get(n.child.pid!)?.sent ?? 0), 0);
    return {
      peers,
      propagation: propagation(firstArrivals(streams), nodes, from, to),
      bytesPerNodePerSec: ratesBetween(traffic0, traffic1, windowMs),
      tcpSentPerNodePerSec: tcpSent / nodes / (windowMs / 1000),
    };
  } finally {
    for (const stream of streams) stream.close();
    await Promise.all(started.map((n) => stopNode(n)));
    await stopAll();
  }
}

async function runSimulated(options: SimCheckOptions, nodes: number, peers: number): Promise<SizeCheck['sim']> {
  const base: SimOptions = {
    ...DEFAULT_SIM_OPTIONS,
    nodes,
    producers: Math.min(options.producers, nodes),
    targetPeers: peers,
    seed: 'sim-check',
    latency: LOOPBACK,
    uplinkBytesPerSec: null,
    transfersPerSec: 0,
    messagesPerSec: 0,
    channelsPerSec: 0,
    jobsPerSec: 0,
    turn: () => new Promise((resolve) => setImmediate(resolve)),
  };
  const longMs = options.warmupMs + options.windowMs;
  const warm = await runSim({ ...base, durationMs: options.warmupMs });
  const whole = await runSim({ ...base, durationMs: longMs });
  const p = whole.figures.propagationMs;
  return {
    peers,
    propagation: { to50: p.to50, to90: p.to90, to99: p.to99, blocks: whole.figures.blocks, blocksShort: p.blocksShort },
    bytesPerNodePerSec: windowRates(warm.figures.bytesPerNodePerSec, options.warmupMs, whole.figures.bytesPerNodePerSec, longMs),
  };
}

export async function runSimCheckWith(options: SimCheckOptions, commandText: string): Promise<number> {
  const log = printLine;
  const started = Date.now();
  const source = await sourceState();
  log('mesh bench sim-check: the simulator (every node 1 ms apart) against real mesh node processes on loopback');
  const sizes: SizeCheck[] = [];
  for (const nodes of options.nodes) {
    log(`  ${nodes} nodes: real processes, ${options.warmupMs / 1000} s of warm-up and ${options.windowMs / 1000} s counted…`);
    const real = await runReal(options, nodes, log);
    // The real nodes meet every node their lookups find, not only the ones they dial first: the
    // simulated ones dial as many as the real ones held.
    const peers = Math.round(real.peers);
    log(`  ${nodes} nodes: the simulator, each node dialling ${peers}…`);
    const sim = await runSimulated(options, nodes, peers);
    const kinds = compareKinds(real.bytesPerNodePerSec, sim.bytesPerNodePerSec);
    sizes.push({
      nodes,
      realPeers: Math.round(real.peers * 10) / 10,
      real: { propagation: real.propagation, bytesPerNodePerSec: real.bytesPerNodePerSec, tcpSentPerNodePerSec: Math.round(real.tcpSentPerNodePerSec) },
      sim,
      kinds,
    });
    const to99 = (p: Propagation): string => `p50 ${p.to99.p50 ?? '–'} ms, p90 ${p.to99.p90 ?? '–'} ms over ${p.blocks} blocks`;
    log(`    block to 99 %: real ${to99(real.propagation)}; sim ${to99(sim.propagation)}`);
    log(`    real peers ${real.peers.toFixed(1)}; every TCP byte the real nodes sent: ${real.tcpSentPerNodePerSec.toFixed(0)} B/s per node`);
    for (const k of kinds)
      log(`    ${k.kind.padEnd(28)} real ${k.real.toFixed(1).padStart(9)} B/s  sim ${k.sim.toFixed(1).padStart(9)} B/s  ${k.ratio ?? '–'}`);
  }
  const report: SimCheckReport = {
    command: commandText,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    producers: options.producers,
    blockIntervalMs: options.blockIntervalMs,
    warmupMs: options.warmupMs,
    windowMs: options.windowMs,
    sizes,
    ...(source ? { source } : {}),
    elapsedMs: Date.now() - started,
  };
  await publishReport(SIM_CHECK_REPORT, report, { write: options.write, log, ...(options.paths && { paths: options.paths }) });
  return 0;
}

export const simCheckCommand = command({
  description:
    'The simulator against real mesh node processes on loopback (docs/sim.md): the same mesh both ways at 10 and 20 nodes, block propagation and bytes per node per second by topic and protocol side by side (Node only; minutes per size).',
  options: simCheckOptions,
  run: (input) => runSimCheckWith(simCheckOptionsOf(input.options), commandLine(input)),
});
