/**
 * One node of the tunnel benchmark, as a process of its own: the Node host's libp2p
 * (host-node/p2p.ts) and the tunnel service on node:net sockets, the parts of `mesh node` a tunnel
 * runs through, without the chain. The benchmark drives two of them over stdin and stdout, one JSON
 * object a line, and times in the same two processes a bare libp2p stream, a raw stream of the
 * network port and a tunnel.
 *
 * Requests: {id, op, ...}; answers: {id, ok: value} or {id, error}. The first line out, unasked, is
 * {ready: {node_id, addr}}.
 */
import { publicKeyFromRaw } from '@libp2p/crypto/keys';
import type { Stream } from '@libp2p/interface';
import { peerIdFromPublicKey } from '@libp2p/peer-id';
import { multiaddr } from '@multiformats/multiaddr';
import { SigningKey } from '../../core/crypto/ed25519.ts';
import { fromHex, toHex } from '../../core/encoding/hex.ts';
import { readAll } from '../../core/net/duplex.ts';
import { type PeerStream, streamProtocolId } from '../../core/net/network.ts';
import { parseLoopbackAddress } from '../../core/tunnel/address.ts';
import { TunnelService } from '../../core/tunnel/tunnels.ts';
import { startP2PNetwork } from '../../host-node/p2p.ts';
import { nodeTunnelSockets } from '../../host-node/tunnel-sockets.ts';
import { answerRequests, type PeerOps } from '../lib/peer-process.ts';
import { processCpuMs } from '../lib/processes.ts';

/**
 * The bare libp2p protocols, one per direction: on `up` the opener sends and the server counts
 * until the FIN, then answers the count; on `down` the opener asks for a count of bytes and the
 * server sends them.
 */
export const BARE_PROTOCOLS = { up: '/mesh-bench/1/up', down: '/mesh-bench/1/down' } as const;
/** The same exchanges on raw streams of the network port. */
export const PORT_PROTOCOLS = { up: streamProtocolId('bench', 'up'), down: streamProtocolId('bench', 'down') } as const;
/** What every sender sends, again and again. */
export const CHUNK_BYTES = 64 * 1024;

export type Direction = 'up' | 'down';
export type Via = 'libp2p' | 'port';

const chunk = new Uint8Array(CHUNK_BYTES).fill(0x5a);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Sends `total` bytes on a libp2p stream, minding its back pressure. */
export async function sendBare(stream: Stream, total: number): Promise<void> {
  for (let sent = 0; sent < total; sent += CHUNK_BYTES) {
    const part = total - sent < CHUNK_BYTES ? chunk.subarray(0, total - sent) : chunk;
    if (!stream.send(part)) await stream.onDrain();
  }
}

/** Counts what arrives on a libp2p stream until the other side's FIN; resolves to the count. */
export function countBare(stream: Stream): Promise<number> {
  let count = 0;
  return new Promise((resolve, reject) => {
    stream.addEventListener('message', (event) => void (count += event.data.byteLength));
    stream.addEventListener('remoteCloseWrite', () => resolve(count));
    stream.addEventListener('close', (event) => (event.error ? reject(event.error) : resolve(count)));
  });
}

/** The first message of a libp2p stream, as text (a request or an answer: one small message). */
export function firstBare(stream: Stream): Promise<string> {
  return new Promise((resolve) => stream.addEventListener('message', (event) => resolve(decoder.decode(event.data.subarray())), { once: true }));
}

export async function sendPort(stream: PeerStream, total: number): Promise<void> {
  for (let sent = 0; sent < total; sent += CHUNK_BYTES) await stream.write(total - sent < CHUNK_BYTES ? chunk.subarray(0, total - sent) : chunk);
}

export async function countPort(stream: PeerStream): Promise<number> {
  let count = 0;
  for await (const part of stream) count += part.length;
  return count;
}

async function main(): Promise<void> {
  const key = SigningKey.generate();
  const network = await startP2PNetwork({ key, port: 0, listenHost: '127.0.0.1', bootstrap: [] });
  const tunnels = new TunnelService({ network, sockets: nodeTunnelSockets, log: (line) => process.stderr.write(`${line}\n`) });

  // The serving side of the exchanges.
  await network.libp2p.handle(BARE_PROTOCOLS.up, async (stream) => {
    const count = await countBare(stream);
    stream.send(encoder.encode(String(count)));
    await stream.close();
  });
  await network.libp2p.handle(BARE_PROTOCOLS.down, async (stream) => {
    await sendBare(stream, Number(await firstBare(stream)));
    await stream.close();
  });
  network.serveStream(PORT_PROTOCOLS.up, (stream) => {
    void (async () => {
      await stream.write(encoder.encode(String(await countPort(stream))));
      await stream.closeWrite();
    })().catch(() => stream.reset());
  });
  network.serveStream(PORT_PROTOCOLS.down, (stream) => {
    void (async () => {
      await sendPort(stream, Number(decoder.decode(await readAll(stream))));
      await stream.closeWrite();
    })().catch(() => stream.reset());
  });

  /** Times one exchange with `node`: bytes that went the asked way, and the ms it took. */
  const exchange = async (node: string, total: number, direction: Direction, via: Via): Promise<{ bytes: number; ms: number }> => {
    const peer = fromHex(node, 32);
    const started = performance.now();
    const done = (bytes: number): { bytes: number; ms: number } => ({ bytes, ms: performance.now() - started });
    if (via === 'libp2p') {
      const stream = await network.libp2p.dialProtocol(peerIdFromPublicKey(publicKeyFromRaw(peer)), BARE_PROTOCOLS[direction]);
      if (direction === 'down') {
        const counting = countBare(stream);
        stream.send(encoder.encode(String(total)));
        await stream.close();
        return done(await counting);
      }
      const answer = firstBare(stream);
      await sendBare(stream, total);
      await stream.close();
      return done(Number(await answer));
    }
    const stream = await network.openStream(peer, PORT_PROTOCOLS[direction]);
    if (direction === 'down') {
      await stream.write(encoder.encode(String(total)));
      await stream.closeWrite();
      return done(await countPort(stream));
    }
    await sendPort(stream, total);
    await stream.closeWrite();
    return done(Number(decoder.decode(await readAll(stream))));
  };

  const ops: PeerOps = {
    dial: async ({ addr }) => void (await network.libp2p.dial(multiaddr(String(addr)))),
    listen: ({ protocol, target, allow }) =>
      tunnels.open({
        kind: 'listen',
        protocol: String(protocol),
        target: parseLoopbackAddress(String(target), 'target'),
        allow: (allow as string[]).map((id) => fromHex(id, 32)),
      }),
    forward: ({ protocol, node }) =>
      tunnels.open({ kind: 'forward', protocol: String(protocol), node: fromHex(String(node), 32), bind: { host: '127.0.0.1', port: 0 } }),
    tunnels: async () => tunnels.list(),
    exchange: ({ node, bytes, direction, via }) => exchange(String(node), Number(bytes), direction as Direction, via as Via),
    cpu: async () => processCpuMs(process.pid),
    stop: async () => {
      await tunnels.stop();
      await network.stop();
      setTimeout(() => process.exit(0), 50);
    },
  };

  await answerRequests({ node_id: toHex(network.self), addr: network.addresses().find((a) => a.includes('/tcp/') && !a.includes('/ws'))! }, ops);
}

if (import.meta.main) await main();
