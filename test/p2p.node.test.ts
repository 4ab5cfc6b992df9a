/**
 * libp2p between a real `mesh node` process and a peer in this test process: the NodeId is the
 * libp2p identity, gossip reaches the node, and a peer sending invalid data is penalised (hung up
 * on and refused for a while).
 */

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { multiaddr } from '@multiformats/multiaddr';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { decode } from '../core/encoding/codec.ts';
import { toHex } from '../core/encoding/hex.ts';
import { IHAVE_HEARTBEATS } from '../core/net/gossip-options.ts';
import { TOPICS } from '../core/net/network.ts';
import { heightCodec } from '../core/node/wire.ts';
import { GOSSIPSUB } from '../core/sim/sim-network.ts';
import { startP2PNetwork } from '../host-node/p2p.ts';
import { startNode, stopAll, stopNode, tcpAddress, waitFor } from './mesh-process.ts';

after(stopAll);

test('a node announces its height to a new peer, signed by the libp2p key that is its NodeId', async () => {
  const node = await startNode({ blockIntervalMs: 500 });
  const peer = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [tcpAddress(node)] });
  const heard: { origin: string; height: number }[] = [];
  try {
    peer.handle(TOPICS.heights, async (m) => {
      heard.push({ origin: toHex(m.origin), height: decode(heightCodec, m.data).height });
      return 'accept';
    });
    await waitFor('connected', async () => peer.peers().some((p) => toHex(p.node) === node.nodeId));
    const announcement = await waitFor('an announcement', async () => heard.find((h) => h.origin === node.nodeId), 10_000);
    assert.equal(announcement.height, 0);
  } finally {
    await peer.stop();
    await stopNode(node);
  }
});

test('a peer that sends invalid blocks is disconnected and refused', async () => {
  const node = await startNode({ blockIntervalMs: 500 });
  const peer = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [tcpAddress(node)] });
  try {
    peer.handle(TOPICS.heights, async () => 'ignore');
    await waitFor('subscribed', async () => peer.libp2p.services.pubsub.getSubscribers(TOPICS.blocks).length > 0);
    for (let i = 0; i < 12; i++) await peer.publish(TOPICS.blocks, Uint8Array.of(0xde, 0xad, i));
    await waitFor('hung up', async () => !peer.peers().some((p) => toHex(p.node) === node.nodeId), 10_000);
    // The node refuses it for a while: a new dial fails or is closed at once by the node's gater.
    const again = await peer.libp2p.dial(multiaddr(tcpAddress(node))).catch(() => null);
    // The dial fails, or the connection it made is closed by the node: either way it has ended.
    if (again !== null) await waitFor('the node ended the new connection', async () => again.timeline.close !== undefined, 10_000);
    assert.ok(!peer.peers().some((p) => toHex(p.node) === node.nodeId), 'not connected again');
    assert.match(node.log(), /banning/);
  } finally {
    await peer.stop();
    await stopNode(node);
  }
});

test("gossipsub runs with the node's options, those the simulator models", async () => {
  const peer = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] });
  try {
    // gossipsub keeps its options on the service; the type the network gives it does not show them.
    const { opts } = peer.libp2p.services.pubsub as unknown as { opts: { mcacheGossip: number } };
    assert.equal(opts.mcacheGossip, IHAVE_HEARTBEATS);
    assert.equal(GOSSIPSUB.historyGossip, IHAVE_HEARTBEATS);
  } finally {
    await peer.stop();
  }
});
