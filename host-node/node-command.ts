/**
 * `mesh node`: a mesh node on this machine. Data in the data directory (LevelDB chain, identity,
 * api.token), libp2p on TCP and WebSockets, the HTTP API on loopback, blocks on the timer with
 * `--mine`. SIGINT or SIGTERM stops it cleanly; a second signal exits at once.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createNodeApi } from '../core/api/handler.ts';
import { Chain } from '../core/chain/chain.ts';
import { systemRandom } from '../core/crypto/random.ts';
import { devnet, MAINNET, type ChainParams } from '../core/ledger/params.ts';
import { MeshNode } from '../core/node/node.ts';
import { systemClock } from '../core/time/clock.ts';
import { probeCapacity } from './capacity.ts';
import { DataDirError, openDataDir } from './data-dir.ts';
import { serveApi } from './http-server.ts';
import { LevelStore, StoreLockedError } from './leveldb-store.ts';
import { installNativeCrypto } from './native-crypto.ts';
import { P2PNetwork, parseBootstrapAddress } from './p2p.ts';

export const NODE_USAGE = `Usage: mesh node [options]

Options:
  --data-dir DIR             data directory (default ~/.mesh)
  --host ADDR                HTTP API address (default 127.0.0.1)
  --port N                   HTTP API port (default 8844; 0 picks a free port)
  --p2p-port N               libp2p TCP port (default 8845); WebSockets listen on the next port
  --bootstrap MULTIADDR      a peer to join through, /…/p2p/<peer id> (repeatable)
  --mine                     produce blocks
  --devnet                   use the separate local development chain
  --block-interval-ms N      block interval on the devnet (default 1000)
`;

export interface NodeConfig {
  readonly dataDir: string;
  readonly host: string;
  readonly port: number;
  readonly p2pPort: number;
  readonly bootstrap: string[];
  readonly mine: boolean;
  readonly params: ChainParams;
}

class UsageError extends Error {}

/** The node could not start as configured (a port taken, a data directory in use): said without a stack. */
class StartError extends Error {}

function port(text: string | undefined, fallback: number, name: string, max = 65_535): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > max) throw new UsageError(`${name} must be a port number 0–${max}, got ${JSON.stringify(text)}`);
  return n;
}

/**
 * Runs `step`; a failure becomes a StartError saying what could not be done (the data directory's
 * and the store's own errors already say it).
 */
async function starting<T>(what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    const known = error instanceof DataDirError || error instanceof StoreLockedError;
    const message = error instanceof Error ? error.message : String(error);
    throw new StartError(known ? message : `${what}: ${message}`, { cause: error });
  }
}

/** Reads the command line; throws a usage error naming the bad option. */
export function parseNodeArgs(args: string[]): NodeConfig {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        'data-dir': { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        'p2p-port': { type: 'string' },
        bootstrap: { type: 'string', multiple: true },
        mine: { type: 'boolean' },
        devnet: { type: 'boolean' },
        'block-interval-ms': { type: 'string' },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const interval = values['block-interval-ms'];
  if (interval !== undefined && !values.devnet) throw new UsageError('--block-interval-ms is for the devnet only (add --devnet)');
  let params: ChainParams = MAINNET;
  if (values.devnet) {
    if (interval !== undefined && !/^\d+$/.test(interval)) throw new UsageError(`--block-interval-ms must be an integer, got ${JSON.stringify(interval)}`);
    try {
      params = devnet(interval === undefined ? undefined : Number(interval));
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  }
  const bootstrap = values.bootstrap ?? [];
  for (const text of bootstrap) {
    try {
      parseBootstrapAddress(text);
    } catch (error) {
      throw new UsageError(`--bootstrap: ${(error as Error).message}`);
    }
  }
  // An empty host would make node:http listen on every interface.
  if (values.host === '') throw new UsageError('--host needs an address');
  if (values['data-dir'] === '') throw new UsageError('--data-dir needs a directory');
  return {
    dataDir: values['data-dir'] ?? join(homedir(), '.mesh'),
    host: values.host ?? '127.0.0.1',
    port: port(values.port, 8844, '--port'),
    // WebSockets listen on the next port, which must exist too.
    p2pPort: port(values['p2p-port'], 8845, '--p2p-port', 65_534),
    bootstrap,
    mine: values.mine ?? false,
    params,
  };
}

function log(line: string): void {
  process.stderr.write(`${new Date().toISOString()} ${line}\n`);
}

/** Runs `mesh node` until SIGINT/SIGTERM; resolves to the exit code. */
export async function runNodeCommand(args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(NODE_USAGE);
    return 0;
  }
  let config: NodeConfig;
  try {
    config = parseNodeArgs(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`mesh node: ${error.message}\n\n${NODE_USAGE}`);
    return 2;
  }
  try {
    return await runNode(config);
  } catch (error) {
    if (!(error instanceof StartError)) throw error;
    process.stderr.write(`mesh node: ${error.message}\n`);
    return 1;
  }
}

async function runNode(config: NodeConfig): Promise<number> {
  installNativeCrypto();
  const data = await starting(`cannot use the data directory ${config.dataDir}`, () => openDataDir(config.dataDir));
  // One chain per network, so a devnet never touches the main network's data.
  const chainPath = join(config.dataDir, 'chain', config.params.network);
  const store = await starting(`cannot open the chain store ${chainPath}`, () => LevelStore.open(chainPath));
  const closers: (() => Promise<void>)[] = [() => store.close()];
  const closeAll = async (): Promise<void> => {
    for (const close of closers.reverse()) await close().catch((e: unknown) => log(`stop: ${String(e)}`));
  };
  try {
    const chain = await Chain.open({ store, params: config.params });
    const network = await starting(`cannot listen for peers on port ${config.p2pPort}`, () =>
      P2PNetwork.start({ key: data.identity, port: config.p2pPort, bootstrap: config.bootstrap, log }),
    );
    closers.push(() => network.stop());
    const node = new MeshNode({
      chain,
      network,
      key: data.identity,
      mine: config.mine,
      capacity: () => ({ ...probeCapacity(), runningJobs: 0 }),
      clock: systemClock,
      random: systemRandom,
      log,
    });
    await node.start();
    closers.push(() => node.stop());
    const api = createNodeApi({ service: node, token: data.token });
    const server = await starting(`cannot serve the HTTP API on ${config.host} port ${config.port}`, () => serveApi(api, config.host, config.port));
    closers.push(() => server.close());

    const interval = config.params.network === MAINNET.network ? '' : ` (block interval ${config.params.blockIntervalMs} ms)`;
    process.stdout.write(
      [
        `mesh node ${node.nodeId}`,
        `  network   ${config.params.network}${interval}, height ${chain.tip.height}`,
        `  data      ${config.dataDir}`,
        `  http      ${server.url}`,
        ...network.addresses().map((a) => `  p2p       ${a}`),
        `  mining    ${config.mine ? 'yes' : 'no'}`,
        '',
      ].join('\n'),
    );
  } catch (error) {
    await closeAll();
    throw error;
  }

  const signal = await new Promise<string>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  log(`${signal}: stopping`);
  const force = (): void => process.exit(130);
  process.once('SIGINT', force);
  process.once('SIGTERM', force);
  await closeAll();
  log('stopped');
  // Everything is closed and stored; timers libp2p leaves behind would only delay the exit.
  setTimeout(() => process.exit(0), 100).unref();
  return 0;
}
