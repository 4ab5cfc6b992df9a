/**
 * What the measurement layer costs on the wire: real `mesh node --devnet` processes on loopback,
 * their TCP bytes over a window read from the kernel (`ss -tinp`: bytes_acked and bytes_received
 * of every established socket of each node process), once with the default pings (the netgraph's
 * samples and coordinates ride on them) and once with pings a day apart, so that nothing of the
 * measurement layer falls in the window. The difference is the measurement's cost; the second run
 * is the baseline: what the same nodes spend on everything else (blocks, heights, identify, gossip
 * upkeep).
 */
import { execFile } from 'node:child_process';
import type { NetgraphView } from '../../core/netgraph/netgraph.ts';
import type { PeerView } from '../../core/netgraph/peer-pings.ts';
import { getJson, type MeshProcess, startNode, stopNode, tcpAddress, waitFor } from '../../test/mesh-process.ts';

/** One socket's counters, as `ss -tinp` shows them. */
export interface SocketBytes {
  readonly pid: number;
  /** local and peer address: the socket's identity between two readings. */
  readonly key: string;
  readonly sent: number;
  readonly received: number;
}

/**
 * Parses `ss -tinpH` output: a socket line ([state,] queues, local, peer, `users:((…,pid=N,…))`)
 * followed by its info line (`… bytes_acked:N … bytes_received:N …`). Sockets without a process
 * (not ours) are left out.
 */
export function parseSs(text: string): SocketBytes[] {
  const out: SocketBytes[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    // With a state filter ss leaves the state column out: the line starts with the queues.
    const head = /^(?:[A-Z-]+\s+)?\d+\s+\d+\s+(\S+)\s+(\S+)\s+users:\(\("[^"]*",pid=(\d+),/.exec(lines[i]!);
    if (head === null) continue;
    const info = lines[i + 1] ?? '';
    const sent = /\bbytes_acked:(\d+)/.exec(info)?.[1];
    const received = /\bbytes_received:(\d+)/.exec(info)?.[1];
    out.push({ pid: Number(head[3]), key: `${head[1]} ${head[2]}`, sent: Number(sent ?? 0), received: Number(received ?? 0) });
  }
  return out;
}

/** The established TCP sockets of every process, with their byte counts, as `ss` reads them from the kernel. */
export function readSockets(): Promise<SocketBytes[]> {
  return new Promise((resolve, reject) =>
    execFile('ss', ['-tinpH', 'state', 'established'], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => (error ? reject(error) : resolve(parseSs(stdout)))),
  );
}

/** Bytes each pid sent and received between two readings; a socket opened in between counts from 0. */
export function bytesBetween(before: readonly SocketBytes[], after: readonly SocketBytes[]): Map<number, { sent: number; received: number }> {
  const start = new Map(before.map((s) => [`${s.pid} ${s.key}`, s]));
  const byPid = new Map<number, { sent: number; received: number }>();
  for (const s of after) {
    const was = start.get(`${s.pid} ${s.key}`);
    const total = byPid.get(s.pid) ?? { sent: 0, received: 0 };
    total.sent += s.sent - (was?.sent ?? 0);
    total.received += s.received - (was?.received ?? 0);
    byPid.set(s.pid, total);
  }
  return byPid;
}

export interface TrafficRun {
  readonly nodes: number;
  /** The nodes' --ping-interval-ms. */
  readonly pingIntervalMs: number;
  readonly windowMs: number;
  /** Per node: bytes sent + received per minute over the window. */
  readonly bytesPerMinute: number[];
  /** Per node: connected peers at the end. */
  readonly peers: number[];
  /** Per node: link samples and coordinates held at the end. */
  readonly links: number[];
  readonly coordinates: number[];
}

export interface TrafficOptions {
  readonly nodes: number;
  readonly pingIntervalMs: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  readonly blockIntervalMs: number;
  readonly log: (line: string) => void;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts `nodes` nodes (the first mining), lets them settle, and counts their TCP bytes over the window. */
export async function measureTraffic(options: TrafficOptions): Promise<TrafficRun> {
  const started: MeshProcess[] = [];
  const extraArgs = ['--ping-interval-ms', String(options.pingIntervalMs)];
  try {
    started.push(await startNode({ mine: true, blockIntervalMs: options.blockIntervalMs, extraArgs }));
    for (let i = 1; i < options.nodes; i++) {
      // Each joins through the first and the one before it, so the mesh is more than a star.
      const bootstrap = [...new Set([tcpAddress(started[0]!), tcpAddress(started[i - 1]!)])];
      started.push(await startNode({ blockIntervalMs: options.blockIntervalMs, bootstrap, extraArgs }));
    }
    await waitFor(
      'every node has a peer',
      async () => (await Promise.all(started.map((n) => getJson<{ peers: PeerView[] }>(n, '/peers')))).every((p) => p.peers.length > 0),
      60_000,
    );
    await sleep(options.warmupMs);
    const before = await readSockets();
    await sleep(options.windowMs);
    const after = await readSockets();
    const bytes = bytesBetween(before, after);
    const minutes = options.windowMs / 60_000;
    const views = await Promise.all(started.map((n) => getJson<NetgraphView>(n, '/netgraph')));
    const peers = await Promise.all(started.map(async (n) => (await getJson<{ peers: PeerView[] }>(n, '/peers')).peers.length));
    const run: TrafficRun = {
      nodes: options.nodes,
      pingIntervalMs: options.pingIntervalMs,
      windowMs: options.windowMs,
      bytesPerMinute: started.map((n) => {
        const b = bytes.get(n.child.pid!) ?? { sent: 0, received: 0 };
        return (b.sent + b.received) / minutes;
      }),
      peers,
      links: views.map((v) => v.links.length),
      coordinates: views.map((v) => v.coordinates.length),
    };
    options.log(
      `  ${options.nodes} nodes, pings every ${options.pingIntervalMs} ms: ${Math.round(mean(run.bytesPerMinute))} B per node per minute (${Math.round(mean(peers) * 10) / 10} peers, ${Math.round(mean(run.links) * 10) / 10} links held)`,
    );
    return run;
  } finally {
    await Promise.all(started.map((n) => stopNode(n)));
  }
}

export const mean = (values: readonly number[]): number => values.reduce((s, v) => s + v, 0) / Math.max(1, values.length);
