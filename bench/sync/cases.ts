/**
 * The sync benchmark's measurements, on real `mesh node` processes on loopback:
 *
 * - partition heal: a node holding the shorter half of a partition, started with `--bootstrap` to
 *   a node holding the longer half, until it shows the longer tip; next to a fresh node catching up
 *   the same longer chain from the same peer (the same blocks fetched and applied, from scratch);
 * - sync flood: a mining node's blocks a second while four identities (libp2p peers in this process)
 *   ask it for 500-block ranges as fast as it answers, next to its blocks a second just before
 *   without them; and the bytes each flooder got, next to the serve budget it is held to.
 */
import { cp, rm } from 'node:fs/promises';
import { SigningKey } from '../../core/crypto/ed25519.ts';
import { decode, encode } from '../../core/encoding/codec.ts';
import { fromHex } from '../../core/encoding/hex.ts';
import { genesisBlock } from '../../core/ledger/block.ts';
import { PeerBusyError } from '../../core/net/errors.ts';
import type { Libp2pNetwork } from '../../core/net/libp2p-network.ts';
import { SERVE_BYTES_PER_SECOND } from '../../core/node/serve-budget.ts';
import { MAX_SYNC_ANSWER_BYTES, SYNC_PROTOCOL, syncRequestCodec, syncResponseCodec } from '../../core/node/wire.ts';
import { startP2PNetwork } from '../../host-node/p2p.ts';
import { getJson, type MeshProcess, startNode, stopNode, tcpAddress, tempDataDir } from '../../test/mesh-process.ts';
import { processCpuMs, since } from '../lib/processes.ts';
import type { ForkedChains } from './chains.ts';

interface Beacon {
  readonly height: number;
  readonly hash: string;
}

/** One node reaching the longer tip: from its start output to its /beacon showing it. */
export interface SyncRun {
  readonly syncMs: number;
  /** CPU time of the syncing node meanwhile (null without /proc). */
  readonly cpuMs: number | null;
}

/** Starts a node on a copy of the longer half, not mining: what the others sync from. */
export async function startServing(chains: ForkedChains): Promise<MeshProcess> {
  const dataDir = await tempDataDir();
  await cp(chains.longer, dataDir, { recursive: true });
  const node = await startNode({ dataDir, blockIntervalMs: chains.params.blockIntervalMs });
  const beacon = await getJson<Beacon>(node, '/beacon');
  if (beacon.hash !== chains.info.longerTip) throw new Error(`the serving node is at ${beacon.height}, not the longer tip`);
  return node;
}

/**
 * A node started on `dataDir` (a copy of the shorter half, or nothing: a fresh node) and bootstrapped
 * to `serving`, until its /beacon shows the longer tip.
 */
export async function syncToLonger(serving: MeshProcess, chains: ForkedChains, from: 'shorter' | 'scratch', log: (line: string) => void): Promise<SyncRun> {
  const dataDir = await tempDataDir();
  if (from === 'shorter') await cp(chains.shorter, dataDir, { recursive: true });
  const node = await startNode({ dataDir, bootstrap: [tcpAddress(serving)], blockIntervalMs: chains.params.blockIntervalMs });
  const started = performance.now();
  const cpu0 = await processCpuMs(node.child.pid);
  try {
    const deadline = started + 300_000;
    for (;;) {
      const beacon = await getJson<Beacon>(node, '/beacon');
      if (beacon.hash === chains.info.longerTip) break;
      if (performance.now() > deadline) throw new Error(`the ${from} node is at ${beacon.height} after 300 s, not ${chains.info.longerHeight}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const syncMs = performance.now() - started;
    return { syncMs, cpuMs: since(cpu0, await processCpuMs(node.child.pid)) };
  } catch (error) {
    log(node.log());
    throw error;
  } finally {
    await stopNode(node);
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** What one flooding identity sent and got. */
export interface Flooder {
  readonly requests: number;
  readonly answered: number;
  readonly busy: number;
  /** Requests that failed otherwise (timeouts, resets). */
  readonly failed: number;
  /** Bytes of answers received. */
  readonly bytes: number;
}

export interface FloodRun {
  readonly windowMs: number;
  readonly blockIntervalMs: number;
  /** Blocks the mining node produced in the window before the flood, and in the flood's. */
  readonly baselineBlocks: number;
  readonly floodBlocks: number;
  readonly flooders: readonly Flooder[];
  /** Requests each flooder keeps in flight. */
  readonly concurrency: number;
  /** The serve budget of each peer and of all together, bytes a second. */
  readonly budgetPerPeer: number;
  readonly budgetInAll: number;
  /** CPU time of the mining node in each window (null without /proc). */
  readonly baselineCpuMs: number | null;
  readonly floodCpuMs: number | null;
}

/**
 * A mining node on a copy of the longer half: its blocks in `windowMs` alone, then in `windowMs`
 * while four fresh identities each keep `concurrency` requests for the first 500 blocks in flight.
 */
export async function measureFlood(chains: ForkedChains, options: { windowMs: number; concurrency: number; log: (line: string) => void }): Promise<FloodRun> {
  const { windowMs, concurrency, log } = options;
  const dataDir = await tempDataDir();
  await cp(chains.longer, dataDir, { recursive: true });
  const node = await startNode({ dataDir, mine: true, blockIntervalMs: chains.params.blockIntervalMs });
  const flooders: Libp2pNetwork[] = [];
  try {
    const height = async (): Promise<number> => (await getJson<Beacon>(node, '/beacon')).height;
    // Settled first: its first blocks follow a start.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    log(`  ${windowMs / 1000} s without the flood …`);
    const cpuA = await processCpuMs(node.child.pid);
    const h0 = await height();
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const h1 = await height();
    const cpuB = await processCpuMs(node.child.pid);
    for (let i = 0; i < 4; i++) {
      flooders.push(await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [tcpAddress(node)] }));
    }
    const target = fromHex(node.nodeId, 32);
    await Promise.all(
      flooders.map(async (net) => {
        while (!net.peers().some((p) => p.node.every((b, i) => b === target[i]))) await new Promise((resolve) => setTimeout(resolve, 50));
      }),
    );
    log(`  ${windowMs / 1000} s with 4 identities flooding it with sync requests …`);
    const request = encode(syncRequestCodec, { locator: [{ height: 0, hash: genesisBlock(chains.params).hash }], max_blocks: 500 });
    const counts = flooders.map(() => ({ requests: 0, answered: 0, busy: 0, failed: 0, bytes: 0 }));
    let flooding = true;
    const cpuC = await processCpuMs(node.child.pid);
    const h2 = await height();
    const loops = flooders.flatMap((net, i) =>
      Array.from({ length: concurrency }, async () => {
        const count = counts[i]!;
        while (flooding) {
          count.requests++;
          try {
            const answer = await net.request(target, SYNC_PROTOCOL, request, { maxResponseBytes: MAX_SYNC_ANSWER_BYTES, timeoutMs: 10_000 });
            decode(syncResponseCodec, answer);
            count.answered++;
            count.bytes += answer.length;
          } catch (error) {
            if (error instanceof PeerBusyError) count.busy++;
            else count.failed++;
          }
        }
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const h3 = await height();
    const cpuD = await processCpuMs(node.child.pid);
    flooding = false;
    await Promise.all(loops);
    return {
      windowMs,
      blockIntervalMs: chains.params.blockIntervalMs,
      baselineBlocks: h1 - h0,
      floodBlocks: h3 - h2,
      flooders: counts,
      concurrency,
      budgetPerPeer: SERVE_BYTES_PER_SECOND,
      budgetInAll: 4 * SERVE_BYTES_PER_SECOND,
      baselineCpuMs: since(cpuA, cpuB),
      floodCpuMs: since(cpuC, cpuD),
    };
  } finally {
    await Promise.all(flooders.map((net) => net.stop().catch(() => {})));
    await stopNode(node);
    await rm(dataDir, { recursive: true, force: true });
  }
}
