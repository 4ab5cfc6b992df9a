/**
 * Peer routing on real libp2p hosts on loopback (docs/network.md, "Peer routing"): a node reaches,
 * by NodeId alone, a node it was never told the address of, through the mesh's DHT.
 */
import { assert } from 'chai';
import { SigningKey } from '../core/crypto/ed25519.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { test } from '../test/harness.ts';
import { startP2PNetwork } from './p2p.ts';

async function star(count: number): Promise<Libp2pNetwork[]> {
  const hub = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] });
  const tcp = hub.addresses().find((a) => a.includes('/tcp/') && !a.includes('/ws'))!;
  const spokes = await Promise.all(
    Array.from({ length: count - 1 }, () => startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [tcp] })),
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
    const started = Date.now();
    const answer = await b.request(c.self, 'echo', Uint8Array.of(7));
    console.log('first request', Date.now() - started, 'ms');
    assert.deepEqual([...answer], [7]);
  } finally {
    await Promise.all(nets.map((n) => n.stop()));
  }
});
