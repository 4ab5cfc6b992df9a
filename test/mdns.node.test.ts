/**
 * Two real devnet nodes on one local network find each other by mDNS, with no --bootstrap, and start
 * on a machine without IPv6. They run in a network namespace of their own (as root) whose loopback
 * carries multicast and has IPv6 turned off, so that no other node on this machine answers them.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { assert } from 'chai';
import { test } from './harness.ts';
import { type MeshProcess, startNode, stopAll } from './mesh-process.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NS = `mesh-mdns-${process.pid}`;

/** `mesh <args>` inside the namespace, where the node's HTTP API is. */
async function meshIn(node: MeshProcess, ...args: string[]): Promise<string> {
  const { stdout } = await run('ip', ['netns', 'exec', NS, process.execPath, join(ROOT, 'bin/mesh.js'), ...args, '--data-dir', node.dataDir]);
  return stdout;
}

test('mDNS: two devnet nodes in one network, without IPv6, find each other with no --bootstrap (needs root)', async () => {
  if (process.getuid?.() !== 0) assert.fail('this test needs root: it makes a network namespace (ip netns add); run it as root, as .ci/run does');
  await run('ip', ['netns', 'add', NS]);
  try {
    for (const args of [
      ['link', 'set', 'lo', 'up'],
      ['link', 'set', 'lo', 'multicast', 'on'],
      ['route', 'add', '224.0.0.0/4', 'dev', 'lo'],
    ])
      await run('ip', ['-n', NS, ...args]);
    await run('ip', ['netns', 'exec', NS, 'sysctl', '-q', '-w', 'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.lo.disable_ipv6=1']);

    const a = await startNode({ netns: NS, mdns: true });
    const b = await startNode({ netns: NS, mdns: true });
    for (const node of [a, b]) {
      assert.isNotEmpty(node.multiaddrs);
      assert.isTrue(
        node.multiaddrs.every((m) => m.startsWith('/ip4/')),
        `IPv4 only where there is no IPv6: ${node.multiaddrs.join(' ')}`,
      );
    }
    const deadline = Date.now() + 20_000;
    for (;;) {
      const status = JSON.parse(await meshIn(a, 'status', '--json')) as { peers: number; alone: string | null };
      if (status.peers === 1) {
        assert.isNull(status.alone);
        break;
      }
      if (Date.now() > deadline) assert.fail(`a found no peer by mDNS in 20 s:\n${a.log()}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const peers = await meshIn(a, 'peers');
    assert.include(peers, b.nodeId.slice(0, 8), peers);
    assert.match(await meshIn(b, 'status'), /^peers +1$/m);
  } finally {
    await stopAll();
    await run('ip', ['netns', 'del', NS]).catch(() => {});
  }
});
