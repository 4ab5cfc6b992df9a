/**
 * Real nodes join through a /dnsaddr name, given by --bootstrap or in the data directory's bootstrap
 * file, answered by a DNS server on the loopback of a network namespace (as root) that the
 * namespace's resolv.conf names: the system's own resolver path, without the internet.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assert } from 'chai';
import { test } from './harness.ts';
import { startNode, stopAll, tcpAddress, tempDataDir } from './mesh-process.ts';
import { untilPeered, withNetns } from './netns.ts';

const NS = `mesh-dnsaddr-${process.pid}`;
const SERVER = fileURLToPath(new URL('./dns-server.ts', import.meta.url));

/** The DNS server of the namespace, on 127.0.0.1 port 53, serving `records`. */
async function serveDns(records: Record<string, string[]>): Promise<ChildProcess> {
  const child = spawn('ip', ['netns', 'exec', NS, process.execPath, SERVER, JSON.stringify(records), '127.0.0.1'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the DNS server exited with ${code}`)));
  });
  return child;
}

test('/dnsaddr: nodes join through a name on the command line and in <data-dir>/bootstrap (needs root)', async () => {
  await withNetns(NS, { nameservers: ['127.0.0.1'] }, async () => {
    let dns: ChildProcess | undefined;
    try {
      const a = await startNode({ netns: NS });
      dns = await serveDns({ '_dnsaddr.boot.mesh.test': [`dnsaddr=${tcpAddress(a)}`], '_dnsaddr.mesh.test': ['dnsaddr=/dnsaddr/boot.mesh.test'] });
      const b = await startNode({ netns: NS, bootstrap: ['/dnsaddr/boot.mesh.test'] });
      const dataDir = await tempDataDir();
      await writeFile(join(dataDir, 'bootstrap'), '# the test mesh, one name inside another\n/dnsaddr/mesh.test   # two lookups deep\n');
      const c = await startNode({ netns: NS, dataDir });
      for (const node of [b, c]) assert.deepInclude(await untilPeered(NS, node), { alone: null });
    } finally {
      dns?.kill();
      await stopAll();
    }
  });
});
