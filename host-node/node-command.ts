/**
 * `mesh node`: a mesh node on this machine. Data in the data directory (LevelDB chain, identity,
 * api.token), libp2p on TCP and WebSockets, the HTTP API on loopback, blocks on the timer with
 * `--mine`. SIGINT or SIGTERM stops it cleanly; a second signal exits at once.
 */
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { multiaddr } from '@multiformats/multiaddr';
import { createNodeApi, MAX_STREAMS, MAX_STREAMS_PER_CLIENT } from '../core/api/handler.ts';
import { Chain } from '../core/chain/chain.ts';
import { systemRandom } from '../core/crypto/random.ts';
import { fromHex } from '../core/encoding/hex.ts';
import type { HostPolicy } from '../core/jobs/policy.ts';
import { type ChainParams, devnet, HEARTBEAT_INTERVAL_SECS, MAINNET } from '../core/ledger/params.ts';
import { MAX_CONNECTIONS, type PeerRank } from '../core/net/connection-pruning.ts';
import { PEER_LIMITS } from '../core/net/peer-limits.ts';
import { parseStunUrl } from '../core/net/stun.ts';
import { PING_INTERVAL_MS } from '../core/netgraph/peer-pings.ts';
import { ALONE_REPORT_MS } from '../core/node/alone-service.ts';
import { MeshNode } from '../core/node/node.ts';
import { type FullNodeServices, fullNodeServices } from '../core/node/services.ts';
import { systemClock } from '../core/time/clock.ts';
import { BOOTSTRAP_FILE, BootstrapFileError, parseBootstrapEntry, readBootstrapFile, resolveBootstrap, systemTxtLookup } from './bootstrap-list.ts';
import { probeCapacity } from './capacity.ts';
import { command, flag, list, type OptionValues, option, UsageError } from './cli/command.ts';
import { stopSignal } from './cli/stop-signal.ts';
import { integer, nodeIdText, port } from './cli/values.ts';
import { DataDirError, dataDirOption, openDataDir, removeApiAddress, writeApiAddress } from './data-dir.ts';
import { DockerExecutor } from './docker-executor.ts';
import { serveFetch } from './http-server.ts';
import { LevelStore, StoreLockedError } from './leveldb-store.ts';
import { nodeCrypto } from './native-crypto.ts';
import { withOperatorPage } from './operator-site.ts';
import { startP2PNetwork } from './p2p.ts';
import { startStunServer } from './stun-server.ts';
import { nodeTunnelSockets } from './tunnel-sockets.ts';
import { withWallet } from './wallet-site.ts';

export interface NodeConfig {
  readonly dataDir: string;
  readonly host: string;
  readonly port: number;
  readonly p2pPort: number;
  readonly bootstrap: string[];
  /** The libp2p listen address; null: every IPv4 and IPv6 interface. */
  readonly listenHost: string | null;
  /** mDNS on the local network (on by default on a devnet). */
  readonly mdns: boolean;
  /** Port mapping through the gateway (UPnP IGD). */
  readonly upnp: boolean;
  /** Connections held at once, and from one IP address. */
  readonly maxConnections: number;
  readonly maxConnectionsPerIp: number;
  readonly mine: boolean;
  readonly params: ChainParams;
  /** What this node hosts: allowed image prefixes and the capacity offered to jobs. */
  readonly hostPolicy: HostPolicy;
  readonly jobQueueMs: number;
  readonly heartbeatMs: number;
  /** Keys (hex) whose capability tokens directed placement honours besides this node's own. */
  readonly capabilityRoots: readonly string[];
  /** PEM files that make the WebSocket port secure (`/tls/ws`), for pages served over HTTPS. */
  readonly wsTls: { readonly certFile: string; readonly keyFile: string } | null;
  /** Multiaddrs announced instead of the listen addresses (none: the listen addresses). */
  readonly announce: readonly string[];
  /** STUN servers ICE asks for this node's public mapping (`stun:HOST:PORT`). */
  readonly stun: readonly string[];
  /** The UDP port this node answers STUN Binding requests on; null: it does not. */
  readonly stunPort: number | null;
  /** Mean time between two rounds of pings to the peers (GET /peers' round trips). */
  readonly pingIntervalMs: number;
  /** Event streams the HTTP API holds open at once, in all and per client (docs/node-api.md). */
  readonly maxStreams: number;
  readonly maxStreamsPerClient: number;
}

/** Block intervals a producer only watches for another machine with its key before it signs (docs/network.md). */
const DOPPELGANGER_WAIT_BLOCKS = 3;

/** The node could not start as configured (a port taken, a data directory in use): said without a stack. */
class StartError extends Error {}

/**
 * Runs `step`; a failure becomes a StartError saying what could not be done (the data directory's
 * and the store's own errors already say it).
 */
async function starting<T>(what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    const known = error instanceof DataDirError || error instanceof StoreLockedError || error instanceof BootstrapFileError;
    const message = error instanceof Error ? error.message : String(error);
    throw new StartError(known ? message : `${what}: ${message}`, { cause: error });
  }
}

const nodeOptions = {
  'data-dir': dataDirOption,
  host: option({ value: 'ADDR', description: 'HTTP API address', default: '127.0.0.1' }),
  port: option({ value: 'N', description: 'HTTP API port, 0 for a free one', parse: port(), default: 8844 }),
  // WebSockets listen on the next port, which must exist too.
  'p2p-port': option({ value: 'N', description: 'libp2p TCP port; WebSockets listen on the next port', parse: port(65_534), default: 8845 }),
  'listen-host': option({
    value: 'ADDR',
    description: 'the address libp2p listens on, IPv4 or IPv6 (default: every IPv4 and IPv6 interface)',
    parse: ipAddress,
  }),
  bootstrap: list({
    value: 'MULTIADDR',
    description: `a peer to join through, /…/p2p/<peer id>, or a /dnsaddr/<name> listing peers; besides the lines of <data-dir>/${BOOTSTRAP_FILE}`,
    parse: bootstrapAddress,
  }),
  mdns: flag('find peers on the local network by mDNS (the default on a devnet)'),
  'no-mdns': flag('no mDNS, on a devnet too'),
  upnp: flag('ask the gateway (UPnP IGD) to forward the p2p ports, and announce the mapped address'),
  'max-connections': option({
    value: 'N',
    description: 'connections held at once; past it the least valued are closed',
    parse: integer(1),
    default: MAX_CONNECTIONS,
  }),
  'max-connections-per-ip': option({
    value: 'N',
    description: 'connections from one IP address at once; more are refused',
    parse: integer(1),
    default: PEER_LIMITS.connectionsPerIp,
  }),
  mine: flag('produce blocks'),
  devnet: flag('use the separate local development chain'),
  'block-interval-ms': option({ value: 'N', description: 'block interval on the devnet', parse: integer(0), shown: '1000' }),
  'allow-image': list({
    value: 'PREFIX',
    description:
      'run jobs of this image (localhost/busybox: any tag of it), of every image under a path ending in / (docker.io/library/), or of any (*); none by default: the node runs no jobs',
  }),
  'job-cores': option({ value: 'N', description: "cores offered to jobs (default: the machine's)", parse: integer(1) }),
  'job-mem-mb': option({ value: 'MB', description: "memory offered to jobs, in MiB (default: the machine's)", parse: integer(4) }),
  'job-queue-secs': option({ value: 'S', description: 'how long a job this node bids for waits for a host', parse: integer(1), default: 600 }),
  'capability-root': list({
    value: 'NODE_ID',
    description: "honour capability tokens rooted at this key for directed placement, besides this node's own",
    parse: nodeIdText,
  }),
  'ping-interval-ms': option({
    value: 'N',
    description: 'mean time between pings to each peer, jittered by ±25 % (GET /peers)',
    parse: integer(100),
    default: PING_INTERVAL_MS,
  }),
  'heartbeat-interval-ms': option({ value: 'N', description: 'time between heartbeats on the devnet', parse: integer(100), shown: '30000' }),
  'ws-tls-cert': option({
    value: 'FILE',
    description: 'PEM certificate (chain) for secure WebSockets: the WebSocket port becomes /tls/ws, which pages on HTTPS can dial',
  }),
  'ws-tls-key': option({ value: 'FILE', description: 'PEM private key of --ws-tls-cert' }),
  'max-streams': option({ value: 'N', description: 'event streams the HTTP API holds open at once; more get 503', parse: integer(1), default: MAX_STREAMS }),
  'max-streams-per-client': option({
    value: 'N',
    description: 'event streams the HTTP API holds open at once for one client address; more get 503',
    parse: integer(1),
    default: MAX_STREAMS_PER_CLIENT,
  }),
  stun: list({ value: 'URL', description: "a STUN server (stun:HOST:PORT) for WebRTC's hole punching; none: no punching through NATs", parse: stunUrl }),
  'stun-port': option({ value: 'N', description: 'answer STUN on this UDP port, for the nodes behind NATs (a public node; 3478 is the usual)', parse: port() }),
  announce: list({
    value: 'MULTIADDR',
    description: 'an address to announce instead of the listen addresses (/dns4/node.example.org/tcp/443/tls/ws); peers and the wallet page dial it',
    parse: announceAddress,
  }),
};

function announceAddress(text: string, name: string): string {
  try {
    multiaddr(text);
  } catch (error) {
    throw new UsageError(`${name}: ${(error as Error).message}`);
  }
  if (text.includes('/p2p/')) throw new UsageError(`${name}: give the address without /p2p/<peer id>; the node adds its own`);
  return text;
}

function ipAddress(text: string, name: string): string {
  if (isIP(text) === 0) throw new UsageError(`${name} takes an IPv4 or IPv6 address, got ${JSON.stringify(text)}`);
  return text;
}

function stunUrl(text: string, name: string): string {
  try {
    return parseStunUrl(text);
  } catch (error) {
    throw new UsageError(`${name}: ${(error as Error).message}`);
  }
}

function bootstrapAddress(text: string, name: string): string {
  try {
    parseBootstrapEntry(text);
  } catch (error) {
    throw new UsageError(`${name}: ${(error as Error).message}`);
  }
  return text;
}

/** The node's configuration from its options; throws UsageError for options that do not go together. */
export function nodeConfig(values: OptionValues<typeof nodeOptions>): NodeConfig {
  const interval = values['block-interval-ms'];
  if (interval !== undefined && !values.devnet) throw new UsageError('--block-interval-ms is for the devnet only (add --devnet)');
  const heartbeat = values['heartbeat-interval-ms'];
  if (heartbeat !== undefined && !values.devnet) throw new UsageError('--heartbeat-interval-ms is for the devnet only (add --devnet)');
  const certFile = values['ws-tls-cert'];
  const keyFile = values['ws-tls-key'];
  if ((certFile === undefined) !== (keyFile === undefined)) throw new UsageError('--ws-tls-cert and --ws-tls-key go together');
  if (values.mdns && values['no-mdns']) throw new UsageError('--mdns and --no-mdns contradict each other');
  const machine = probeCapacity();
  let params: ChainParams = MAINNET;
  if (values.devnet) {
    try {
      params = devnet(interval);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  }
  return {
    dataDir: values['data-dir'],
    host: values.host,
    port: values.port,
    p2pPort: values['p2p-port'],
    bootstrap: values.bootstrap,
    listenHost: values['listen-host'] ?? null,
    mdns: values.mdns || (values.devnet && !values['no-mdns']),
    upnp: values.upnp,
    maxConnections: values['max-connections'],
    maxConnectionsPerIp: values['max-connections-per-ip'],
    mine: values.mine,
    params,
    hostPolicy: { allowImages: values['allow-image'], cpuCores: values['job-cores'] ?? machine.cpuCores, memMb: values['job-mem-mb'] ?? machine.memMb },
    jobQueueMs: values['job-queue-secs'] * 1000,
    capabilityRoots: values['capability-root'],
    heartbeatMs: heartbeat ?? HEARTBEAT_INTERVAL_SECS * 1000,
    wsTls: certFile !== undefined && keyFile !== undefined ? { certFile, keyFile } : null,
    announce: values.announce,
    stun: values.stun,
    stunPort: values['stun-port'] ?? null,
    pingIntervalMs: values['ping-interval-ms'],
    maxStreams: values['max-streams'],
    maxStreamsPerClient: values['max-streams-per-client'],
  };
}

/** The start-up line about hosting: what it runs, or why it runs nothing. */
function hosting(config: NodeConfig, node: MeshNode<FullNodeServices>): string {
  const { allowImages, cpuCores, memMb } = config.hostPolicy;
  const engine = node.services.jobs.engine.ready ? 'engine ready' : 'no container engine answers (DOCKER_HOST or /var/run/docker.sock)';
  const roots =
    config.capabilityRoots.length === 0 ? '' : `; tokens rooted at ${config.capabilityRoots.length} more key${config.capabilityRoots.length === 1 ? '' : 's'}`;
  if (allowImages.length === 0) return `hosts directed jobs only (no --allow-image)${roots}`;
  return `hosts ${allowImages.join(', ')} on ${cpuCores} cores, ${memMb} MiB; ${engine}${roots}`;
}

/** The mDNS service name: one per network, so that a devnet's nodes never meet the main network's. */
function mdnsServiceOf(params: ChainParams): string {
  const interval = params.network === MAINNET.network ? '' : `-${params.blockIntervalMs}ms`;
  return `_${params.network}${interval}._udp.local`;
}

/** What a node without peers is told, with the commands that give it one. */
function aloneAdvice(config: NodeConfig): string {
  const mdns = config.mdns ? '' : '; on a local network, restart with --mdns';
  return (
    'To join a mesh, take an address of one of its nodes (a p2p line it printed at start, or `curl -s http://127.0.0.1:8844/bootstrap` on its machine) ' +
    `and restart with --bootstrap <multiaddr>, or add it as a line of ${resolve(config.dataDir, BOOTSTRAP_FILE)}${mdns}.`
  );
}

function log(line: string): void {
  process.stderr.write(`${new Date().toISOString()} ${line}\n`);
}

/** `mesh node`: runs until SIGINT/SIGTERM; a node that cannot start says why in one line (exit 1). */
export const nodeCommand = command({
  description: 'Runs a mesh node: the chain in the data directory, libp2p on TCP and WebSockets, the HTTP API on loopback.',
  options: nodeOptions,
  run: ({ options }) => runNode(nodeConfig(options)),
});

async function runNode(config: NodeConfig): Promise<number> {
  const stopped = stopSignal();
  const crypto = await nodeCrypto();
  const data = await starting(`cannot use the data directory ${config.dataDir}`, () => openDataDir(config.dataDir));
  // One chain per network, so a devnet never touches the main network's data.
  const chainPath = join(config.dataDir, 'chain', config.params.network);
  const store = await starting(`cannot open the chain store ${chainPath}`, () => LevelStore.open(chainPath));
  const jobsPath = join(config.dataDir, 'jobs', config.params.network);
  const jobStore = await starting(`cannot open the job store ${jobsPath}`, () => LevelStore.open(jobsPath));
  const channelsPath = join(config.dataDir, 'channels', config.params.network);
  const channelStore = await starting(`cannot open the channel store ${channelsPath}`, () => LevelStore.open(channelsPath));
  // What the producer signed, synced to disk before a block leaves: it never signs twice at a height.
  const signedPath = join(config.dataDir, 'signed', config.params.network);
  const signedStore = await starting(`cannot open the slashing-protection record ${signedPath}`, () => LevelStore.open(signedPath));
  const closers: (() => Promise<void>)[] = [() => store.close(), () => jobStore.close(), () => channelStore.close(), () => signedStore.close()];
  const closeAll = async (): Promise<void> => {
    for (const close of closers.reverse()) await close().catch((e: unknown) => log(`stop: ${String(e)}`));
  };
  try {
    const chain = await Chain.open({ store, params: config.params, crypto });
    const wsTls = config.wsTls;
    const tls =
      wsTls === null
        ? undefined
        : await starting('cannot read the WebSocket TLS files', async () => ({
            cert: await readFile(wsTls.certFile, 'utf8'),
            key: await readFile(wsTls.keyFile, 'utf8'),
          }));
    const entries = [...new Set([...config.bootstrap, ...(await starting('cannot read the bootstrap list', () => readBootstrapFile(config.dataDir)))])];
    const resolveEntries = (): Promise<string[]> =>
      resolveBootstrap(entries, systemTxtLookup, (entry, reason) => log(`p2p: cannot resolve the bootstrap entry ${entry}: ${reason}`));
    // The services exist once the network does: until then no peer ranks above another.
    let ranks: ((node: Uint8Array) => PeerRank | null) | undefined;
    const network = await starting(`cannot listen for peers on port ${config.p2pPort}`, async () =>
      startP2PNetwork({
        key: data.identity,
        port: config.p2pPort,
        ...(config.listenHost === null ? {} : { listenHost: config.listenHost }),
        bootstrap: await resolveEntries(),
        announce: config.announce,
        stun: config.stun,
        log,
        ...(tls === undefined ? {} : { wsTls: tls }),
        ...(config.mdns ? { mdnsService: mdnsServiceOf(config.params) } : {}),
        upnp: config.upnp,
        maxConnections: config.maxConnections,
        connectionsPerIp: config.maxConnectionsPerIp,
        rankPeer: (node) => ranks?.(node) ?? null,
      }),
    );
    closers.push(() => network.stop());
    // /dnsaddr names are looked up again while the node is alone: their records may have changed.
    if (entries.some((e) => e.includes('/dnsaddr/'))) {
      const again = systemClock.setInterval(() => {
        if (network.peers().length > 0) return;
        void resolveEntries().then((found) => {
          for (const address of found) network.libp2p.dial(multiaddr(address)).catch(() => {});
        });
      }, ALONE_REPORT_MS);
      closers.push(async () => again.cancel());
    }
    const stunPort = config.stunPort;
    if (stunPort !== null) {
      const stun = await starting(`cannot answer STUN on UDP port ${stunPort}`, () => startStunServer({ port: stunPort }));
      closers.push(() => stun.close());
      log(`stun: answering Binding requests on UDP port ${stun.port}`);
    }
    const node = await MeshNode.create({
      chain,
      network,
      key: data.identity,
      clock: systemClock,
      random: systemRandom,
      log,
      services: fullNodeServices({
        mine: config.mine,
        capacity: () => ({ ...probeCapacity(), runningJobs: 0 }),
        jobs: {
          store: jobStore,
          // Always: directed placement by admins and token holders runs jobs without an allow-list.
          executor: new DockerExecutor(),
          policy: config.hostPolicy,
          queueMs: config.jobQueueMs,
          heartbeatMs: config.heartbeatMs,
        },
        placement: { capabilityRoots: config.capabilityRoots.map((hex) => fromHex(hex, 32)) },
        channels: { store: channelStore },
        slashingProtection: { store: signedStore },
        doppelgangerWaitMs: DOPPELGANGER_WAIT_BLOCKS * config.params.blockIntervalMs,
        tunnel: { sockets: nodeTunnelSockets },
        pings: { intervalMs: config.pingIntervalMs },
        alone: { advice: aloneAdvice(config) },
      }),
    });
    ranks = (peer) => node.services.peerRanks.rank(peer);
    await node.start();
    closers.push(() => node.stop());
    // The wallet page and, for this machine only, the operator's page ride on the same port:
    // their files and config, no state (docs/browser.md, docs/operator.md).
    const api = withOperatorPage(
      withWallet(
        createNodeApi({
          services: { ...node.services, traffic: network },
          token: data.token,
          maxStreams: config.maxStreams,
          maxStreamsPerClient: config.maxStreamsPerClient,
        }),
        {
          chain,
          addresses: () => network.addresses(),
          peerId: network.libp2p.peerId.toString(),
        },
      ),
    );
    const server = await starting(`cannot serve the HTTP API on ${config.host} port ${config.port}`, () => serveFetch(api, config.host, config.port));
    closers.push(() => server.close());
    // Where client commands (mesh status, mesh send) find this node; removed first at a clean stop.
    await writeApiAddress(config.dataDir, server.url);
    closers.push(() => removeApiAddress(config.dataDir, server.url));

    const interval = config.params.network === MAINNET.network ? '' : ` (block interval ${config.params.blockIntervalMs} ms)`;
    process.stdout.write(
      [
        `mesh node ${node.nodeId}`,
        `  network   ${config.params.network}${interval}, height ${chain.tip.height}`,
        `  data      ${config.dataDir}`,
        `  http      ${server.url}`,
        `  operator  ${server.url}/node`,
        ...network.addresses().map((a) => `  p2p       ${a}`),
        `  mining    ${config.mine ? 'yes' : 'no'}`,
        `  jobs      ${hosting(config, node)}`,
        '',
      ].join('\n'),
    );
  } catch (error) {
    await closeAll();
    throw error;
  }

  log(`${await stopped}: stopping`);
  await closeAll();
  log('stopped');
  // Everything is closed and stored; timers libp2p leaves behind would only delay the exit.
  setTimeout(() => process.exit(0), 100).unref();
  return 0;
}
