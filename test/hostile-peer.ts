/**
 * A foreign peer built from the project's own libp2p (host-node/p2p.ts), and the attack sequence
 * it runs against one node of a devnet: junk on every topic, forged transactions, 1 MiB and 3 MiB
 * gossip frames, oversized and stalled request streams, a sync-request flood from four identities,
 * each phase under fresh throwaway identities. test/hostile.node.test.ts and bench/hostile run it.
 */
import { readFile } from 'node:fs/promises';
import { type Multiaddr, multiaddr } from '@multiformats/multiaddr';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { encode } from '../core/encoding/codec.ts';
import { fromHex } from '../core/encoding/hex.ts';
import { genesisBlock } from '../core/ledger/block.ts';
import { devnet } from '../core/ledger/params.ts';
import { signTx } from '../core/ledger/tx.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { appTopic, rpcProtocolId, TOPICS } from '../core/net/network.ts';
import { COUNTERSIGN_PROTOCOL } from '../core/netgraph/netgraph.ts';
import { MAX_SYNC_ANSWER_BYTES, SYNC_PROTOCOL, syncRequestCodec } from '../core/node/wire.ts';
import { startP2PNetwork } from '../host-node/p2p.ts';
import { getJson, type MeshProcess, tcpAddress, waitFor } from './mesh-process.ts';

const MiB = 1024 * 1024;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One phase of the attack: what a fresh identity does once connected to the target. */
export interface Phase {
  readonly name: string;
  run(peer: Libp2pNetwork, target: MeshProcess): Promise<void>;
}

function junk(bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  for (let at = 0; at < bytes; at += 65_536) crypto.getRandomValues(out.subarray(at, Math.min(bytes, at + 65_536)));
  return out;
}

// Publishes on a topic the peer does not handle: gossipsub sends it to the target all the same.
async function flood(peer: Libp2pNetwork, topic: string, messages: readonly Uint8Array[]): Promise<void> {
  for (const data of messages) {
    await peer.publish(topic, data).catch(() => {});
    await sleep(5);
  }
}

/** Junk on each of the node's topics and an app topic, one identity per topic. */
const junkPhases: Phase[] = [...Object.values(TOPICS), appTopic('hostile')].map((topic) => ({
  name: `junk on ${topic}`,
  run: (peer) =>
    flood(
      peer,
      topic,
      Array.from({ length: 40 }, (_, i) => junk(1 + ((i * 977) % 4096))),
    ),
}));

/** Transfers whose signatures do not hold: one with a flipped byte, one signed by a key not the sender's. */
const forgedTransactions: Phase = {
  name: 'forged transactions',
  run: async (peer, target) => {
    const key = SigningKey.generate();
    const forged: Uint8Array[] = [];
    for (let nonce = 1; nonce <= 40; nonce++) {
      const honest = await signTx({ kind: 'Transfer', sender: key.publicKey, nonce, to: key.publicKey, amount: 1n }, key, 'mesh-devnet');
      const flipped = honest.bytes.slice();
      flipped[flipped.length - 1]! ^= 0xff;
      forged.push(flipped);
      const victim = fromHex(target.nodeId);
      forged.push((await signTx({ kind: 'Transfer', sender: victim, nonce, to: key.publicKey, amount: 1n }, key, 'mesh-devnet')).bytes);
    }
    await flood(peer, TOPICS.transactions, forged);
  },
};

const frames = (bytes: number): Phase => ({
  name: `${bytes / MiB} MiB gossip frames`,
  run: async (peer) => {
    await flood(peer, TOPICS.blocks, [junk(bytes), junk(bytes), junk(bytes)]);
    await sleep(500);
  },
});

/** Request streams that announce 64 MiB and send 4 MiB of it, eight at once. */
const oversizedRequests: Phase = {
  name: 'oversized request streams',
  run: async (peer, target) => {
    const id = rpcProtocolId(COUNTERSIGN_PROTOCOL);
    const chunk = junk(256 * 1024);
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        const stream = await peer.libp2p.dialProtocol(targetAddress(target), id).catch(() => null);
        if (stream === null) return;
        // uvarint 64 MiB, then the body until the target refuses it.
        stream.send(Uint8Array.of(0x80, 0x80, 0x80, 0x20));
        for (let sent = 0; sent < 4 * MiB && stream.writeStatus === 'writable'; sent += chunk.length) {
          if (!stream.send(chunk)) await stream.onDrain().catch(() => {});
        }
        stream.abort(new Error('done'));
      }),
    );
  },
};

/** Request streams opened and left silent, as many as a connection takes. */
const stalledRequests: Phase = {
  name: 'stalled request streams',
  run: async (peer, target) => {
    const id = rpcProtocolId(COUNTERSIGN_PROTOCOL);
    const streams = await Promise.all(Array.from({ length: 200 }, () => peer.libp2p.dialProtocol(targetAddress(target), id).catch(() => null)));
    // Held past the target's read deadline (10 s).
    await sleep(11_000);
    for (const stream of streams) stream?.abort(new Error('done'));
  },
};

/**
 * Requests for the chain from genesis on, 500 blocks at a time, as fast as the target answers, for
 * 5 s: the phase's identity and three more at once, 16 requests in flight each.
 */
const syncFlood: Phase = {
  name: 'sync-request flood from four identities',
  run: async (peer, target) => {
    const params = devnet((await getJson<{ block_interval_ms?: number }>(target, '/wallet/config.json')).block_interval_ms);
    const request = encode(syncRequestCodec, { locator: [{ height: 0, hash: genesisBlock(params).hash }], max_blocks: 500 });
    const others = await Promise.all(
      Array.from({ length: 3 }, () => startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] })),
    );
    try {
      await Promise.all(others.map((other) => other.libp2p.dial(targetAddress(target)).catch(() => null)));
      const node = fromHex(target.nodeId, 32);
      const until = Date.now() + 5_000;
      await Promise.all(
        [peer, ...others].flatMap((net) =>
          Array.from({ length: 16 }, async () => {
            while (Date.now() < until) {
              await net.request(node, SYNC_PROTOCOL, request, { maxResponseBytes: MAX_SYNC_ANSWER_BYTES, timeoutMs: 10_000 }).catch(() => sleep(10));
            }
          }),
        ),
      );
    } finally {
      await Promise.all(others.map((other) => other.stop()));
    }
  },
};

const targetAddress = (target: MeshProcess): Multiaddr => multiaddr(tcpAddress(target));

/** The attack, in order. */
export const ATTACK: readonly Phase[] = [...junkPhases, forgedTransactions, frames(1 * MiB), frames(3 * MiB), oversizedRequests, stalledRequests, syncFlood];

/** What one run of the attack did: each phase's name and whether the target let its identity in. */
export interface AttackReport {
  readonly phases: { name: string; connected: boolean; ms: number }[];
}

/**
 * Runs `phases` against `target`, each under a fresh identity that connects, subscribes to every
 * topic (so the target's gossip flows to it), acts and leaves.
 */
export async function attack(target: MeshProcess, phases: readonly Phase[] = ATTACK): Promise<AttackReport> {
  const report: AttackReport = { phases: [] };
  for (const phase of phases) {
    const started = Date.now();
    const peer = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] });
    let connected = false;
    try {
      for (const topic of Object.values(TOPICS)) peer.handle(topic, async () => 'ignore');
      connected = await peer.libp2p.dial(targetAddress(target)).then(
        () => true,
        () => false,
      );
      // Gossipsub needs its streams both ways before a publish reaches the target.
      if (connected) await sleep(300);
      await phase.run(peer, target);
    } finally {
      await peer.stop();
    }
    report.phases.push({ name: phase.name, connected, ms: Date.now() - started });
    // One address opens at most five connections a second.
    await sleep(250);
  }
  return report;
}

interface Beacon {
  readonly height: number;
  readonly hash: string;
}

/** Resolves with the tip once every node reports the same one at a height of at least `minHeight`. */
export async function oneTip(nodes: readonly MeshProcess[], minHeight: number, timeoutMs: number): Promise<Beacon> {
  return waitFor(
    `${nodes.length} nodes on one tip at height ≥ ${minHeight}`,
    async () => {
      const tips = await Promise.all(nodes.map((n) => getJson<Beacon>(n, '/beacon')));
      const first = tips[0]!;
      return first.height >= minHeight && tips.every((t) => t.hash === first.hash) ? first : undefined;
    },
    timeoutMs,
    20,
  );
}

/** The highest tip among `nodes`. */
export async function highest(nodes: readonly MeshProcess[]): Promise<number> {
  const tips = await Promise.all(nodes.map((n) => getJson<Beacon>(n, '/beacon')));
  return Math.max(...tips.map((t) => t.height));
}

/** Samples a process's resident memory (Linux /proc) and its /health answers while it runs. */
export function watch(node: MeshProcess, everyMs = 250): { stop(): { peakRssBytes: number; healthFailures: string[]; healthChecks: number } } {
  let peakRssBytes = 0;
  let healthChecks = 0;
  const healthFailures: string[] = [];
  const sample = async (): Promise<void> => {
    const status = await readFile(`/proc/${node.child.pid}/status`, 'utf8').catch(() => '');
    const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
    peakRssBytes = Math.max(peakRssBytes, kib * 1024);
    healthChecks++;
    const answer = await fetch(`${node.url}/health`, { signal: AbortSignal.timeout(2_000) }).then(
      (response) => (response.ok ? null : `status ${response.status}`),
      (error: unknown) => String(error),
    );
    if (answer !== null) healthFailures.push(answer);
  };
  let running = true;
  const loop = (async () => {
    while (running) {
      await sample();
      await sleep(everyMs);
    }
  })();
  return {
    stop: () => {
      running = false;
      void loop;
      return { peakRssBytes, healthFailures, healthChecks };
    },
  };
}

/** The resident memory of a process now. */
export async function rssBytes(node: MeshProcess): Promise<number> {
  const status = await readFile(`/proc/${node.child.pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
}
