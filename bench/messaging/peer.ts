/**
 * A node process for the messaging benchmark: the node `mesh node --devnet` runs (a MeshNode on the
 * Node host's libp2p from startP2PNetwork, its HTTP API from createNodeApi on serveFetch), over a
 * chain in memory (app messaging never touches the store), plus what the baselines need inside the
 * same process, so that they cross the same libp2p connection:
 *
 * - `/mesh-bench/sink/1`, a bare libp2p protocol: it reads length-prefixed frames until the writer
 *   closes, then answers with how many it read;
 * - `bench.rpc` on the network port, answering every request with nothing;
 * - POST /bench/raw `{to, count, size}`: one bare stream to `to`'s sink carrying `count` frames of
 *   `size` bytes, timed from the dial to the sink's answer;
 * - POST /bench/rpc `{to, count, size, concurrency}`: `count` requests on `bench.rpc` (one stream
 *   each), `concurrency` at a time;
 * - POST /bench/lane `{to, count, size, batch, in_flight}`: `count` messages through the node's own
 *   messaging (its lane to `to`, no HTTP), `batch` a call, `in_flight` calls at a time.
 *
 * Usage: node bench/messaging/peer.ts [--bootstrap MULTIADDR]. It prints `bench-node <id>`,
 * `token <api token>`, `http <url>` and `p2p <multiaddr>` lines, and stops on SIGTERM.
 */
import { parseArgs } from 'node:util';
import { publicKeyFromRaw } from '@libp2p/crypto/keys';
import { peerIdFromPublicKey } from '@libp2p/peer-id';
import { lpStream } from '@libp2p/utils';
import { createNodeApi } from '../../core/api/handler.ts';
import { Chain } from '../../core/chain/chain.ts';
import { SigningKey } from '../../core/crypto/ed25519.ts';
import { systemRandom } from '../../core/crypto/random.ts';
import { fromHex, toHex } from '../../core/encoding/hex.ts';
import { devnet } from '../../core/ledger/params.ts';
import { MeshNode } from '../../core/node/node.ts';
import { fullNodeServices } from '../../core/node/services.ts';
import { MemoryStore } from '../../core/store/kv.ts';
import { systemClock } from '../../core/time/clock.ts';
import { stopSignal } from '../../host-node/cli/stop-signal.ts';
import { serveFetch } from '../../host-node/http-server.ts';
import { nodeCrypto } from '../../host-node/native-crypto.ts';
import { startP2PNetwork } from '../../host-node/p2p.ts';

export const SINK_PROTOCOL = '/mesh-bench/sink/1';
export const RPC_NAME = 'bench.rpc';
/** The largest frame the sink reads (a message of the benchmark is far smaller). */
const MAX_FRAME = 1024 * 1024;
/** Frames handed to the stream at once by the raw sender. */
const WRITE_BATCH = 64;

const { values } = parseArgs({ options: { bootstrap: { type: 'string', multiple: true } } });
const stopped = stopSignal();
const key = SigningKey.generate();
const chain = await Chain.open({ store: new MemoryStore(), params: devnet(), crypto: await nodeCrypto() });
const network = await startP2PNetwork({ key, port: 0, listenHost: '127.0.0.1', bootstrap: values.bootstrap ?? [] });
const node = await MeshNode.create({
  chain,
  network,
  key,
  clock: systemClock,
  random: systemRandom,
  log: (line) => process.stderr.write(`${line}\n`),
  services: fullNodeServices({ mine: false, capacity: () => ({ cpuCores: 1, memMb: 1024, runningJobs: 0, tags: [] }) }),
});
await node.start();

await network.libp2p.handle(SINK_PROTOCOL, async (stream) => {
  const lp = lpStream(stream, { maxDataLength: MAX_FRAME });
  let frames = 0;
  try {
    for (;;) {
      await lp.read();
      frames++;
    }
  } catch {
    // The writer closed its side (or went away): the count is what arrived.
  }
  const answer = new Uint8Array(4);
  new DataView(answer.buffer).setUint32(0, frames);
  await lp.write(answer).catch(() => {});
  await stream.close().catch(() => {});
});
network.serve(RPC_NAME, async () => new Uint8Array(0));

/** One bare stream to `to`'s sink with `count` frames of `size` bytes; the ms it took and the frames the sink counted. */
async function rawStream(to: Uint8Array, count: number, size: number): Promise<{ ms: number; received: number }> {
  const payload = new Uint8Array(size).fill(0x5a);
  const started = performance.now();
  const stream = await network.libp2p.dialProtocol(peerIdFromPublicKey(publicKeyFromRaw(to)), SINK_PROTOCOL);
  const lp = lpStream(stream, { maxDataLength: MAX_FRAME });
  for (let sent = 0; sent < count; sent += WRITE_BATCH) {
    await lp.writeV(Array.from({ length: Math.min(WRITE_BATCH, count - sent) }, () => payload));
  }
  await stream.close();
  const answer = (await lp.read()).subarray();
  const ms = performance.now() - started;
  return { ms, received: new DataView(answer.buffer, answer.byteOffset).getUint32(0) };
}

/** `count` requests on bench.rpc to `to`, `concurrency` at a time; the ms they took. */
async function rpcRequests(to: Uint8Array, count: number, size: number, concurrency: number): Promise<{ ms: number }> {
  const payload = new Uint8Array(size).fill(0x5a);
  let next = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      await network.request(to, RPC_NAME, payload);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { ms: performance.now() - started };
}

/** `count` messages to `to` through the node's messaging, `batch` a call, `inFlight` calls at a time; the ms until the last is acknowledged. */
async function laneMessages(to: Uint8Array, count: number, size: number, batch: number, inFlight: number): Promise<{ ms: number }> {
  const payload = new Uint8Array(size).fill(0x5a);
  const topic = `lane-${Date.now()}`;
  let next = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < count) {
      const first = next;
      next = Math.min(count, next + batch);
      await node.services.messaging.messaging.sendMany(
        to,
        Array.from({ length: next - first }, () => ({ topic, payload })),
      );
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { ms: performance.now() - started };
}

const token = toHex(systemRandom.bytes(16));
const api = createNodeApi({ services: node.services, token });
const json = (value: unknown): Response => new Response(JSON.stringify(value), { headers: { 'content-type': 'application/json' } });
const server = await serveFetch(
  async (request) => {
    const url = new URL(request.url);
    if (request.method !== 'POST' || !url.pathname.startsWith('/bench/')) return api(request);
    const body = (await request.json()) as { to: string; count: number; size: number; concurrency?: number; batch?: number; in_flight?: number };
    const to = fromHex(body.to, 32);
    if (url.pathname === '/bench/raw') return json(await rawStream(to, body.count, body.size));
    if (url.pathname === '/bench/rpc') return json(await rpcRequests(to, body.count, body.size, body.concurrency ?? 1));
    if (url.pathname === '/bench/lane') return json(await laneMessages(to, body.count, body.size, body.batch ?? 1, body.in_flight ?? 1));
    return api(request);
  },
  '127.0.0.1',
  0,
);

process.stdout.write([`bench-node ${node.nodeId}`, `token ${token}`, `http ${server.url}`, ...network.addresses().map((a) => `p2p ${a}`), ''].join('\n'));
await stopped;
await server.close();
await node.stop();
await network.stop();
process.exit(0);
