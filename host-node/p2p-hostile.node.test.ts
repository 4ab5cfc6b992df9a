/**
 * Libp2pNetwork against throwaway identities, on real libp2p over loopback: what silenced a node
 * before its scoring was configured (docs/network.md, "Why a stranger could silence a node"), an
 * oversized gossip frame, a gossip stream broken under a live connection, and the connections one
 * address may hold (docs/network.md, "Limits on one peer").
 */
import type { Stream } from '@libp2p/interface';
import { assert } from 'chai';
import { SigningKey } from '../core/crypto/ed25519.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { rpcProtocolId, TOPICS } from '../core/net/network.ts';
import { PEER_LIMITS } from '../core/net/peer-limits.ts';
import { test } from '../test/harness.ts';
import { startP2PNetwork } from './p2p.ts';

const start = (log?: (line: string) => void): Promise<Libp2pNetwork> =>
  startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [], ...(log ? { log } : {}) });

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const inRouter = (net: Libp2pNetwork, peer: Libp2pNetwork): boolean =>
  net.libp2p.services.pubsub.getSubscribers(TOPICS.heights).some((p) => p.equals(peer.libp2p.peerId));

test('Libp2pNetwork: identities that came and went on a peer’s address do not cut it off from this node’s gossip', async () => {
  const target = await start();
  const honest = await start();
  try {
    const heard: number[] = [];
    honest.handle(TOPICS.heights, async ({ data }) => {
      heard.push(data[0]!);
      return 'accept';
    });
    target.handle(TOPICS.heights, async () => 'accept');
    await honest.libp2p.dial(target.libp2p.getMultiaddrs()[0]!);
    await until('the honest peer subscribed', () => inRouter(target, honest));
    // With gossipsub's default scoring, 13 identities from the honest peer's address, each gone
    // again, left its score at -80 for an hour: below the publish and graylist thresholds.
    for (let i = 0; i < 13; i++) {
      const throwaway = await start();
      try {
        throwaway.handle(TOPICS.heights, async () => 'accept');
        await throwaway.libp2p.dial(target.libp2p.getMultiaddrs()[0]!);
        await until('the throwaway subscribed', () => inRouter(target, throwaway));
      } finally {
        await throwaway.stop();
      }
      // One address opens at most PEER_LIMITS.connectionsPerIpPerSecond connections a second, and
      // each identity opens two to the target: its own, and the one the target asks it to open back
      // (the dial-back check of the target's reachability, core/net/reachability.ts).
      await new Promise((resolve) => setTimeout(resolve, (2 * 1000) / (PEER_LIMITS.connectionsPerIpPerSecond - 1)));
    }
    // The GossipSub class's own method (not on the service's interface).
    const scores = target.libp2p.services.pubsub as unknown as { getScore(peer: string): number };
    const score = scores.getScore(honest.libp2p.peerId.toString());
    assert.isAtLeast(score, 0, 'the honest peer keeps a score above every threshold');
    await target.publish(TOPICS.heights, new Uint8Array([7]));
    await until('the honest peer heard the target', () => heard.includes(7));
  } finally {
    await Promise.all([target.stop(), honest.stop()]);
  }
});

test('Libp2pNetwork: a gossip frame over the bound bans its sender, and the other peers still hear the node', async () => {
  const lines: string[] = [];
  const target = await start((line) => lines.push(line));
  const honest = await start();
  const attacker = await start();
  try {
    const heard: number[] = [];
    honest.handle(TOPICS.heights, async ({ data }) => {
      heard.push(data[0]!);
      return 'accept';
    });
    target.handle(TOPICS.heights, async () => 'accept');
    attacker.handle(TOPICS.heights, async () => 'accept');
    for (const peer of [honest, attacker]) {
      await peer.libp2p.dial(target.libp2p.getMultiaddrs()[0]!);
      // Both ways: a publish goes only to the peers whose subscriptions have arrived.
      await until('subscribed', () => inRouter(target, peer) && inRouter(peer, target));
    }
    await attacker.publish(TOPICS.heights, new Uint8Array(3 * 1024 * 1024));
    await until('the sender banned', () => lines.some((l) => l.includes('oversized-frame')));
    await until('the sender hung up on', () => target.libp2p.getConnections(attacker.libp2p.peerId).length === 0);
    // Refused after the handshake: the dial may resolve, but the connection is closed at once.
    await attacker.libp2p.dial(target.libp2p.getMultiaddrs()[0]!).catch(() => {});
    await until('the redial refused', () => target.libp2p.getConnections(attacker.libp2p.peerId).length === 0);
    assert.isFalse(inRouter(target, attacker));
    await target.publish(TOPICS.heights, new Uint8Array([9]));
    await until('the honest peer heard the target', () => heard.includes(9));
  } finally {
    await Promise.all([target.stop(), honest.stop(), attacker.stop()]);
  }
});

test('Libp2pNetwork: a gossip stream broken under a live connection ends the connection, and gossip flows again once reconnected', async () => {
  const lines: string[] = [];
  const log = (line: string): number => lines.push(line);
  const target = await start(log);
  const honest = await startP2PNetwork({
    key: SigningKey.generate(),
    port: 0,
    listenHost: '127.0.0.1',
    bootstrap: [target.libp2p.getMultiaddrs()[0]!.toString()],
    log,
  });
  try {
    const heard: number[] = [];
    honest.handle(TOPICS.heights, async ({ data }) => {
      heard.push(data[0]!);
      return 'accept';
    });
    target.handle(TOPICS.heights, async () => 'accept');
    await until('the honest peer subscribed', () => inRouter(target, honest));
    const streams = (target.libp2p.services.pubsub as unknown as { streamsOutbound: Map<string, { rawStream: { abort(error: Error): void } }> })
      .streamsOutbound;
    const key = honest.libp2p.peerId.toString();
    await until('the target’s stream to the honest peer', () => streams.has(key));
    // What a backlog over the bound or a reset does: gossipsub forgets the stream, and would never
    // open another on this connection. Either side hangs up: the reader, whose read fails, or the
    // target, whose check finds the stream gone.
    const before = target.libp2p.getConnections(honest.libp2p.peerId)[0]!;
    streams.get(key)!.rawStream.abort(new Error('broken on purpose'));
    await until('a hang-up', () => lines.some((l) => l.includes('hanging up on')), 15_000);
    await until('reconnected', () => target.libp2p.getConnections(honest.libp2p.peerId).some((c) => c.id !== before.id && c.status === 'open'), 15_000);
    await until('the new stream', () => streams.has(key) && inRouter(target, honest));
    await target.publish(TOPICS.heights, new Uint8Array([5]));
    await until('the honest peer heard the target', () => heard.includes(5));
  } finally {
    await Promise.all([target.stop(), honest.stop()]);
  }
});

test('Libp2pNetwork: one address holds at most connectionsPerIp connections; the next is refused by name', async () => {
  const lines: string[] = [];
  const target = await start((line) => lines.push(line));
  const peers: Libp2pNetwork[] = [];
  try {
    for (let i = 0; i <= PEER_LIMITS.connectionsPerIp; i++) {
      const peer = await start();
      peers.push(peer);
      await peer.libp2p.dial(target.libp2p.getMultiaddrs()[0]!).catch(() => {});
      // One address opens at most PEER_LIMITS.connectionsPerIpPerSecond connections a second, and
      // each identity opens two to the target: its own, and the one the target asks it to open back
      // (the dial-back check of the target's reachability, core/net/reachability.ts).
      await new Promise((resolve) => setTimeout(resolve, (2 * 1000) / (PEER_LIMITS.connectionsPerIpPerSecond - 1)));
    }
    const connected = peers.filter((peer) => target.libp2p.getConnections(peer.libp2p.peerId).length > 0);
    assert.equal(connected.length, PEER_LIMITS.connectionsPerIp);
    assert.isTrue(lines.some((line) => line.includes('connections-per-ip')));
    // A place frees when a connection closes.
    await connected[0]!.stop();
    await until('the place freed', () => target.libp2p.getConnections().length < PEER_LIMITS.connectionsPerIp);
    const last = peers.at(-1)!;
    await last.libp2p.dial(target.libp2p.getMultiaddrs()[0]!);
    await until('the refused peer let in', () => target.libp2p.getConnections(last.libp2p.peerId).length === 1);
  } finally {
    await Promise.all([target, ...peers].map((net) => net.stop()));
  }
});

test('Libp2pNetwork: request streams left silent past the read deadline cost their opener, five of them a ban', async () => {
  const lines: string[] = [];
  const target = await startP2PNetwork({
    key: SigningKey.generate(),
    port: 0,
    listenHost: '127.0.0.1',
    bootstrap: [],
    rpc: { readMs: 200 },
    log: (line) => lines.push(line),
  });
  const peer = await start();
  try {
    target.serve('echo', async ({ data }) => data);
    const address = target.libp2p.getMultiaddrs()[0]!;
    // 2 points each (PENALTIES['stalled-request']): the fifth reaches the ban at 10.
    const stalled: Stream[] = [];
    for (let i = 0; i < 4; i++) stalled.push(await peer.libp2p.dialProtocol(address, rpcProtocolId('echo')));
    await until('four streams reset at the read deadline', () => stalled.every((stream) => stream.status !== 'open'));
    assert.isFalse(
      lines.some((l) => l.includes('banning')),
      'eight points are not a ban',
    );
    assert.equal(target.libp2p.getConnections(peer.libp2p.peerId).length, 1);
    await peer.libp2p.dialProtocol(address, rpcProtocolId('echo'));
    await until('the opener banned', () => lines.some((l) => l.includes('banning') && l.includes('stalled-request')));
    await until('and hung up on', () => target.libp2p.getConnections(peer.libp2p.peerId).length === 0);
  } finally {
    await Promise.all([target.stop(), peer.stop()]);
  }
});
