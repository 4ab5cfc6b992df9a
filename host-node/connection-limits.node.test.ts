/**
 * Connection limits on real libp2p: past --max-connections the pruning order closes strangers and
 * keeps bootstrap peers and producers; --max-connections-per-ip refuses the extra connection.
 */
import { assert } from 'chai';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { toHex } from '../core/encoding/hex.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { test } from '../test/harness.ts';
import { type P2POptions, startP2PNetwork } from './p2p.ts';

const start = (options: Partial<P2POptions> = {}): Promise<Libp2pNetwork> =>
  startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [], ...options });

async function until(what: string, check: () => boolean, withinMs = 10_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const holds = (net: Libp2pNetwork, peer: Libp2pNetwork): boolean => net.libp2p.getConnections(peer.libp2p.peerId).length > 0;

test('connection limits: past max-connections the stranger goes; the bootstrap peer and the producer stay', async () => {
  const nets: Libp2pNetwork[] = [];
  try {
    const boot = await start();
    const producer = await start();
    nets.push(boot, producer);
    const lines: string[] = [];
    const node = await start({
      bootstrap: [boot.addresses()[0]!],
      maxConnections: 2,
      rankPeer: (peer) => (toHex(peer) === toHex(producer.self) ? 'producer' : null),
      log: (line) => lines.push(line),
    });
    nets.push(node);
    await until('the node joined its bootstrap peer', () => holds(node, boot));
    await producer.libp2p.dial(node.libp2p.getMultiaddrs()[0]!);
    await until('the producer is connected', () => holds(node, producer));

    for (let i = 0; i < 2; i++) {
      const stranger = await start();
      nets.push(stranger);
      await stranger.libp2p.dial(node.libp2p.getMultiaddrs()[0]!).catch(() => {});
      await until(`stranger ${i} is closed`, () => !holds(node, stranger) && !holds(stranger, node));
      assert.isTrue(holds(node, boot), 'the bootstrap peer stays');
      assert.isTrue(holds(node, producer), 'the producer stays');
    }
    assert.isAtLeast(lines.filter((l) => /closing the connection to \S+ \(other; max-connections: 2\)/.test(l)).length, 2, lines.join('\n'));
    assert.lengthOf(node.libp2p.getConnections(), 2);
  } finally {
    await Promise.all(nets.map((n) => n.stop()));
  }
});

test('connection limits: with a full node of producers, a producer is closed before none, the newest first', async () => {
  const nets: Libp2pNetwork[] = [];
  try {
    const node = await start({ maxConnections: 1, rankPeer: () => 'producer' });
    nets.push(node);
    const first = await start();
    nets.push(first);
    await first.libp2p.dial(node.libp2p.getMultiaddrs()[0]!);
    await until('the first is connected', () => holds(node, first));
    const second = await start();
    nets.push(second);
    await second.libp2p.dial(node.libp2p.getMultiaddrs()[0]!).catch(() => {});
    await until('the newer producer is closed', () => !holds(node, second));
    assert.isTrue(holds(node, first), 'the older producer stays');
  } finally {
    await Promise.all(nets.map((n) => n.stop()));
  }
});

test('connection limits: max-connections-per-ip refuses the connection past it', async () => {
  const nets: Libp2pNetwork[] = [];
  try {
    const lines: string[] = [];
    const node = await start({ connectionsPerIp: 2, log: (line) => lines.push(line) });
    nets.push(node);
    for (let i = 0; i < 3; i++) {
      const peer = await start();
      nets.push(peer);
      await peer.libp2p.dial(node.libp2p.getMultiaddrs()[0]!).catch(() => {});
    }
    await until('the third is refused', () => lines.some((l) => l.includes('connections-per-ip: 2 open')));
    assert.lengthOf(node.libp2p.getConnections(), 2);
  } finally {
    await Promise.all(nets.map((n) => n.stop()));
  }
});
