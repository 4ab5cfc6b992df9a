/**
 * Peer routing on real libp2p hosts on loopback (docs/network.md, "Peer routing"): a node reaches,
 * by NodeId alone, a node it was never told the address of, through the mesh's DHT.
 */
import { circuitRelayTransport } from '@libp2p/circuit-relay-v2';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { tcp } from '@libp2p/tcp';
import { assert } from 'chai';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { toHex } from '../core/encoding/hex.ts';
import { Libp2pNetwork, parseBootstrapAddress } from '../core/net/libp2p-network.ts';
import { test } from '../test/harness.ts';
import { startP2PNetwork } from './p2p.ts';

async function waitUntil(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A hub that answers lookups and `count - 1` nodes bootstrapped to it alone, answering them as `routing` says. */
async function star(count: number, routing: 'server' | 'client' = 'server'): Promise<Libp2pNetwork[]> {
  const hub = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] });
  const tcp = hub.addresses().find((a) => a.includes('/tcp/') && !a.includes('/ws'))!;
  const spokes = await Promise.all(
    Array.from({ length: count - 1 }, () => startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [tcp], routing })),
  );
  for (const spoke of spokes) while (spoke.peers().length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
  return [hub, ...spokes];
}

test('Libp2pNetwork: a request reaches a node known only by its NodeId, found through the mesh', async () => {
  const nets = await star(3);
  const [, b, c] = nets as [Libp2pNetwork, Libp2pNetwork, Libp2pNetwork];
  try {
    c.serve('echo', async ({ data }) => data);
    assert.isFalse(
      b.peers().some((p) => p.node.every((x, i) => x === c.self[i])),
      'b starts without c',
    );
    const answer = await b.request(c.self, 'echo', Uint8Array.of(7));
    assert.deepEqual([...answer], [7]);
  } finally {
    await Promise.all(nets.map((n) => n.stop()));
  }
});

test('Libp2pNetwork: a node that announces only a relay address is reached through that relay', async () => {
  // b only asks lookups, so nothing but its own lookup connects it and the target.
  const [relay, b] = await star(2, 'client');
  const target = await Libp2pNetwork.start(
    {
      privateKey: await generateKeyPair('Ed25519'),
      // Listens nowhere itself: its one address is a reservation on the relay.
      addresses: { listen: ['/p2p-circuit'] },
      transports: [tcp(), circuitRelayTransport()],
      connectionGater: { denyDialMultiaddr: () => false },
    },
    { bootstrap: [parseBootstrapAddress(relay!.addresses().find((a) => a.includes('/tcp/') && !a.includes('/ws'))!)] },
  );
  try {
    await waitUntil(() => target.addresses().some((a) => a.includes('/p2p-circuit')));
    assert.isTrue(
      target.addresses().every((a) => a.includes('/p2p-circuit')),
      target.addresses().join(', '),
    );
    // What runs over a relayed (limited) connection is the NAT work's to decide; the lookup's part
    // is the connection, through the relay the node announces.
    // The relay hears the new address from the target's identify push (debounced by a second).
    await waitUntil(() => relay!.peers().some((p) => toHex(p.node) === toHex(target.self) && p.multiaddrs.some((a) => a.includes('/p2p-circuit'))));
    await b!.request(target.self, 'echo', Uint8Array.of(1)).catch(() => {});
    const via = b!.peers().find((p) => toHex(p.node) === toHex(target.self))?.remoteAddr;
    assert.match(via ?? 'not connected', /\/p2p-circuit/);
  } finally {
    await Promise.all([target.stop(), relay!.stop(), b!.stop()]);
  }
});

test('Libp2pNetwork: a lookup is answered without the private addresses of a peer seen from another IP', async () => {
  const [hub, b] = await star(2, 'client');
  // A node behind a NAT announces its LAN address (10.9.9.9 here) until it finds it is private;
  // the hub sees it come from 127.0.0.1, another network's address. It answers no lookups itself,
  // so the answer is the hub's.
  const target = await Libp2pNetwork.start(
    {
      privateKey: await generateKeyPair('Ed25519'),
      addresses: { listen: ['/ip4/127.0.0.1/tcp/0'], appendAnnounce: ['/ip4/10.9.9.9/tcp/4001'] },
      transports: [tcp()],
      connectionGater: { denyDialMultiaddr: () => false },
    },
    { bootstrap: [parseBootstrapAddress(hub!.addresses().find((a) => a.includes('/tcp/') && !a.includes('/ws'))!)] },
  );
  try {
    await waitUntil(() => hub!.peers().some((p) => toHex(p.node) === toHex(target.self) && p.multiaddrs.some((a) => a.includes('10.9.9.9'))));
    const found: string[] = [];
    for await (const event of b!.libp2p.services.dht.findPeer(target.libp2p.peerId, { useCache: false, signal: AbortSignal.timeout(10_000) })) {
      if (event.name === 'FINAL_PEER') found.push(...event.peer.multiaddrs.map(String));
    }
    assert.isTrue(
      found.some((a) => a.startsWith('/ip4/127.0.0.1/tcp/')),
      found.join(', '),
    );
    assert.isFalse(
      found.some((a) => a.includes('10.9.9.9')),
      found.join(', '),
    );
  } finally {
    await Promise.all([target.stop(), hub!.stop(), b!.stop()]);
  }
});
