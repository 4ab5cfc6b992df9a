/**
 * The messaging benchmark's measurements, on two node processes on loopback (peer.ts: the node of
 * `mesh node`, plus the baselines' protocols), A bootstrapped from B:
 *
 * - latency: POST /mesh/send on A, one at a time, to the message's event on B's
 *   /mesh/messages/stream (and to the POST's answer, B's acknowledgement);
 * - throughput: messages of one size sent through A's API, in batches (POST /mesh/send-batch) and
 *   one a POST, until the last one is on B's stream; next to, in the same rounds, one bare libp2p
 *   stream from A to B carrying as many frames of the same size, A's messaging called in its own
 *   process (the lane without HTTP), and as many requests on the network port (one libp2p stream
 *   each) without the HTTP API or the inbox.
 *
 * Every time is wall-clock epoch ms with a fraction (performance.timeOrigin + now()), the clock
 * the SSE arrival times are taken on.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { batchBytesCodec, inboxFramesOf } from '../../core/api/routes/messaging.ts';
import { encode } from '../../core/encoding/codec.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { type MeshProcess, postJson, stopNode, waitFor } from '../../test/mesh-process.ts';
import { processCpuMs, since } from '../lib/processes.ts';

const PEER = fileURLToPath(new URL('./peer.ts', import.meta.url));
const wallNow = (): number => performance.timeOrigin + performance.now();

/**
 * B's inbox stream in its binary form (Accept: application/octet-stream), read as it comes: each
 * entry's topic and the counter its payload starts with, and when it arrived.
 */
export interface InboxReader {
  readonly events: { readonly topic: string; readonly counter: number }[];
  /** When each event arrived: epoch ms with a fraction, the clock the POSTs are timed on. */
  readonly arrivals: number[];
  /** Resolves with the index of the first event from index `from` on that matches, as soon as it is there. */
  find(from: number, match: (event: InboxReader['events'][number]) => boolean, timeoutMs: number): Promise<number>;
  close(): void;
}

/** The two processes, and B's stream, open from before the first message. */
export interface Pair {
  readonly a: MeshProcess;
  readonly b: MeshProcess;
  readonly stream: InboxReader;
}

async function openInbox(node: MeshProcess): Promise<InboxReader> {
  const controller = new AbortController();
  const response = await fetch(`${node.url}/mesh/messages/stream`, { headers: { accept: 'application/octet-stream' }, signal: controller.signal });
  if (!response.ok || response.body === null) throw new Error(`GET /mesh/messages/stream: ${response.status}`);
  const events: InboxReader['events'] = [];
  const arrivals: number[] = [];
  const waiters = new Set<() => void>();
  void (async () => {
    try {
      for await (const event of inboxFramesOf(response.body!)) {
        events.push({ topic: event.topic, counter: counterOf(event.payload) });
        arrivals.push(wallNow());
        for (const wake of waiters) wake();
      }
    } catch {
      // Closed by the benchmark or the node.
    }
  })();
  const find: InboxReader['find'] = (from, match, timeoutMs) =>
    new Promise((resolve, reject) => {
      let seen = from;
      const check = (): void => {
        for (; seen < events.length; seen++) {
          if (!match(events[seen]!)) continue;
          done();
          resolve(seen);
          return;
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no matching event on B's stream within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  return { events, arrivals, find, close: () => controller.abort() };
}

/** Starts a peer process (bootstrapped from `bootstrap`) and reads what it printed. */
async function startPeer(bootstrap: string | null): Promise<MeshProcess> {
  const child = spawn(process.execPath, [PEER, ...(bootstrap === null ? [] : ['--bootstrap', bootstrap])], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the bench node did not start in 30 s\n${stderr}`)), 30_000);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (/^p2p /m.test(stdout) && stdout.endsWith('\n')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the bench node exited with ${code}\n${stderr}`));
    });
  });
  const field = (name: string): string => new RegExp(`^${name} (\\S+)$`, 'm').exec(stdout)![1]!;
  const multiaddrs = [...stdout.matchAll(/^p2p (\S+)$/gm)].map((m) => m[1]!);
  return { nodeId: field('bench-node'), url: field('http'), token: field('token'), multiaddrs, dataDir: '', child, log: () => stderr };
}

/** B, then A bootstrapped from it; resolves once A's messages reach B. */
export async function startPair(): Promise<Pair> {
  const b = await startPeer(null);
  const a = await startPeer(b.multiaddrs.find((m) => m.includes('/tcp/') && !m.includes('/ws'))!);
  const stream = await openInbox(b);
  await waitFor('A reaches B', async () => (await postJson(a, '/mesh/send', { to: b.nodeId, topic: 'warmup', payload_hex: '' })).status === 200, 30_000, 200);
  return { a, b, stream };
}

export async function stopPair(pair: Pair): Promise<void> {
  pair.stream.close();
  await Promise.all([stopNode(pair.a), stopNode(pair.b)]);
}

/** A payload of `size` bytes (at least 8) that names its message: the counter in its first 8 bytes. */
function payloadOf(size: number, n: number): Uint8Array {
  const payload = new Uint8Array(size).fill(0x5a);
  new DataView(payload.buffer).setBigUint64(0, BigInt(n));
  return payload;
}

function counterOf(payload: Uint8Array): number {
  return payload.length < 8 ? -1 : Number(new DataView(payload.buffer, payload.byteOffset).getBigUint64(0));
}

/** One message's latency. */
export interface LatencySample {
  /** POST on A sent to the event's arrival on B's stream. */
  readonly eventMs: number;
  /** POST on A sent to its answer (B queued the message and acknowledged it). */
  readonly postMs: number;
}

/** `count` messages of `size` bytes, one at a time, after `warmup` uncounted ones. */
export async function latency(pair: Pair, count: number, size: number, warmup: number): Promise<LatencySample[]> {
  const samples: LatencySample[] = [];
  const topic = `latency-${Date.now()}`;
  for (let i = 0; i < warmup + count; i++) {
    const from = pair.stream.events.length;
    const sent = wallNow();
    const answer = await postJson(pair.a, '/mesh/send', { to: pair.b.nodeId, topic, payload_hex: toHex(payloadOf(size, i)) });
    const answered = wallNow();
    if (answer.status !== 200) throw new Error(`POST /mesh/send: ${answer.status} ${JSON.stringify(answer.body)}`);
    const index = await pair.stream.find(from, (e) => e.topic === topic && e.counter === i, 10_000);
    if (i >= warmup) samples.push({ eventMs: pair.stream.arrivals[index]! - sent, postMs: answered - sent });
  }
  return samples;
}

/** One round of the ways to carry `count` messages of `size` bytes from A to B. */
export interface ThroughputRound {
  /** Through A's API, `batch` messages a POST /mesh/send-batch as bytes: the first POST sent to the last event on B's stream. */
  readonly batchedMs: number;
  /** The same with the batches as JSON (hex payloads). */
  readonly batchedJsonMs: number;
  /** CPU time of A and B meanwhile (null without /proc). */
  readonly batchedCpuMs: { readonly a: number | null; readonly b: number | null };
  /** Through A's API, one message a POST /mesh/send, `concurrency` at a time, to the last event on B's stream. */
  readonly singleMs: number;
  /** A's messaging called in its own process (no HTTP into A), `batch` at a time, timed in A to the last acknowledgement. */
  readonly laneMs: number;
  /** One bare libp2p stream, timed in A from the dial to the sink's count. */
  readonly bareMs: number;
  /** Requests on the network port, one stream each, `concurrency` at a time, timed in A. */
  readonly rpcMs: number;
}

export interface ThroughputOptions {
  /** Messages of the batched ways and the bare stream in each round. */
  readonly count: number;
  readonly size: number;
  /** Single POSTs (and network-port requests) in flight at a time. */
  readonly concurrency: number;
  /** Messages in one POST /mesh/send-batch. */
  readonly batch: number;
}

/** Batched POSTs in flight at a time: enough that A always has the next batch in hand. */
export const BATCHES_IN_FLIGHT = 4;

/** Messages of the ways that take a stream or a POST each: a tenth, so that they take as long as the others. */
export function singleCount(count: number): number {
  return Math.max(100, Math.round(count / 10));
}

/** How a way through A's API sends: one message a POST /mesh/send, or batches as JSON or as bytes. */
type ApiForm = 'single' | 'json' | 'bytes';

/** POST /mesh/send-batch with the batch as bytes (application/octet-stream, `to` in the query). */
async function postBatchBytes(node: MeshProcess, to: string, messages: { topic: string; payload: Uint8Array }[]): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${node.url}/mesh/send-batch?to=${to}`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream', authorization: `Bearer ${node.token}` },
    body: encode(batchBytesCodec, messages) as Uint8Array<ArrayBuffer>,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** Sends `count` messages through A's API in POSTs of `perPost` (one with 'single'), `inFlight` at a time; the ms until the last is on B's stream. */
async function throughApi(pair: Pair, o: ThroughputOptions & { readonly count: number }, tag: string, form: ApiForm, inFlight: number): Promise<number> {
  const perPost = form === 'single' ? 1 : o.batch;
  const topic = `throughput-${tag}-${Date.now()}`;
  // Counted as they come, from where the stream stood: B's stream holds every earlier event too.
  let seen = pair.stream.events.length;
  let arrivedCount = 0;
  let last = 0;
  const arrived = (): number => {
    for (const events = pair.stream.events; seen < events.length; seen++) {
      if (events[seen]!.topic !== topic) continue;
      arrivedCount++;
      last = pair.stream.arrivals[seen]!;
    }
    return arrivedCount;
  };
  let next = 0;
  const started = wallNow();
  const worker = async (): Promise<void> => {
    while (next < o.count) {
      const first = next;
      next = Math.min(o.count, next + perPost);
      const count = next - first;
      const answer =
        form === 'single'
          ? await postJson(pair.a, '/mesh/send', { to: pair.b.nodeId, topic, payload_hex: toHex(payloadOf(o.size, first)) })
          : form === 'json'
            ? await postJson(pair.a, '/mesh/send-batch', {
                to: pair.b.nodeId,
                messages: Array.from({ length: count }, (_, i) => ({ topic, payload_hex: toHex(payloadOf(o.size, first + i)) })),
              })
            : await postBatchBytes(
                pair.a,
                pair.b.nodeId,
                Array.from({ length: count }, (_, i) => ({ topic, payload: payloadOf(o.size, first + i) })),
              );
      if (answer.status !== 200)
        throw new Error(`POST ${form === 'single' ? '/mesh/send' : `/mesh/send-batch (${form})`}: ${answer.status} ${JSON.stringify(answer.body)}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  await waitFor(`all ${o.count} messages on B's stream`, async () => arrived() === o.count, 60_000, 5);
  return last - started;
}

async function bench<T>(pair: Pair, path: string, body: Record<string, unknown>): Promise<T> {
  const answer = await postJson(pair.a, path, { to: pair.b.nodeId, ...body });
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body as T;
}

/** `rounds` rounds, each carrying the messages every way in turn (their order rotating). */
export async function throughput(pair: Pair, o: ThroughputOptions, rounds: number, log: (line: string) => void): Promise<ThroughputRound[]> {
  const out: ThroughputRound[] = [];
  // Uncounted: a quarter of a round by the batched API, the lane and the bare stream, so the first
  // counted round does not pay for compiling their code.
  const warm = Math.max(100, Math.round(o.count / 4));
  await throughApi(pair, { ...o, count: warm }, 'warmup', 'bytes', BATCHES_IN_FLIGHT);
  await throughApi(pair, { ...o, count: warm }, 'warmup-json', 'json', BATCHES_IN_FLIGHT);
  await bench(pair, '/bench/lane', { count: warm, size: o.size, batch: o.batch, in_flight: BATCHES_IN_FLIGHT });
  await bench(pair, '/bench/raw', { count: warm, size: o.size });
  for (let round = 0; round < rounds; round++) {
    const parts: { -readonly [K in keyof ThroughputRound]?: ThroughputRound[K] } = {};
    const steps = [
      async (): Promise<void> => {
        const cpu0 = await Promise.all([processCpuMs(pair.a.child.pid), processCpuMs(pair.b.child.pid)]);
        parts.batchedMs = await throughApi(pair, o, `batched-${round}`, 'bytes', BATCHES_IN_FLIGHT);
        const cpu1 = await Promise.all([processCpuMs(pair.a.child.pid), processCpuMs(pair.b.child.pid)]);
        parts.batchedCpuMs = { a: since(cpu0[0]!, cpu1[0]!), b: since(cpu0[1]!, cpu1[1]!) };
      },
      async (): Promise<void> => void (parts.batchedJsonMs = await throughApi(pair, o, `json-${round}`, 'json', BATCHES_IN_FLIGHT)),
      async (): Promise<void> =>
        void (parts.singleMs = await throughApi(pair, { ...o, count: singleCount(o.count) }, `single-${round}`, 'single', o.concurrency)),
      async (): Promise<void> =>
        void (parts.laneMs = (
          await bench<{ ms: number }>(pair, '/bench/lane', { count: o.count, size: o.size, batch: o.batch, in_flight: BATCHES_IN_FLIGHT })
        ).ms),
      async (): Promise<void> => {
        const raw = await bench<{ ms: number; received: number }>(pair, '/bench/raw', { count: o.count, size: o.size });
        if (raw.received !== o.count) throw new Error(`the sink counted ${raw.received} frames of ${o.count}`);
        parts.bareMs = raw.ms;
      },
      async (): Promise<void> =>
        void (parts.rpcMs = (await bench<{ ms: number }>(pair, '/bench/rpc', { count: singleCount(o.count), size: o.size, concurrency: o.concurrency })).ms),
    ];
    for (let i = 0; i < steps.length; i++) await steps[(i + round) % steps.length]!();
    const r = parts as ThroughputRound;
    out.push(r);
    const rate = (ms: number, count = o.count): string => `${Math.round((count / ms) * 1000)}/s`;
    const few = singleCount(o.count);
    const cpu = (ms: number | null): string => (ms === null ? '–' : `${Math.round((ms / o.count) * 1000)} µs`);
    log(
      `  round ${round + 1}: batched ${rate(r.batchedMs)} (CPU a message: A ${cpu(r.batchedCpuMs.a)}, B ${cpu(r.batchedCpuMs.b)}), batched as JSON ${rate(r.batchedJsonMs)}, bare stream ${rate(r.bareMs)} (${Math.round((r.bareMs / r.batchedMs) * 100)} %), one per POST ${rate(r.singleMs, few)}, lane without HTTP ${rate(r.laneMs)}, network-port requests ${rate(r.rpcMs, few)}`,
    );
  }
  return out;
}
