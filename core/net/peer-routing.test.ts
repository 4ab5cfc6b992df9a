/**
 * Peer routing on the real Libp2pNetwork (its Kademlia DHT, docs/network.md "Peer routing"), over a
 * libp2p transport in memory, on every runtime: a node reaches another by its NodeId alone.
 */
import { generateKeyPair } from '@libp2p/crypto/keys';
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { PeerUnreachableError } from './errors.ts';
import { Libp2pNetwork } from './libp2p-network.ts';
import { memoryTransport } from './memory-transport.test-util.ts';
import { streamProtocolId } from './network.ts';

let started = 0;

async function start(routing: 'server' | 'client'): Promise<Libp2pNetwork> {
  const address = `/memory/peer-routing-${Math.random().toString(36).slice(2)}-${++started}`;
  return Libp2pNetwork.start({ privateKey: await generateKeyPair('Ed25519'), addresses: { listen: [address] }, transports: [memoryTransport()] }, { routing });
}

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

async function withNodes(routing: readonly ('server' | 'client')[], body: (nodes: Libp2pNetwork[]) => Promise<void>): Promise<void> {
  const nodes = await Promise.all(routing.map(start));
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
