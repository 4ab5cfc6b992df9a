/**
 * A lab of real NATs out of Linux network namespaces, veth pairs and iptables, for tests and
 * benchmarks that run real `mesh node` processes behind them. Needs root.
 *
 * Every address comes from the benchmarking range 198.18.0.0/15 (RFC 2544):
 * - the "public" segment 198.18.0.0/24, a bridge in its own namespace: public nodes at
 *   198.18.0.10, .11, …; router i's WAN side at 198.18.0.(100 + i);
 * - home network i (i = 1, 2, …) 198.19.i.0/24: the router at .1, its hosts at .10, .11, ….
 * The public segment has no route into any home network, as on the internet.
 *
 * Routers masquerade what leaves their WAN side and forward nothing inbound that is not a reply
 * (conntrack ESTABLISHED/RELATED). A `cone` router keeps a flow's source port where it can
 * (Linux's port-preserving masquerade: endpoint-independent mapping, port-restricted filtering);
 * a `symmetric` router maps every new flow to a random port (`MASQUERADE --random-fully`).
 *
 * Namespaces are named `nl<pid>x<n>-<role>` so a run never meets another's; they are torn down by
 * `close()`, on process exit and on SIGINT/SIGTERM/SIGHUP, and a later lab removes those whose
 * process died without tearing down (SIGKILL).
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type MeshProcess, type StartOptions, startNode } from './mesh-process.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NODE = process.execPath;
/** The HTTP API port of a node in the lab: each namespace has its own loopback, so one port fits all. */
export const LAB_HTTP_PORT = 8080;
/** The libp2p TCP port of a node in the lab (WebSockets on the next). */
export const LAB_P2P_PORT = 4001;

export type NatKind = 'cone' | 'symmetric';

export interface NatLabOptions {
  /** Nodes on the public segment (default 1: the relay and bootstrap). */
  readonly publicHosts?: number;
  /** One entry per home router: its NAT kind and how many hosts sit behind it (default 1). */
  readonly nats?: readonly { readonly kind: NatKind; readonly hosts?: number }[];
}

/** The lab: two home routers (cone) and one symmetric NAT, a host behind each. */
export const DEFAULT_NATS: NatLabOptions['nats'] = [{ kind: 'cone' }, { kind: 'cone' }, { kind: 'symmetric' }];

/** A namespace that can run processes: a public node's, or a host's behind a router. */
export interface LabHost {
  readonly name: string;
  readonly netns: string;
  /** Its own address. */
  readonly address: string;
  /** The router it sits behind (undefined on the public segment). */
  readonly router?: LabRouter;
}

export interface LabRouter {
  readonly name: string;
  readonly netns: string;
  readonly kind: NatKind;
  /** The address the public segment sees for every host behind it. */
  readonly wanAddress: string;
  readonly lanAddress: string;
  readonly hosts: readonly LabHost[];
}

export interface NatLab {
  readonly public: readonly LabHost[];
  readonly routers: readonly LabRouter[];
  /** Every host behind a router, in router order. */
  readonly natted: readonly LabHost[];
  /** The iptables command the lab uses (`iptables`, `iptables-nft` or `iptables-legacy`). */
  readonly iptables: string;
  /**
   * Starts `mesh node` in `host`'s namespace with the lab's ports; its `url` reaches the HTTP API
   * from this process, so `getJson`, `postJson` and `openStream` work as on loopback.
   */
  startNode(host: LabHost, options?: StartOptions): Promise<MeshProcess>;
  /** The node's TCP multiaddr on its lab address, with its peer id (what others bootstrap from). */
  tcpAddress(node: MeshProcess): string;
  /** Runs a command in `host`'s namespace; rejects on a non-zero exit with its output. */
  exec(host: LabHost | LabRouter, args: readonly string[], timeoutMs?: number): Promise<string>;
  /** Starts a long-running command in a namespace (stopped by `close`). */
  spawn(host: LabHost | LabRouter, args: readonly string[]): ChildProcess;
  /** Kills everything in the lab's namespaces and removes them. Safe to call twice. */
  close(): Promise<void>;
}

/** Thrown when the lab cannot be built here (not root, no `ip` or `iptables`). */
export class NatLabUnavailableError extends Error {
  override readonly name = 'NatLabUnavailableError';
}

const TAG_PREFIX = 'nl';
let labsMade = 0;
const liveNamespaces = new Set<string>();
let exitHooked = false;

/** Builds the lab; the caller must `close()` it (also done on exit and on signals). */
export async function createNatLab(options: NatLabOptions = {}): Promise<NatLab> {
  assertCanBuild();
  hookExit();
  reapOrphans();
  const tag = `${TAG_PREFIX}${process.pid}x${labsMade++}`;
  const namespaces: string[] = [];
  const children = new Set<ChildProcess>();
  const servers: Server[] = [];
  const bridges = new Map<string, string>();
  const dir = await mkdtemp(join(tmpdir(), 'mesh-lab-'));
  let closed = false;

  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const server of servers) server.close();
    teardownNamespaces(namespaces);
    await rm(dir, { recursive: true, force: true });
  };

  try {
    const addNs = (role: string): string => {
      const netns = `${tag}-${role}`;
      ip(['netns', 'add', netns]);
      namespaces.push(netns);
      liveNamespaces.add(netns);
      ip(['-n', netns, 'link', 'set', 'lo', 'up']);
      return netns;
    };
    const wan = addNs('net');
    ip(['-n', wan, 'link', 'add', 'br0', 'type', 'bridge']);
    ip(['-n', wan, 'link', 'set', 'br0', 'up']);
    /** A veth from `netns` (named `inside`, given `cidr`) to a port of the public bridge. */
    const plugIntoPublic = (netns: string, port: string, inside: string, cidr: string): void => {
      ip(['link', 'add', inside, 'netns', netns, 'type', 'veth', 'peer', 'name', port, 'netns', wan]);
      ip(['-n', wan, 'link', 'set', port, 'master', 'br0']);
      ip(['-n', wan, 'link', 'set', port, 'up']);
      ip(['-n', netns, 'addr', 'add', cidr, 'dev', inside]);
      ip(['-n', netns, 'link', 'set', inside, 'up']);
    };

    const publicHosts: LabHost[] = [];
    for (let i = 0; i < (options.publicHosts ?? 1); i++) {
      const netns = addNs(`p${i}`);
      const address = `198.18.0.${10 + i}`;
      plugIntoPublic(netns, `p${i}`, 'eth0', `${address}/24`);
      publicHosts.push({ name: `public${i}`, netns, address });
    }

    const iptables = chooseIptables(publicHosts[0]?.netns ?? wan);
    const routers: LabRouter[] = [];
    const nats = options.nats ?? DEFAULT_NATS!;
    if (nats.length > 150) throw new RangeError('at most 150 routers');
    for (const [index, nat] of nats.entries()) {
      const n = index + 1;
      const netns = addNs(`r${n}`);
      const wanAddress = `198.18.0.${100 + n}`;
      const lanAddress = `198.19.${n}.1`;
      plugIntoPublic(netns, `r${n}`, 'wan', `${wanAddress}/24`);
      ip(['-n', netns, 'link', 'add', 'lan', 'type', 'bridge']);
      ip(['-n', netns, 'addr', 'add', `${lanAddress}/24`, 'dev', 'lan']);
      ip(['-n', netns, 'link', 'set', 'lan', 'up']);
      // /proc/sys/net is the writer's namespace's (no need for procps' sysctl).
      inNs(netns, ['sh', '-c', 'echo 1 > /proc/sys/net/ipv4/ip_forward']);
      const rules: string[][] = [
        ['-P', 'FORWARD', 'DROP'],
        ['-A', 'FORWARD', '-i', 'lan', '-o', 'wan', '-j', 'ACCEPT'],
        ['-A', 'FORWARD', '-i', 'wan', '-o', 'lan', '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'ACCEPT'],
        ['-A', 'INPUT', '-i', 'wan', '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'ACCEPT'],
        ['-A', 'INPUT', '-i', 'wan', '-j', 'DROP'],
        ['-t', 'nat', '-A', 'POSTROUTING', '-o', 'wan', '-j', 'MASQUERADE', ...(nat.kind === 'symmetric' ? ['--random-fully'] : [])],
      ];
      for (const rule of rules) inNs(netns, [iptables, ...rule]);
      const hosts: LabHost[] = [];
      const router: LabRouter = { name: `router${n}`, netns, kind: nat.kind, wanAddress, lanAddress, hosts };
      for (let j = 0; j < (nat.hosts ?? 1); j++) {
        const hostNs = addNs(`h${n}-${j}`);
        const address = `198.19.${n}.${10 + j}`;
        const port = `h${j}`;
        ip(['link', 'add', 'eth0', 'netns', hostNs, 'type', 'veth', 'peer', 'name', port, 'netns', netns]);
        ip(['-n', netns, 'link', 'set', port, 'master', 'lan']);
        ip(['-n', netns, 'link', 'set', port, 'up']);
        ip(['-n', hostNs, 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
        ip(['-n', hostNs, 'link', 'set', 'eth0', 'up']);
        ip(['-n', hostNs, 'route', 'add', 'default', 'via', lanAddress]);
        hosts.push({ name: `host${n}-${j}`, netns: hostNs, address, router });
      }
      routers.push(router);
    }

    /** A TCP port on this process's loopback that reaches `host`'s 127.0.0.1:LAB_HTTP_PORT. */
    const bridgeUrl = async (host: LabHost): Promise<string> => {
      const known = bridges.get(host.netns);
      if (known !== undefined) return known;
      const socketPath = join(dir, `${host.name}.sock`);
      const child = spawnIn(host.netns, [NODE, join(ROOT, 'test/netns-bridge.ts'), socketPath, String(LAB_HTTP_PORT)]);
      await new Promise<void>((resolve, reject) => {
        child.stdout!.once('data', () => resolve());
        child.once('exit', (code) => reject(new Error(`the HTTP bridge into ${host.netns} exited with ${code}`)));
      });
      const server = createServer((inbound) => {
        const outbound = connect(socketPath);
        inbound.pipe(outbound).pipe(inbound);
        inbound.on('error', () => outbound.destroy());
        outbound.on('error', () => inbound.destroy());
      });
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('the HTTP bridge has no port');
      const url = `http://127.0.0.1:${address.port}`;
      bridges.set(host.netns, url);
      return url;
    };

    const spawnIn = (netns: string, args: readonly string[]): ChildProcess => {
      const child = spawn('ip', ['netns', 'exec', netns, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      child.once('exit', () => children.delete(child));
      return child;
    };

    return {
      public: publicHosts,
      routers,
      natted: routers.flatMap((r) => r.hosts),
      iptables,
      async startNode(host, startOptions = {}) {
        const url = await bridgeUrl(host);
        const node = await startNode({
          p2pPort: LAB_P2P_PORT,
          ...startOptions,
          httpPort: LAB_HTTP_PORT,
          wrap: ['ip', 'netns', 'exec', host.netns],
        });
        children.add(node.child);
        node.child.once('exit', () => children.delete(node.child));
        return { ...node, url };
      },
      tcpAddress(node) {
        const found = node.multiaddrs.find((a) => /^\/ip4\/198\.1[89]\.\d+\.\d+\/tcp\/\d+\/p2p\//.test(a));
        if (found === undefined) throw new Error(`no lab TCP address among ${node.multiaddrs.join(', ')}`);
        return found;
      },
      exec(host, args, timeoutMs = 30_000) {
        return new Promise((resolve, reject) => {
          execFile('ip', ['netns', 'exec', host.netns, ...args], { cwd: ROOT, timeout: timeoutMs }, (error, stdout, stderr) => {
            if (error) reject(new Error(`${args.join(' ')} in ${host.netns}: ${error.message}\n${stderr}`));
            else resolve(stdout);
          });
        });
      },
      spawn: (host, args) => spawnIn(host.netns, args),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

function assertCanBuild(): void {
  if (process.platform !== 'linux') throw new NatLabUnavailableError('the NAT lab needs Linux network namespaces');
  if (process.getuid?.() !== 0) {
    throw new NatLabUnavailableError('the NAT lab needs root (network namespaces, veth pairs, iptables): run this test as root, as .ci/run does');
  }
  for (const tool of ['ip', 'iptables']) {
    try {
      execFileSync(tool, ['-V'], { stdio: 'ignore' });
    } catch {
      throw new NatLabUnavailableError(`the NAT lab needs \`${tool}\` (Debian: apt-get install iproute2 iptables)`);
    }
  }
}

/**
 * The iptables that works in a namespace here: Debian's default is the nf_tables backend; a kernel
 * without nf_tables needs the legacy one. Both put the rules in the namespace's own tables.
 */
function chooseIptables(netns: string): string {
  const wanted = process.env.MESH_LAB_IPTABLES;
  for (const candidate of wanted ? [wanted] : ['iptables', 'iptables-nft', 'iptables-legacy']) {
    try {
      inNs(netns, [candidate, '-t', 'nat', '-S']);
      return candidate;
    } catch {
      // Try the next backend.
    }
  }
  throw new NatLabUnavailableError('no working iptables (tried iptables, iptables-nft, iptables-legacy): the kernel needs nf_tables or ip_tables with NAT');
}

function ip(args: readonly string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function inNs(netns: string, args: readonly string[]): void {
  execFileSync('ip', ['netns', 'exec', netns, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Kills what still runs in the namespaces (started by the lab) and deletes them, synchronously. */
function teardownNamespaces(namespaces: readonly string[]): void {
  for (const netns of [...namespaces].reverse()) {
    try {
      const pids = execFileSync('ip', ['netns', 'pids', netns], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      for (const pid of pids.split('\n').filter(Boolean)) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    } catch {
      // No such namespace any more.
    }
    try {
      execFileSync('ip', ['netns', 'delete', netns], { stdio: 'ignore' });
    } catch {
      // Already deleted.
    }
    liveNamespaces.delete(netns);
  }
}

function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.once('exit', () => teardownNamespaces([...liveNamespaces]));
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      teardownNamespaces([...liveNamespaces]);
      process.kill(process.pid, signal);
    });
  }
}

/** Removes namespaces of earlier labs whose process is gone (killed before it could tear down). */
function reapOrphans(): void {
  let listing: string;
  try {
    listing = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  } catch {
    return;
  }
  const orphans = listing
    .split('\n')
    .map((line) => line.split(' ')[0]!)
    .filter((name) => {
      const owner = new RegExp(`^${TAG_PREFIX}(\\d+)x\\d+-`).exec(name)?.[1];
      return owner !== undefined && !isAlive(Number(owner));
    });
  teardownNamespaces(orphans);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
