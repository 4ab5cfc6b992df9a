/**
 * The tunnel benchmark's measurements. Two peer processes (peer.ts: the node's libp2p and tunnel
 * service), A connected to B; in the same two processes, one after the other, the same count of
 * bytes goes each way:
 *
 * - libp2p: a bare libp2p 3 stream from A to B, `send` and 'message' events, no adapter;
 * - port: a raw stream of the network port (Network.openStream, the tunnel's own path);
 * - tunnel: TCP → A → libp2p → B → TCP: this process connects to A's forwarded port, B's listener
 *   connects to a TCP service in this process;
 * - tcp: this process to the same TCP service directly, loopback only, for scale.
 *
 * Up: the sender sends, the receiver counts until the FIN and answers the count (timed to the
 * answer). Down: the receiver asks for the count and counts what arrives until the FIN.
 */
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { type Peer, startPeerProcess } from '../lib/peer-process.ts';
import { processCpuMs, since } from '../lib/processes.ts';
import { CHUNK_BYTES, type Direction } from './peer.ts';

export type Case = 'libp2p' | 'port' | 'tunnel' | 'tcp';
export const CASES: readonly Case[] = ['libp2p', 'port', 'tunnel', 'tcp'];
export const DIRECTIONS: readonly Direction[] = ['up', 'down'];

/** One timed exchange. */
export interface Sample {
  readonly case: Case;
  readonly direction: Direction;
  readonly bytes: number;
  readonly ms: number;
  /** CPU time of A and of B meanwhile (null for tcp, which does not go through them). */
  readonly cpuMs: { readonly a: number; readonly b: number } | null;
}

const PEER_SCRIPT = fileURLToPath(new URL('./peer.ts', import.meta.url));

/** Starts a peer process (with `nodeArgs` for Node: a CPU profile); resolves once it listens. */
export function startPeer(nodeArgs: readonly string[] = []): Promise<Peer> {
  return startPeerProcess({ script: PEER_SCRIPT, nodeArgs });
}

const chunk = Buffer.alloc(CHUNK_BYTES, 0x5a);

/** Writes `total` bytes to a socket, minding its back pressure. */
async function sendTcp(socket: Socket, total: number): Promise<void> {
  for (let sent = 0; sent < total; sent += CHUNK_BYTES) {
    if (!socket.write(total - sent < CHUNK_BYTES ? chunk.subarray(0, total - sent) : chunk)) await once(socket, 'drain');
  }
}

/** Everything a socket delivers until its FIN, counted; `text` keeps it when it is a short answer. */
function drain(socket: Socket): Promise<{ bytes: number; text: string }> {
  let bytes = 0;
  let text = '';
  return new Promise((resolve, reject) => {
    socket.on('data', (data: Buffer) => {
      bytes += data.length;
      if (text.length < 32) text += data.toString('latin1');
    });
    socket.once('end', () => resolve({ bytes, text }));
    socket.once('error', reject);
  });
}

/** The TCP services of this process: a sink (counts until the FIN, answers the count) and a source (sends what it is asked for). */
export interface TcpServices {
  readonly sink: string;
  readonly source: string;
  close(): void;
}

export async function startTcpServices(): Promise<TcpServices> {
  const sink = createServer({ allowHalfOpen: true }, (socket) => {
    void drain(socket).then(
      ({ bytes }) => socket.end(String(bytes)),
      () => socket.destroy(),
    );
  });
  const source = createServer({ allowHalfOpen: true }, (socket) => {
    void drain(socket)
      .then(async ({ text }) => {
        await sendTcp(socket, Number(text));
        socket.end();
      })
      .catch(() => socket.destroy());
  });
  const servers: Server[] = [sink, source];
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
  const address = (s: Server): string => `127.0.0.1:${(s.address() as AddressInfo).port}`;
  return { sink: address(sink), source: address(source), close: () => servers.forEach((s) => s.close()) };
}

/** One exchange over TCP to `address`: timed from the connect to the answer or the last byte. */
export async function tcpExchange(address: string, total: number, direction: Direction): Promise<{ bytes: number; ms: number }> {
  const started = performance.now();
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  const socket = connect({ host, port, allowHalfOpen: true });
  socket.setNoDelay(true);
  await once(socket, 'connect');
  const reading = drain(socket);
  if (direction === 'down') socket.end(String(total));
  else {
    await sendTcp(socket, total);
    socket.end();
  }
  const { bytes, text } = await reading;
  socket.destroy();
  return { bytes: direction === 'down' ? bytes : Number(text), ms: performance.now() - started };
}

/** The two peers, connected, with B listening for A and A forwarding to it, and the TCP services. */
export interface Setup {
  readonly a: Peer;
  readonly b: Peer;
  readonly services: TcpServices;
  /** A's forwarded addresses, by direction. */
  readonly forwards: Readonly<Record<Direction, string>>;
}

/** Starts the peers and services; with `cpuProfDir`, the peers write CPU profiles there when they stop. */
export async function startSetup(options: { cpuProfDir?: string | null } = {}): Promise<Setup> {
  const nodeArgs = options.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`] : [];
  const [a, b] = await Promise.all([startPeer(nodeArgs), startPeer(nodeArgs)]);
  const services = await startTcpServices();
  try {
    await a.call('dial', { addr: b.addr });
    const forwards = { up: '', down: '' };
    for (const direction of DIRECTIONS) {
      const target = direction === 'up' ? services.sink : services.source;
      await b.call('listen', { protocol: `bench-${direction}`, target, allow: [a.nodeId] });
      forwards[direction] = (await a.call<{ address: string }>('forward', { protocol: `bench-${direction}`, node: b.nodeId })).address;
    }
    return { a, b, services, forwards };
  } catch (error) {
    await stopSetup({ a, b, services, forwards: { up: '', down: '' } });
    throw error;
  }
}

export async function stopSetup(setup: Setup): Promise<void> {
  setup.services.close();
  await Promise.all([setup.a.stop(), setup.b.stop()]);
}

/** Times one exchange of `total` bytes through `kind`, with the peers' CPU time meanwhile. */
export async function measure(setup: Setup, kind: Case, direction: Direction, total: number): Promise<Sample> {
  const pids = [setup.a.pid, setup.b.pid];
  const before = await Promise.all(pids.map(processCpuMs));
  let result: { bytes: number; ms: number };
  if (kind === 'libp2p' || kind === 'port') result = await setup.a.call('exchange', { node: setup.b.nodeId, bytes: total, direction, via: kind });
  else
    result = await tcpExchange(
      kind === 'tunnel' ? setup.forwards[direction] : direction === 'up' ? setup.services.sink : setup.services.source,
      total,
      direction,
    );
  if (result.bytes !== total) throw new Error(`${kind} ${direction}: ${result.bytes} bytes arrived of ${total}`);
  const after = await Promise.all(pids.map(processCpuMs));
  const [a, b] = [since(before[0]!, after[0]!), since(before[1]!, after[1]!)];
  return { case: kind, direction, bytes: total, ms: result.ms, cpuMs: kind === 'tcp' || a === null || b === null ? null : { a, b } };
}

/** `runs` rounds, each measuring every case each way in turn (so a slow moment hits all alike), after one unrecorded warm-up round. */
export async function measureRounds(setup: Setup, runs: number, total: number, log: (line: string) => void): Promise<Sample[]> {
  for (const direction of DIRECTIONS) for (const kind of CASES) await measure(setup, kind, direction, Math.min(total, 4 * 1024 * 1024));
  const samples: Sample[] = [];
  for (let round = 1; round <= runs; round++) {
    const line: string[] = [];
    for (const direction of DIRECTIONS) {
      for (const kind of CASES) {
        const sample = await measure(setup, kind, direction, total);
        samples.push(sample);
        line.push(`${kind} ${direction} ${mbps(sample).toFixed(0)}`);
      }
    }
    log(`  round ${round}: ${line.join(', ')} MB/s`);
  }
  return samples;
}

/** A sample's throughput in MB/s (10^6 bytes a second). */
export function mbps(sample: Pick<Sample, 'bytes' | 'ms'>): number {
  return sample.bytes / 1e6 / (sample.ms / 1000);
}
