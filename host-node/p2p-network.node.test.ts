/**
 * The network compliance suite on real libp2p: Node hosts on loopback, connected as each test asks.
 */
import { lpStream } from '@libp2p/utils';
import { assert } from 'chai';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { toHex } from '../core/encoding/hex.ts';
import { PeerBusyError, RemoteError } from '../core/net/errors.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { type RpcLimits, rpcProtocolId, TOPICS } from '../core/net/network.ts';
import { negotiationBytes } from '../core/net/traffic.ts';
import { test } from '../test/harness.ts';
import { networkCompliance } from '../test/network-compliance.ts';
import { startP2PNetwork } from './p2p.ts';

const connected = (from: Libp2pNetwork, to: Libp2pNetwork): boolean => from.libp2p.getPeers().some((p) => p.equals(to.libp2p.peerId));

networkCompliance('Libp2pNetwork', async (count, links, limits) => {
  const networks: Libp2pNetwork[] = [];
  // Where a test draws the links (a line, a pair and a stranger), no node answers lookups: peer
  // routing would connect the nodes it finds, and the links would not hold (p2p-routing.node.test.ts).
  const routing = links === undefined ? 'server' : 'client';
  for (let i = 0; i < count; i++)
    networks.push(
      await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [], routing, ...(limits ? { rpc: limits } : {}) }),
    );
  const pairs = links ?? networks.flatMap((_, i) => networks.slice(i + 1).map((__, j) => [i, i + 1 + j] as const));
  for (const [a, b] of pairs) {
    const from = networks[a]!;
    const to = networks[b]!;
    await from.libp2p.dial(to.libp2p.getMultiaddrs()[0]!);
    while (!connected(from, to) || !connected(to, from)) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return {
    networks,
    disconnect: async (a, b) => networks[a]!.libp2p.hangUp(networks[b]!.libp2p.peerId),
    stop: async (a) => networks[a]!.stop(),
    close: async () => {
      await Promise.all(networks.map((net) => net.stop()));
    },
  };
});

const start = (rpc: Partial<RpcLimits>): Promise<Libp2pNetwork> =>
  startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [], rpc });

test('Libp2pNetwork: a requester that never sends its request frame is cut off at the read deadline', async () => {
  const [a, b] = [await start({}), await start({ readMs: 200 })];
  try {
    let called = false;
    b.serve('echo', async ({ data }) => {
      called = true;
      return data;
    });
    const stream = await a.libp2p.dialProtocol(b.libp2p.getMultiaddrs()[0]!, rpcProtocolId('echo'));
    const started = Date.now();
    const ended = await lpStream(stream)
      .read()
      .then(
        () => 'answered',
        (error: unknown) => (error as Error).name,
      );
    assert.notEqual(ended, 'answered');
    assert.isBelow(Date.now() - started, 5_000);
    assert.isFalse(called);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('Libp2pNetwork: a server with a lower limit than its requester answers the extra requests as busy', async () => {
  const [a, b] = [await start({ streams: 8 }), await start({ streams: 2 })];
  try {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered = 0;
    let bothIn: () => void = () => {};
    const full = new Promise<void>((resolve) => (bothIn = resolve));
    b.serve('gate', async ({ data }) => {
      if (++entered === 2) bothIn();
      await gate;
      return data;
    });
    await a.libp2p.dial(b.libp2p.getMultiaddrs()[0]!);
    const within = [0, 1].map((i) => a.request(b.self, 'gate', Uint8Array.of(i)));
    // The third asks only once both are held in the handler: b's two streams are then taken.
    await full;
    const busy = await a.request(b.self, 'gate', Uint8Array.of(9)).catch((error: unknown) => error);
    assert.instanceOf(busy, PeerBusyError, String(busy));
    release();
    assert.deepEqual(
      (await Promise.all(within)).map((answer) => answer[0]),
      [0, 1],
    );
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('Libp2pNetwork: an answer outside the protocol (unknown status, empty frame) is a bad response, not an answer', async () => {
  const [a, b] = [await start({}), await start({})];
  try {
    await a.libp2p.dial(b.libp2p.getMultiaddrs()[0]!);
    for (const [name, frame] of [
      ['unknown-status', Uint8Array.of(9, 1, 2)],
      ['empty-frame', new Uint8Array(0)],
    ] as const) {
      await b.libp2p.handle(rpcProtocolId(name), async (stream) => {
        const lp = lpStream(stream);
        await lp.read();
        await lp.write(frame);
        await stream.close();
      });
      const failed = await a.request(b.self, name, Uint8Array.of(1)).catch((error: unknown) => error);
      assert.instanceOf(failed, RemoteError, `${name}: ${String(failed)}`);
      assert.equal((failed as RemoteError).code, 'bad-response');
      assert.equal((failed as RemoteError).status, 502);
    }
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('Libp2pNetwork: gossip published when a peer joins reaches that peer, on every new connection', async () => {
  // A new peer's subscriptions may arrive before this node's own gossip stream to it is open; the
  // join is reported once a publish reaches the peer (a node's first height announcement to a new
  // peer was lost one time in a few, and sync waited a second for the next).
  for (let round = 0; round < 5; round++) {
    const [a, b] = [await start({}), await start({})];
    try {
      const heard: string[] = [];
      for (const [self, other] of [
        [a, b],
        [b, a],
      ] as const) {
        self.handle(TOPICS.heights, async (m) => {
          heard.push(`${toHex(m.origin)}→${toHex(self.self)}`);
          return 'ignore';
        });
        self.onPeerJoined((peer) => {
          if (toHex(peer) === toHex(other.self)) void self.publish(TOPICS.heights, Uint8Array.of(round));
        });
      }
      await a.libp2p.dial(b.libp2p.getMultiaddrs()[0]!);
      const both = [`${toHex(a.self)}→${toHex(b.self)}`, `${toHex(b.self)}→${toHex(a.self)}`];
      const deadline = Date.now() + 5_000;
      while (!both.every((h) => heard.includes(h)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.includeMembers(heard, both, `round ${round}`);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  }
});

test('Libp2pNetwork: two pings to a peer at once both get their round trip (the connection monitor pings beside the node)', async () => {
  const [a, b] = [await start({}), await start({})];
  try {
    await a.libp2p.dial(b.libp2p.getMultiaddrs()[0]!);
    const rtts = await Promise.all([a.ping(b.self), a.ping(b.self)]);
    for (const rtt of rtts) assert.isAtLeast(rtt, 0);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('Libp2pNetwork: traffic counts the bytes sent by gossip topic, request protocol, ping and gossipsub control', async () => {
  const [a, b] = [await start({}), await start({})];
  try {
    const heard = new Set<string>();
    for (const net of [a, b]) {
      net.handle(TOPICS.blocks, async () => {
        heard.add(toHex(net.self));
        return 'accept';
      });
    }
    b.serve('echo', async ({ data }) => data);
    let joined = false;
    a.onPeerJoined(() => (joined = true));
    a.handle(TOPICS.heights, async () => 'ignore');
    b.handle(TOPICS.heights, async () => 'ignore');
    await a.libp2p.dial(b.libp2p.getMultiaddrs()[0]!);
    while (!joined) await new Promise((resolve) => setTimeout(resolve, 10));
    await a.publish(TOPICS.blocks, new Uint8Array(1_000));
    while (!heard.has(toHex(b.self))) await new Promise((resolve) => setTimeout(resolve, 10));
    await a.request(b.self, 'echo', new Uint8Array(300));
    await a.ping(b.self);
    const sent = a.traffic();
    // The message: its data, the signed envelope (from, seqno, signature, topic) and its framing.
    assert.isAtLeast(sent[TOPICS.blocks]!, 1_000 + 64 + TOPICS.blocks.length);
    assert.isAtMost(sent[TOPICS.blocks]!, 1_000 + 200);
    // Each request and ping opens a stream: the negotiation of its protocol, then the frame.
    assert.equal(sent['rpc echo'], negotiationBytes(rpcProtocolId('echo')) + 2 + 300);
    assert.equal(sent.ping, 2 * (negotiationBytes('/ipfs/ping/1.0.0') + 32));
    assert.isAbove(sent['gossipsub-control']!, 0, 'subscriptions');
    // The answer is the server's: its status byte, the body and the length prefix.
    assert.equal(b.traffic()['rpc echo'], negotiationBytes(rpcProtocolId('echo')) + 2 + 1 + 300);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test("Libp2pNetwork: a peer's loopback address at this node's own port is not dialled (that would be itself)", async () => {
  const net = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] });
  const inbound: string[] = [];
  net.libp2p.addEventListener('connection:open', (event) => inbound.push(event.detail.remoteAddr.toString()));
  try {
    const own = net.addresses().find((a) => a.includes('/tcp/') && !a.includes('/ws'))!;
    const port = /\/tcp\/(\d+)/.exec(own)![1];
    // Another node, whose announced loopback address happens to name this node's port (as every
    // node of a lab or a fleet on the default port does).
    const other = SigningKey.generate().publicKey;
    const failure = await net.dial(other, `/ip4/127.0.0.1/tcp/${port}`).then(
      () => 'connected',
      (error: unknown) => String(error),
    );
    assert.match(failure, /denied/);
    assert.deepEqual(inbound, [], 'no connection to itself was opened');
  } finally {
    await net.stop();
  }
});
