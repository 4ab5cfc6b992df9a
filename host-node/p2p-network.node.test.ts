/**
 * The network compliance suite on real libp2p: Node hosts on loopback, connected as each test asks.
 */
import { SigningKey } from '../core/crypto/ed25519.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { networkCompliance } from '../test/network-compliance.ts';
import { startP2PNetwork } from './p2p.ts';

const connected = (from: Libp2pNetwork, to: Libp2pNetwork): boolean => from.libp2p.getPeers().some((p) => p.equals(to.libp2p.peerId));

networkCompliance('Libp2pNetwork', async (count, links) => {
  const networks: Libp2pNetwork[] = [];
  for (let i = 0; i < count; i++) networks.push(await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] }));
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
    close: async () => {
      await Promise.all(networks.map((net) => net.stop()));
    },
  };
});
