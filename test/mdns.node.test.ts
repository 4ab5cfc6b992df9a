/**
 * Two real devnet nodes on one local network find each other by mDNS, with no --bootstrap, and start
 * on a machine without IPv6. They run in a network namespace of their own (as root) whose loopback
 * carries multicast and has IPv6 turned off, so that no other node on this machine answers them.
 */
import { assert } from 'chai';
import { test } from './harness.ts';
import { startNode, stopAll } from './mesh-process.ts';
import { meshIn, untilPeered, withNetns } from './netns.ts';

const NS = `mesh-mdns-${process.pid}`;

test('mDNS: two devnet nodes in one network, without IPv6, find each other with no --bootstrap (needs root)', async () => {
  await withNetns(NS, { noIpv6: true }, async () => {
    try {
      const a = await startNode({ netns: NS, mdns: true });
      const b = await startNode({ netns: NS, mdns: true });
      for (const node of [a, b]) {
        assert.isNotEmpty(node.multiaddrs);
        assert.isTrue(
          node.multiaddrs.every((m) => m.startsWith('/ip4/')),
          `IPv4 only where there is no IPv6: ${node.multiaddrs.join(' ')}`,
        );
      }
      assert.deepInclude(await untilPeered(NS, a), { peers: 1, alone: null });
      const peers = await meshIn(NS, a, 'peers');
      assert.include(peers, b.nodeId.slice(0, 8), peers);
      assert.match(await meshIn(NS, b, 'status'), /^peers +1$/m);
    } finally {
      await stopAll();
    }
  });
});
