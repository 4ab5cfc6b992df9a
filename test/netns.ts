/**
 * A network namespace of a test's own (as root): its loopback up and carrying multicast, optionally
 * its own resolv.conf (`ip netns exec` mounts /etc/netns/<name>/resolv.conf over /etc/resolv.conf),
 * torn down whatever happens. Nodes started in it (mesh-process.ts `netns`) meet no other test's.
 */
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { MeshProcess } from './mesh-process.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface NetnsOptions {
  /** Turn IPv6 off inside, as on a machine without it. */
  readonly noIpv6?: boolean;
  /** The nameserver lines of its resolv.conf (`nameserver 127.0.0.1`). */
  readonly nameservers?: readonly string[];
}

/** Runs `body` with a fresh namespace named `name`; fails clearly when not root. */
export async function withNetns<T>(name: string, options: NetnsOptions, body: () => Promise<T>): Promise<T> {
  if (process.getuid?.() !== 0) throw new Error('this test needs root: it makes a network namespace (ip netns add); run it as root, as .ci/run does');
  const etc = join('/etc/netns', name);
  await run('ip', ['netns', 'add', name]);
  try {
    for (const args of [
      ['link', 'set', 'lo', 'up'],
      ['link', 'set', 'lo', 'multicast', 'on'],
      ['route', 'add', '224.0.0.0/4', 'dev', 'lo'],
    ])
      await run('ip', ['-n', name, ...args]);
    if (options.noIpv6) await run('ip', ['netns', 'exec', name, 'sysctl', '-q', '-w', 'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.lo.disable_ipv6=1']);
    if (options.nameservers !== undefined) {
      await mkdir(etc, { recursive: true });
      await writeFile(join(etc, 'resolv.conf'), options.nameservers.map((s) => `nameserver ${s}\n`).join(''));
    }
    return await body();
  } finally {
    await run('ip', ['netns', 'del', name]).catch(() => {});
    await rm(etc, { recursive: true, force: true });
  }
}

/** `mesh <args> --data-dir <node's>` inside the namespace, where the node's HTTP API is; its stdout. */
export async function meshIn(name: string, node: MeshProcess, ...args: string[]): Promise<string> {
  const { stdout } = await run('ip', ['netns', 'exec', name, process.execPath, join(ROOT, 'bin/mesh.js'), ...args, '--data-dir', node.dataDir]);
  return stdout;
}

/** Polls `mesh status --json` of `node` until it has a peer (within `withinMs`). */
export async function untilPeered(name: string, node: MeshProcess, withinMs = 20_000): Promise<{ peers: number; alone: string | null }> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const status = JSON.parse(await meshIn(name, node, 'status', '--json')) as { peers: number; alone: string | null };
    if (status.peers > 0) return status;
    if (Date.now() > deadline) throw new Error(`the node found no peer in ${withinMs} ms:\n${node.log()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
