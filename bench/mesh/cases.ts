/**
 * The node benchmark's measurements, on real `mesh node` processes on loopback (test/mesh-process.ts
 * starts and reads them):
 *
 * - catch-up: a fresh node syncs the generated chain from a peer, next to the same blocks' signatures
 *   checked alone, and to the same blocks read from one LevelDB store and added to another in ranges
 *   of 500 in this process (sync minus the network);
 * - transfer latency: POST /transfer on a mining node to the event on its peer's
 *   /transactions/stream, next to the POST's own round trip;
 * - block stream replay: GET /blocks/stream?min_height=1 on the node serving the generated chain,
 *   to the tip's event, next to the same block objects read from the store in this process (the
 *   headers alone, as the stream reads them, and whole blocks decoded).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { REPLAY_PAGE } from '../../core/chain/block-feed.ts';
import { Chain, MAX_BLOCKS_PER_RESPONSE } from '../../core/chain/chain.ts';
import { type CryptoBackends, coreCrypto } from '../../core/crypto/backends.ts';
import { CREDIT } from '../../core/encoding/amount.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { signedMessages } from '../../core/ledger/apply.ts';
import { type Block, blockEvent } from '../../core/ledger/block.ts';
import { findInvalidSignatures } from '../../core/ledger/validate.ts';
import { LevelStore } from '../../host-node/leveldb-store.ts';
import { type EventStream, getJson, type MeshProcess, openStream, postJson, stopNode, tcpAddress, tempDataDir, waitFor } from '../../test/mesh-process.ts';
import { machineBusyMs, ownCpuMs, processCpuMs, since, startWithEnv } from '../lib/processes.ts';
import { seededRandom } from '../lib/random.ts';
import { chainPath, copyDataDir, type SourceChain } from './chain.ts';

/** One local replay of the chain: read from the source store, added to a fresh one. */
export interface LocalRun {
  /**
   * Waiting for blocksFrom on the source chain (LevelDB reads and decoding), summed over the ranges:
   * each range is read while the ranges before it are checked and added, so only what that does
   * not hide counts.
   */
  readonly readMs: number;
  /** addBranch on the fresh chain (signatures, rules, state root, the synced LevelDB batch): the rest. */
  readonly applyMs: number;
  readonly totalMs: number;
  /** CPU time of this process meanwhile (all its threads). */
  readonly cpuMs: number;
  /** CPU time of every other process on the machine meanwhile (null where not measurable). */
  readonly othersCpuMs: number | null;
}

/** The baseline of a catch-up: checking every signature of the chain's blocks, and nothing else. */
export interface SignatureRun {
  /** findInvalidSignatures over each range of 500 blocks in turn (header, every sender). */
  readonly totalMs: number;
  readonly signatures: number;
  /** CPU time of this process meanwhile (all its threads: the checks run on the libuv pool). */
  readonly cpuMs: number;
  /** CPU time of every other process on the machine meanwhile (null where not measurable). */
  readonly othersCpuMs: number | null;
}

/** One fresh node catching up over the network. */
export interface NetworkRun {
  /** The node's process spawned to its start output (HTTP and p2p addresses printed). */
  readonly startupMs: number;
  /** Spawned to its /beacon showing the serving node's tip. */
  readonly totalMs: number;
  /** totalMs − startupMs: the catch-up itself. */
  readonly syncMs: number;
  /** CPU time of the serving node from the syncing node's start output to done (null without /proc). */
  readonly servingCpuMs: number | null;
  /** CPU time of the syncing node from its start output to done. */
  readonly syncingCpuMs: number | null;
  /** CPU time of the rest of the machine during the catch-up: not the two nodes, not this process. */
  readonly othersCpuMs: number | null;
  /**
   * From the start output to the node's first "sync: extended" log line (its first range applied),
   * read from the node's log; null when the log says nothing of it.
   */
  readonly firstRangeMs: number | null;
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

/**
 * Checks the signatures of the whole source chain, range after range as sync gets them, with the
 * core's batch check (`findInvalidSignatures`, several windows of a range in flight, so both cores
 * work): the least a catch-up must do.
 * The ranges are read and decoded first, untimed.
 */
export async function checkSignaturesAlone(source: SourceChain, crypto: CryptoBackends = coreCrypto): Promise<SignatureRun> {
  const store = await LevelStore.open(chainPath(source.dataDir, source.params));
  try {
    const chain = await Chain.open({ store, params: source.params, crypto });
    const ranges: Block[][] = [];
    for (let height = 1; height <= chain.tip.height; height += MAX_BLOCKS_PER_RESPONSE) {
      ranges.push(await chain.blocksFrom(height, MAX_BLOCKS_PER_RESPONSE));
    }
    const signatures = ranges.flat().reduce((sum, block) => sum + 1 + block.txs.reduce((n, tx) => n + signedMessages(tx, source.params.network).length, 0), 0);
    const [machine0, own0] = [machineBusyMs(), ownCpuMs()];
    const started = performance.now();
    for (const range of ranges) {
      const invalid = await findInvalidSignatures(range, source.params, false, crypto.ed25519);
      if (invalid) throw new Error(`block ${range[invalid.index]!.header.height}: ${invalid.error.message}`);
    }
    const totalMs = performance.now() - started;
    const cpuMs = ownCpuMs() - own0;
    return { totalMs, signatures, cpuMs, othersCpuMs: Math.max(0, machineBusyMs() - machine0 - cpuMs) };
  } finally {
    await store.close();
  }
}

/**
 * Replays the source chain locally: blocksFrom on the source store in ranges of 500, addBranch on a
 * fresh LevelStore chain (synced batches, as a node opens it) with the current time as a received
 * block's bound, as sync does.
 */
export async function applyLocally(source: SourceChain, scratchDir: string, crypto: CryptoBackends = coreCrypto): Promise<LocalRun> {
  const from = await LevelStore.open(chainPath(source.dataDir, source.params));
  const to = await LevelStore.open(join(scratchDir, 'chain'));
  try {
    const sourceChain = await Chain.open({ store: from, params: source.params, crypto });
    const chain = await Chain.open({ store: to, params: source.params, crypto });
    const tip = sourceChain.tip.height;
    let readMs = 0;
    const [machine0, own0] = [machineBusyMs(), ownCpuMs()];
    const started = performance.now();
    // As sync does: while one range is added, the next one's signatures are checked and the one
    // after it is read (travels, in sync).
    const read = (height: number): Promise<Block[]> => (height <= tip ? sourceChain.blocksFrom(height, MAX_BLOCKS_PER_RESPONSE) : Promise.resolve([]));
    let reading = read(1);
    let adding: Promise<unknown> = Promise.resolve();
    for (let height = 1; height <= tip; height += MAX_BLOCKS_PER_RESPONSE) {
      const t0 = performance.now();
      const blocks = await reading;
      readMs += performance.now() - t0;
      const checked = chain.checkSignatures(blocks);
      reading = read(height + MAX_BLOCKS_PER_RESPONSE);
      await adding;
      await checked;
      adding = chain.addBranch(blocks, Date.now()).then((outcome) => {
        if (outcome !== 'extended') throw new Error(`range from ${height}: ${outcome}, not extended`);
      });
    }
    await adding;
    const totalMs = performance.now() - started;
    const cpuMs = ownCpuMs() - own0;
    const othersCpuMs = Math.max(0, machineBusyMs() - machine0 - cpuMs);
    if (toHex(chain.tip.hash) !== source.info.tipHash) throw new Error('the local replay ended on another tip');
    return { readMs, applyMs: totalMs - readMs, totalMs, cpuMs, othersCpuMs };
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

/**
 * Resolves once `node`'s /beacon shows the source chain's tip: polled every 100 ms while it is more
 * than a range behind, then every 5 ms (each poll costs the node a little CPU; 100 a second were
 * measurable in its profile).
 */
async function waitForTip(node: MeshProcess, source: SourceChain): Promise<void> {
  const deadline = performance.now() + Math.max(120_000, source.info.blocks * 30);
  for (;;) {
    const beacon = await getJson<Beacon>(node, '/beacon');
    if (beacon.hash === source.info.tipHash) return;
    if (performance.now() > deadline)
      throw new Error(
        `the fresh node is at height ${beacon.height}, not ${source.info.blocks}, after ${Math.round(Math.max(120_000, source.info.blocks * 30) / 1000)} s`,
      );
    const close = source.info.blocks - beacon.height <= MAX_BLOCKS_PER_RESPONSE;
    await new Promise((resolve) => setTimeout(resolve, close ? 5 : 100));
  }
}

/** Milliseconds from `sinceWall` (epoch ms) to the first "sync: extended" line of a node's log. */
export function firstRangeAt(log: string, sinceWall: number): number | null {
  const match = /^(\S+) sync: extended to height \d+/m.exec(log);
  const at = match ? Date.parse(match[1]!) : NaN;
  return Number.isNaN(at) ? null : at - sinceWall;
}

/** A fresh node bootstrapping from `serving` until its /beacon shows the serving node's tip. */
export async function catchUpOverNetwork(serving: MeshProcess, source: SourceChain, options: CaseOptions): Promise<NetworkRun> {
  const spawned = performance.now();
  const node = await startWithEnv({ bootstrap: [tcpAddress(serving)], blockIntervalMs: source.params.blockIntervalMs }, options.nodeEnv);
  const ready = performance.now();
  const readyWall = Date.now();
  const [servingCpu0, syncingCpu0] = [await processCpuMs(serving.child.pid), await processCpuMs(node.child.pid)];
  const [machine0, own0] = [machineBusyMs(), ownCpuMs()];
  try {
    await waitForTip(node, source);
    const done = performance.now();
    const [machine1, own1] = [machineBusyMs(), ownCpuMs()];
    const [servingCpu1, syncingCpu1] = [await processCpuMs(serving.child.pid), await processCpuMs(node.child.pid)];
    const servingCpuMs = since(servingCpu0, servingCpu1);
    const syncingCpuMs = since(syncingCpu0, syncingCpu1);
    return {
      startupMs: ready - spawned,
      totalMs: done - spawned,
      syncMs: done - ready,
      servingCpuMs,
      syncingCpuMs,
      othersCpuMs: servingCpuMs === null || syncingCpuMs === null ? null : Math.max(0, machine1 - machine0 - (own1 - own0) - servingCpuMs - syncingCpuMs),
      firstRangeMs: firstRangeAt(node.log(), readyWall),
    };
  } catch (error) {
    options.log(node.log());
    throw error;
  } finally {
    await stopNode(node);
    await rm(node.dataDir, { recursive: true, force: true });
  }
}

/** One replay of the whole chain on /blocks/stream, next to the store reads it is made of. */
export interface ReplayRun {
  /** GET /blocks/stream?min_height=1 on the serving node: from the request to the tip's event. */
  readonly streamMs: number;
  /** From the request to the first event (the answer's head and the first page). */
  readonly firstEventMs: number;
  /** In this process, on the source store: blockEventsFrom in pages of REPLAY_PAGE (headers only), as the stream reads. */
  readonly headersMs: number;
  /** The same objects from blocksFrom in ranges of 500 and blockEvent: every block decoded. */
  readonly blocksMs: number;
}

/** Reads the block objects of the whole source chain both ways, in this process; the time of each. */
async function readBlockObjects(source: SourceChain, crypto: CryptoBackends): Promise<{ headersMs: number; blocksMs: number }> {
  const store = await LevelStore.open(chainPath(source.dataDir, source.params));
  try {
    const chain = await Chain.open({ store, params: source.params, crypto });
    const tip = chain.tip.height;
    let started = performance.now();
    let last = '';
    for (let height = 1; height <= tip; ) {
      const page = await chain.blockEventsFrom(height, REPLAY_PAGE);
      height += page.length;
      last = page.at(-1)!.hash;
    }
    const headersMs = performance.now() - started;
    started = performance.now();
    for (let height = 1; height <= tip; height += MAX_BLOCKS_PER_RESPONSE) {
      const events = (await chain.blocksFrom(height, MAX_BLOCKS_PER_RESPONSE)).map(blockEvent);
      if (events.length === 0) throw new Error(`no block at ${height}`);
    }
    const blocksMs = performance.now() - started;
    if (last !== source.info.tipHash) throw new Error('the header pages ended on another tip');
    return { headersMs, blocksMs };
  } finally {
    await store.close();
  }
}

/** The time from the request to the first frame and to the frame whose id is `tip`, of GET `path` on `node`. */
async function timeStream(node: MeshProcess, path: string, tip: number): Promise<{ firstMs: number; totalMs: number }> {
  const controller = new AbortController();
  const started = performance.now();
  const response = await fetch(node.url + path, { signal: controller.signal });
  if (!response.ok || response.body === null) throw new Error(`GET ${path}: ${response.status}`);
  const decoder = new TextDecoder();
  let firstMs: number | null = null;
  let buffer = '';
  let expected = 1;
  try {
    for await (const chunk of response.body) {
      firstMs ??= performance.now() - started;
      buffer += decoder.decode(chunk, { stream: true });
      const frames = buffer.split('\n\n');
      buffer = frames.pop()!;
      for (const frame of frames) {
        const id = /^id: (\d+)$/m.exec(frame)?.[1];
        if (id === undefined) continue;
        if (Number(id) !== expected) throw new Error(`the stream sent height ${id} where ${expected} was next`);
        if (expected++ === tip) return { firstMs, totalMs: performance.now() - started };
      }
    }
    throw new Error(`the stream ended at height ${expected - 1}`);
  } finally {
    controller.abort();
  }
}

/** The serving node replays the whole chain on /blocks/stream; the same objects read in this process next to it. */
export async function replayRun(serving: MeshProcess, source: SourceChain, crypto: CryptoBackends = coreCrypto): Promise<ReplayRun> {
  const { headersMs, blocksMs } = await readBlockObjects(source, crypto);
  const { firstMs, totalMs } = await timeStream(serving, '/blocks/stream?min_height=1', source.info.blocks);
  return { streamMs: totalMs, firstEventMs: firstMs, headersMs, blocksMs };
}

// Transfers sent on one tip of the mining node before waiting for its next block.
const PER_BLOCK = 40;

export interface LatencyRun {
  readonly samples: readonly LatencySample[];
  readonly blockIntervalMs: number;
  /** Transfers sent first and not counted (the gossip mesh and both nodes' code warmed up). */
  readonly warmup: number;
  /** Transfers sent on one tip of A before waiting for its next block. */
  readonly perBlock: number;
  /** The mining node's height when the measured transfers began and ended. */
  readonly heights: readonly [number, number];
  /** POSTs the node refused with 400 and that were sent again (rule and detail of each). */
  readonly refused: readonly string[];
}

/**
 * POSTs a transfer of `amount` from `a` to `b` and starts waiting for its event on `stream` first:
 * the event is matched by its amount, so its arrival is timed even when it comes before the answer.
 */
async function sendTransfer(
  a: MeshProcess,
  b: MeshProcess,
  stream: EventStream<{ id: string; origin: string; amount: string }>,
  amount: string,
): Promise<{ response: Awaited<ReturnType<typeof postJson>>; sent: number; answered: number; arrived: Promise<{ event: { id: string }; at: number }> }> {
  const sent = performance.now();
  const arrived = stream.next((e) => e.origin === a.nodeId && e.amount === amount, 10_000).then((event) => ({ event, at: performance.now() }));
  // Not rejected unseen when the POST fails and nothing is awaited.
  arrived.catch(() => {});
  const response = await postJson(a, '/transfer', { to: b.nodeId, amount });
  return { response, sent, answered: performance.now(), arrived };
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
    // Each transfer sends a distinct amount (1 credit + n base units), by which its event is matched.
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
    const refused: string[] = [];
    const window = { height: -1, sent: 0 };
    let startHeight = 0;
    try {
      for (let n = 0; n < total; n++) {
        if (n === warmup) startHeight = (await getJson<Beacon>(a, '/beacon')).height;
        const amount = (CREDIT + BigInt(n)).toString();
        let attempt: Awaited<ReturnType<typeof sendTransfer>>;
        for (let tries = 1; ; tries++) {
          attempt = await sendTransfer(a, b, stream, amount);
          if (attempt.response.status === 201) break;
          // A refusal the benchmark did not cause (see `refused`): noted, and the transfer sent again.
          const body = attempt.response.body as { rule?: string; detail?: string } | null;
          if (attempt.response.status !== 400 || tries >= 3) {
            throw new Error(`POST /transfer: ${attempt.response.status} ${JSON.stringify(body)}`);
          }
          refused.push(`${body?.rule ?? 'unknown'}: ${body?.detail ?? ''}`);
          options.log(`  POST /transfer refused (${refused.at(-1)}); sending it again`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        const { response, sent, answered, arrived } = attempt;
        const { event, at } = await arrived;
        if (event.id !== response.body.tx_id) throw new Error(`the stream showed ${event.id}, the POST answered ${response.body.tx_id}`);
        if (n >= warmup) samples.push({ gossipMs: at - sent, postMs: answered - sent });
        const paused = new Promise((resolve) => setTimeout(resolve, Math.floor(pause() * 20)));
        // A's pool holds at most 64 transactions of one sender until a block takes them: past
        // PER_BLOCK since the last block, wait for the next one (between samples, never inside one).
        const height = (await getJson<Beacon>(a, '/beacon')).height;
        if (height !== window.height) Object.assign(window, { height, sent: 0 });
        if (++window.sent >= PER_BLOCK) {
          await waitFor('the next block on the mining node', async () => (await getJson<Beacon>(a, '/beacon')).height > window.height, 30_000, 20);
        }
        await paused;
      }
    } finally {
      stream.close();
    }
    const endHeight = (await getJson<Beacon>(a, '/beacon')).height;
    return { samples, blockIntervalMs, warmup, perBlock: PER_BLOCK, heights: [startHeight, endHeight], refused };
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
