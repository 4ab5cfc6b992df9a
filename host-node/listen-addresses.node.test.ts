/** Where the node listens: every IPv4 and IPv6 interface by default, one address with --listen-host. */
import { assert } from 'chai';
import { SigningKey } from '../core/crypto/ed25519.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { test } from '../test/harness.ts';
import { listenAddresses, startP2PNetwork } from './p2p.ts';

test('listen addresses: IPv4 and IPv6 beside each other by default; one family with --listen-host', () => {
  assert.deepEqual(listenAddresses(undefined, 8845, 8846, 'ws'), [
    '/ip4/0.0.0.0/tcp/8845',
    '/ip4/0.0.0.0/tcp/8846/ws',
    '/ip6/::/tcp/8845',
    '/ip6/::/tcp/8846/ws',
  ]);
  assert.deepEqual(listenAddresses('198.18.0.7', 8845, 8846, 'tls/ws'), ['/ip4/198.18.0.7/tcp/8845', '/ip4/198.18.0.7/tcp/8846/tls/ws']);
  assert.deepEqual(listenAddresses('::1', 0, 0, 'ws'), ['/ip6/::1/tcp/0', '/ip6/::1/tcp/0/ws']);
});

test('listen addresses: the same port on IPv4 and IPv6 at once, and a node on ::1 reached over IPv6', async () => {
  const nets: Libp2pNetwork[] = [];
  try {
    const both = await startP2PNetwork({ key: SigningKey.generate(), port: 0, bootstrap: [] });
    nets.push(both);
    const port = Number(/\/tcp\/(\d+)\//.exec(both.addresses().find((a) => a.startsWith('/ip4/127.0.0.1/tcp/'))!)![1]);
    await both.stop();
    nets.length = 0;
    // A fixed port: IPv6 listeners are IPv6-only, so they do not collide with IPv4's.
    const fixed = await startP2PNetwork({ key: SigningKey.generate(), port, bootstrap: [] });
    nets.push(fixed);
    assert.include(fixed.addresses().join(' '), `/ip4/127.0.0.1/tcp/${port}/`);
    assert.include(fixed.addresses().join(' '), `/ip6/::1/tcp/${port}/`);

    const six = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '::1', bootstrap: [] });
    nets.push(six);
    assert.isTrue(
      six.addresses().every((a) => a.startsWith('/ip6/::1/')),
      six.addresses().join(' '),
    );
    const other = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] });
    nets.push(other);
    await other.libp2p.dial(six.libp2p.getMultiaddrs()[0]!);
    assert.match(other.libp2p.getConnections(six.libp2p.peerId)[0]!.remoteAddr.toString(), /^\/ip6\/::1\/tcp\//);
  } finally {
    await Promise.all(nets.map((n) => n.stop()));
  }
});
