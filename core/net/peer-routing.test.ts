/**
 * Peer routing on the real Libp2pNetwork (its Kademlia DHT, docs/network.md "Peer routing"), over a
 * libp2p transport in memory, on every runtime: a node reaches another by its NodeId alone.
 */
import { generateKeyPair } from '@libp2p/crypto/keys';
import { lpStream } from '@libp2p/utils';
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { type Clock, systemClock } from '../time/clock.ts';
import { PeerUnreachableError } from './errors.ts';
import { Libp2pNetwork, ROUTING_PROTOCOL } from './libp2p-network.ts';
import { memoryTransport } from './memory-transport.test-util.ts';
import { streamProtocolId } from './network.ts';
import { PEER_LIMITS } from './peer-limits.ts';
import { NOT_ED25519_ID, peerInfoBytes, routingMessage } from './routing-message.test-util.ts';

let started = 0;

/** Every line each node logged, by node. */
const logs = new Map<Libp2pNetwork, string[]>();

async function start(routing: 'server' | 'client', clock: Clock = systemClock): Promise<Libp2pNetwork> {
  const address = `/memory/peer-routing-${Math.random().toString(36).slice(2)}-${++started}`;
  const lines: string[] = [];
  const node = await Libp2pNetwork.start(
    { privateKey: await generateKeyPair('Ed25519'), addresses: { listen: [address] }, transports: [memoryTransport()] },
    { routing, clock, log: (line) => lines.push(line) },
  );
  logs.set(node, lines);
  return node;
}

/** Polls until `check` holds; fails after `timeoutMs`. */
async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The line in which `node` banned `peer`, once it has. */
const banOf = (node: Libp2pNetwork, peer: Libp2pNetwork): string | undefined =>
  logs.get(node)!.find((line) => line.startsWith(`p2p: banning ${peer.libp2p.peerId.toString()}`));

const connected = (from: Libp2pNetwork, to: Libp2pNetwork): boolean => from.peers().some((p) => toHex(p.node) === toHex(to.self));

/** `from` dials `to` at its address, as a bootstrap would, and both see the connection. */
async function join(from: Libp2pNetwork, to: Libp2pNetwork): Promise<void> {
  await from.dial(to.self, to.addresses()[0]!);
  while (!connected(to, from)) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Waits until each node's routing table holds `peers[i]` peers (a new contact joins once pinged). */
async function tablesHold(nodes: readonly Libp2pNetwork[], peers: readonly number[]): Promise<void> {
  const size = (node: Libp2pNetwork): number => (node.libp2p.services.dht as unknown as { routingTable: { size: number } }).routingTable.size;
  while (nodes.some((node, i) => size(node) < peers[i]!)) await new Promise((resolve) => setTimeout(resolve, 5));
}

async function withNodes(
  routing: readonly ('server' | 'client')[],
  body: (nodes: Libp2pNetwork[]) => Promise<void>,
  clock: Clock = systemClock,
): Promise<void> {
  const nodes = await Promise.all(routing.map((r) => start(r, clock)));
  try {
    await body(nodes);
  } finally {
    await Promise.all(nodes.map((node) => node.stop()));
  }
}

test('peer routing: a request and a stream reach a node known only by its NodeId, through a peer both know', async () => {
  // b and c only ask lookups (clients): nothing connects them until b wants c.
  await withNodes(['server', 'client', 'client'], async ([hub, b, c]) => {
    await join(b!, hub!);
    await join(c!, hub!);
    c!.serve('echo', async ({ data }) => data);
    const protocol = streamProtocolId('test', 'echo');
    // Echoes until the stream ends (the test resets it).
    c!.serveStream(protocol, (stream) => {
      (async () => {
        for await (const chunk of stream) await stream.write(chunk);
        await stream.closeWrite();
      })().catch(() => {});
    });
    assert.isFalse(connected(b!, c!), 'b has never met c');
    assert.deepEqual([...(await b!.request(c!.self, 'echo', Uint8Array.of(1, 2)))], [1, 2]);
    assert.isTrue(connected(b!, c!), 'b connected to c directly');
    const toC = await b!.openStream(c!.self, protocol);
    await toC.write(Uint8Array.of(9));
    const echoed = await toC[Symbol.asyncIterator]().next();
    assert.deepEqual([...(echoed.value as Uint8Array)], [9]);
    toC.reset();
  });
});

test('peer routing: a lookup crosses the mesh past the neighbours, along a line of five once each has looked itself up', async () => {
  await withNodes(['server', 'server', 'server', 'server', 'server'], async (line) => {
    for (let i = 1; i < line.length; i++) await join(line[i]!, line[i - 1]!);
    await tablesHold(line, [1, 2, 2, 2, 1]);
    // Kademlia finds a node by asking ever closer peers, which each node learns by looking itself
    // up (at start, then every 5 minutes): one round of it, from the far end.
    for (const node of [...line].reverse()) for await (const _ of node.libp2p.services.dht.getClosestPeers(node.libp2p.peerId.toMultihash().bytes));
    const [first, last] = [line[0]!, line.at(-1)!];
    last.serve('echo', async ({ data }) => data);
    assert.deepEqual([...(await first.request(last.self, 'echo', Uint8Array.of(5)))], [5]);
  });
});

test('peer routing: a node nobody knows is unreachable, and the failure says routing found no address', async () => {
  await withNodes(['server', 'server', 'server'], async ([a, b, stranger]) => {
    await join(a!, b!);
    stranger!.serve('echo', async ({ data }) => data);
    const error = await a!.request(stranger!.self, 'echo', Uint8Array.of(1), { timeoutMs: 15_000 }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.instanceOf(error, PeerUnreachableError, String(error));
    assert.match((error as Error).message, /peer routing found no address/);
  });
});

test('peer routing: a node without peers fails at once, saying it has nobody to ask', async () => {
  await withNodes(['server', 'server'], async ([alone, other]) => {
    const error = await alone!.request(other!.self, 'echo', Uint8Array.of(1)).then(
      () => null,
      (e: unknown) => e,
    );
    assert.instanceOf(error, PeerUnreachableError, String(error));
    assert.match((error as Error).message, /no peer of this node answers lookups/);
  });
});

// ---- bad input ----

const FIND_NODE = 4;
const PUT_VALUE = 0;

test('peer routing: a flood of lookups is served up to its budget a minute, then refused and banned', async () => {
  await withNodes(
    ['server', 'client'],
    async ([victim, flooder]) => {
      await join(flooder!, victim!);
      let answered = 0;
      const ask = Uint8Array.from(routingMessage(FIND_NODE, [], victim!.libp2p.peerId.toMultihash().bytes));
      // One stream carries request after request, as the protocol allows, until the victim cuts it;
      // then one new stream after another, each refused, until the victim bans the flooder.
      for (let streams = 0; banOf(victim!, flooder!) === undefined && streams < 20; streams++) {
        const stream = await flooder!.libp2p.dialProtocol(victim!.libp2p.peerId, ROUTING_PROTOCOL).catch(() => null);
        if (stream === null) break;
        const lp = lpStream(stream);
        try {
          for (;;) {
            await lp.write(ask);
            await lp.read();
            answered++;
          }
        } catch {
          stream.abort(new Error('refused'));
        }
      }
      await until('the victim bans the flooder', () => banOf(victim!, flooder!) !== undefined);
      assert.match(banOf(victim!, flooder!)!, /routing-flood/);
      // The flooder's own self-lookup may have spent one or two of its budget.
      assert.isAtMost(answered, PEER_LIMITS.routingRequestsPerMinute);
      assert.isAtLeast(answered, PEER_LIMITS.routingRequestsPerMinute - 5);
      await until('the flooder is cut off', () => !connected(victim!, flooder!));
      // The whole flood falls in one minute of the budget, however slowly a busy machine runs it.
    },
    frozenClock,
  );
});

/** Real timers, and a time that stands still. */
const frozenClock: Clock = { ...systemClock, now: () => 1_800_000_000_000 };

test('peer routing: a routing message over the bound bans its sender at once; a request for records costs points', async () => {
  await withNodes(['server', 'client', 'client'], async ([victim, big, storer]) => {
    await join(big!, victim!);
    const stream = await big!.libp2p.dialProtocol(victim!.libp2p.peerId, ROUTING_PROTOCOL);
    await lpStream(stream)
      .write(routingMessage(FIND_NODE, [], new Uint8Array(PEER_LIMITS.routingMessageBytes + 1)))
      .catch(() => {});
    await until('the victim bans the sender of the oversized message', () => banOf(victim!, big!) !== undefined);
    assert.match(banOf(victim!, big!)!, /oversized-routing-message/);

    await join(storer!, victim!);
    for (let i = 0; i < 2; i++) {
      const put = await storer!.libp2p.dialProtocol(victim!.libp2p.peerId, ROUTING_PROTOCOL).catch(() => null);
      if (put === null) break;
      const lp = lpStream(put);
      await lp.write(routingMessage(PUT_VALUE, [], Uint8Array.of(1, 2, 3))).catch(() => {});
      await lp.read().catch(() => {});
    }
    await until('the victim bans the peer that asked it to keep records', () => banOf(victim!, storer!) !== undefined);
    assert.match(banOf(victim!, storer!)!, /invalid-routing-message: a routing request of type PUT_VALUE/);
  });
});

for (const [what, closer] of [
  ['a peer that is not an Ed25519 key', () => [peerInfoBytes(NOT_ED25519_ID, [])]],
  ['an address that does not parse', (id: Uint8Array) => [peerInfoBytes(id, [Uint8Array.of(0xff, 0xff, 0xff)])]],
  ['more than 20 peers', (id: Uint8Array) => Array.from({ length: PEER_LIMITS.routingPeers + 1 }, () => peerInfoBytes(id, []))],
] as const) {
  test(`peer routing: an answer with ${what} is refused, and its sender penalised until banned`, async () => {
    await withNodes(['server', 'client', 'server'], async ([asker, liar, other]) => {
      // The liar answers every lookup with the malformed answer.
      const answer = routingMessage(FIND_NODE, closer(other!.libp2p.peerId.toMultihash().bytes));
      await liar!.libp2p.handle(ROUTING_PROTOCOL, (stream) => {
        const lp = lpStream(stream);
        void (async () => {
          for (;;) {
            await lp.read();
            await lp.write(answer);
          }
        })().catch(() => {});
      });
      await join(asker!, liar!);
      const failed = await asker!.request(other!.self, 'echo', Uint8Array.of(1), { timeoutMs: 15_000 }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.instanceOf(failed, PeerUnreachableError, String(failed));
      // Its own self-lookup and this one asked the liar; a third if need be.
      if (banOf(asker!, liar!) === undefined) await asker!.request(other!.self, 'echo', Uint8Array.of(1), { timeoutMs: 15_000 }).catch(() => {});
      await until('the asker bans the liar', () => banOf(asker!, liar!) !== undefined);
      assert.match(banOf(asker!, liar!)!, /invalid-routing-message/);
    });
  });
}
