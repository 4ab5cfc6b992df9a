/**
 * The node benchmark's measurements, on real `mesh node` processes on loopback (test/mesh-process.ts
 * starts and reads them):
 *
 * - catch-up: a fresh node syncs the generated chain from a peer, next to the same blocks read from
 *   one LevelDB store and added to another in ranges of 500 in this process (sync minus the network);
 * - transfer latency: POST /transfer on a mining node to the event on its peer's
 *   /transactions/stream, next to the POST's own round trip.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Chain, MAX_BLOCKS_PER_RESPONSE } from '../core/chain/chain.ts';
import { CREDIT } from '../core/encoding/amount.ts';
import { toHex } from '../core/encoding/hex.ts';
import { LevelStore } from '../host-node/leveldb-store.ts';
import {
  getJson,
  openStream,
  postJson,
  startNode,
  stopNode,
  tcpAddress,
  tempDataDir,
  waitFor,
  type MeshProcess,
  type StartOptions,
} from '../test/mesh-process.ts';
import { chainPath, copyDataDir, type SourceChain } from './mesh-chain.ts';
import { seededRandom } from './random.ts';

/** One local replay of the chain: read from the source store, added to a fresh one. */
export interface LocalRun {
  /** blocksFrom on the source chain (LevelDB reads and decoding), summed over the ranges. */
  readonly readMs: number;
  /** addBranch on the fresh chain (signatures, rules, state root, the synced LevelDB batch). */
  readonly applyMs: number;
  readonly totalMs: number;
  /** CPU time of this process meanwhile (all its threads). */
  readonly cpuMs: number;
}

/** One fresh node catching up over the network. */
export interface NetworkRun {
  /** The node's process spawned to its start output (HTTP and p2p addresses printed). */
  readonly startupMs: number;
  /** Spawned to its /beacon showing the serving node's tip. */
  readonly totalMs: number;
  /** totalMs − startupMs: the catch-up itself. */
  readonly syncMs: number;
  /** CPU time of the serving node during the catch-up (null where /proc is not available). */
  readonly servingCpuMs: number | null;
  /** CPU time of the syncing node from its start output to done. */
  readonly syncingCpuMs: number | null;
}

export interface LatencySample {
  /** POST /transfer on A sent to the event on B's /transactions/stream. */
  readonly gossipMs: number;
  /** POST /transfer on A sent to its 201 answer. */
  readonly postMs: number;
}

export interface CaseOptions {
  readonly log: (line: string) => void;
  /** Extra environment for the node processes (e.g. NODE_OPTIONS=--cpu-prof). */
  readonly nodeEnv?: Record<string, string>;
}

interface Beacon {
  readonly height: number;
  readonly hash: string;
}

/** CPU time (user + system) of process `pid` in ms, from /proc; null when unreadable. */
export async function processCpuMs(pid: number | undefined): Promise<number | null> {
  if (pid === undefined) return null;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces: the fields that follow it start after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the file, in clock ticks (USER_HZ, 100 on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}

const since = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : b - a);

/** Starts a node with `env` added to its environment (the mesh-process helper passes on ours). */
async function startWithEnv(options: StartOptions, env: Record<string, string> | undefined): Promise<MeshProcess> {
  if (env === undefined) return startNode(options);
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await startNode(options);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/**
 * Replays the source chain locally: blocksFrom on the source store in ranges of 500, addBranch on a
 * fresh LevelStore chain (synced batches, as a node opens it) with the current time as a received
 * block's bound, as sync does.
 */
export async function applyLocally(source: SourceChain, scratchDir: string): Promise<LocalRun> {
  const from = await LevelStore.open(chainPath(source.dataDir, source.params));
  const to = await LevelStore.open(join(scratchDir, 'chain'));
  try {
    const sourceChain = await Chain.open({ store: from, params: source.params });
    const chain = await Chain.open({ store: to, params: source.params });
    const tip = sourceChain.tip.height;
    let readMs = 0;
    let applyMs = 0;
    const cpu = process.cpuUsage();
    for (let height = 1; height <= tip; height += MAX_BLOCKS_PER_RESPONSE) {
      const t0 = performance.now();
      const blocks = await sourceChain.blocksFrom(height, MAX_BLOCKS_PER_RESPONSE);
      const t1 = performance.now();
      const outcome = await chain.addBranch(blocks, Date.now());
      readMs += t1 - t0;
      applyMs += performance.now() - t1;
      if (outcome !== 'extended') throw new Error(`range from ${height}: ${outcome}, not extended`);
    }
    const used = process.cpuUsage(cpu);
    if (toHex(chain.tip.hash) !== source.info.tipHash) throw new Error('the local replay ended on another tip');
    return { readMs, applyMs, totalMs: readMs + applyMs, cpuMs: (used.user + used.system) / 1000 };
  } finally {
    await to.close();
    await from.close();
    await rm(scratchDir, { recursive: true, force: true });
  }
}

/** A node serving the source chain: not mining, on a copy of the cached data directory. */
export async function startServingNode(source: SourceChain, options: CaseOptions): Promise<MeshProcess> {
  const dataDir = await tempDataDir();
  await copyDataDir(source, dataDir);
  const node = await startWithEnv({ dataDir, blockIntervalMs: source.params.blockIntervalMs }, options.nodeEnv);
  const beacon = await getJson<Beacon>(node, '/beacon');
  if (beacon.hash !== source.info.tipHash) throw new Error(`the serving node is at ${beacon.height}, not the generated tip`);
  return node;
}

/** A fresh node bootstrapping from `serving` until its /beacon shows the serving node's tip. */
export async function catchUpOverNetwork(serving: MeshProcess, source: SourceChain, options: CaseOptions): Promise<NetworkRun> {
  const servingCpu0 = await processCpuMs(serving.child.pid);
  const spawned = performance.now();
  const node = await startWithEnv(
    { bootstrap: [tcpAddress(serving)], blockIntervalMs: source.params.blockIntervalMs },
    options.nodeEnv,
  );
  const ready = performance.now();
  const syncingCpu0 = await processCpuMs(node.child.pid);
  try {
    // Polled at 10 ms: a /beacon costs the node well under a millisecond.
    const timeoutMs = Math.max(60_000, source.info.blocks * 30);
    await waitFor(
      `the fresh node at height ${source.info.blocks}`,
      async () => (await getJson<Beacon>(node, '/beacon')).hash === source.info.tipHash,
      timeoutMs,
      10,
    );
    const done = performance.now();
    const [servingCpu1, syncingCpu1] = [await processCpuMs(serving.child.pid), await processCpuMs(node.child.pid)];
    return {
      startupMs: ready - spawned,
      totalMs: done - spawned,
      syncMs: done - ready,
      servingCpuMs: since(servingCpu0, servingCpu1),
      syncingCpuMs: since(syncingCpu0, syncingCpu1),
    };
  } catch (error) {
    options.log(node.log());
    throw error;
  } finally {
    await stopNode(node);
    await rm(node.dataDir, { recursive: true, force: true });
  }
}

export interface LatencyRun {
  readonly samples: readonly LatencySample[];
  readonly blockIntervalMs: number;
  /** Transfers sent first and not counted (the gossip mesh and both nodes' code warmed up). */
  readonly warmup: number;
  /** The mining node's height when the measured transfers began and ended. */
  readonly heights: readonly [number, number];
}

/**
 * Two nodes, A mining and B bootstrapped from A. Once A has a balance and B its tip, `count`
 * transfers from A to B one after another (after `warmup` uncounted ones), with pauses of 0–20 ms
 * between them so they land at every phase of A's block production.
 */
export async function transferLatency(count: number, blockIntervalMs: number, options: CaseOptions, warmup = 10): Promise<LatencyRun> {
  const a = await startWithEnv({ mine: true, blockIntervalMs }, options.nodeEnv);
  const b = await startWithEnv({ bootstrap: [tcpAddress(a)], blockIntervalMs }, options.nodeEnv);
  try {
    // Each transfer sends a distinct amount (1 credit + n base units): the stream event is matched
    // by its amount, so its arrival is timed even when it comes before the POST's answer.
    const total = warmup + count;
    await waitFor('a balance on the mining node', async () => {
      const status = await getJson<{ balance: string }>(a, '/status');
      return BigInt(status.balance) >= BigInt(total + 1) * CREDIT;
    });
    await waitFor(
      'the peer on the same tip',
      async () => {
        const [x, y] = [await getJson<Beacon>(a, '/beacon'), await getJson<Beacon>(b, '/beacon')];
        return x.hash === y.hash;
      },
      30_000,
      20,
    );
    const stream = await openStream<{ id: string; origin: string; amount: string }>(b, '/transactions/stream');
    const pause = seededRandom(count);
    const samples: LatencySample[] = [];
    let startHeight = 0;
    try {
      for (let n = 0; n < total; n++) {
        if (n === warmup) startHeight = (await getJson<Beacon>(a, '/beacon')).height;
        const amount = (CREDIT + BigInt(n)).toString();
        const sent = performance.now();
        const arrived = stream.next((e) => e.origin === a.nodeId && e.amount === amount, 10_000).then((event) => ({ event, at: performance.now() }));
        // Not rejected unseen if the POST fails first.
        arrived.catch(() => {});
        const response = await postJson(a, '/transfer', { to: b.nodeId, amount });
        const answered = performance.now();
        if (response.status !== 201) throw new Error(`POST /transfer: ${response.status} ${JSON.stringify(response.body)}`);
        const { event, at } = await arrived;
        if (event.id !== response.body.tx_id) throw new Error(`the stream showed ${event.id}, the POST answered ${response.body.tx_id}`);
        if (n >= warmup) samples.push({ gossipMs: at - sent, postMs: answered - sent });
        await new Promise((resolve) => setTimeout(resolve, Math.floor(pause() * 20)));
      }
    } finally {
      stream.close();
    }
    const endHeight = (await getJson<Beacon>(a, '/beacon')).height;
    return { samples, blockIntervalMs, warmup, heights: [startHeight, endHeight] };
  } catch (error) {
    options.log(`mining node's log:\n${a.log()}\npeer's log:\n${b.log()}`);
    throw error;
  } finally {
    await stopNode(b);
    await stopNode(a);
    await rm(a.dataDir, { recursive: true, force: true });
    await rm(b.dataDir, { recursive: true, force: true });
  }
}
