/**
 * Real `mesh node` processes for multi-node tests on loopback: start with a temp data directory,
 * read the printed NodeId, HTTP address and multiaddrs, call the HTTP API, read SSE streams, and stop
 * (SIGTERM, or SIGKILL to test crash safety). Every process a test starts is stopped by `stopAll`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NODE = process.execPath;

export interface MeshProcess {
  readonly nodeId: string;
  readonly url: string;
  readonly multiaddrs: string[];
  readonly dataDir: string;
  readonly token: string;
  readonly child: ChildProcess;
  /** Everything the process wrote to stderr (its log). */
  readonly log: () => string;
}

export interface StartOptions {
  dataDir?: string;
  mine?: boolean;
  bootstrap?: string[];
  blockIntervalMs?: number;
  p2pPort?: number;
  /** The HTTP API's port (default a free one): a restarted node keeps its origin for pages. */
  httpPort?: number;
  extraArgs?: string[];
  /** Variables added to this process's environment for the node (e.g. DOCKER_HOST of a test engine). */
  env?: Record<string, string>;
  /** A command the node runs under, e.g. `['ip', 'netns', 'exec', NS]` to start it in a network namespace. */
  wrap?: readonly string[];
}

const running = new Set<ChildProcess>();
const dirs = new Set<string>();

/** A fresh temporary data directory, removed by `stopAll`. */
export async function tempDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-node-'));
  dirs.add(dir);
  return dir;
}

/** Starts `mesh node --devnet` and resolves once it has printed its addresses. */
export async function startNode(options: StartOptions = {}): Promise<MeshProcess> {
  const dataDir = options.dataDir ?? (await tempDataDir());
  const args = [
    join(ROOT, 'bin/mesh.js'),
    'node',
    '--devnet',
    '--data-dir',
    dataDir,
    '--port',
    String(options.httpPort ?? 0),
    '--p2p-port',
    String(options.p2pPort ?? 0),
    '--block-interval-ms',
    String(options.blockIntervalMs ?? 250),
    ...(options.mine ? ['--mine'] : []),
    ...(options.bootstrap ?? []).flatMap((b) => ['--bootstrap', b]),
    ...(options.extraArgs ?? []),
  ];
  const [command, ...prefix] = [...(options.wrap ?? []), NODE];
  const child = spawn(command!, [...prefix, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...options.env } });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let stdout = '';
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node did not start in 30 s\n${stderr}`)), 30_000);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (/^ {2}mining /m.test(stdout)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`node exited with ${code} before starting\n${stdout}\n${stderr}`));
    });
  });
  const nodeId = /^mesh node ([0-9a-f]{64})$/m.exec(stdout)?.[1];
  const url = /^ {2}http +(\S+)$/m.exec(stdout)?.[1];
  const multiaddrs = [...stdout.matchAll(/^ {2}p2p +(\S+)$/gm)].map((m) => m[1]!);
  if (!nodeId || !url) throw new Error(`unexpected start output:\n${stdout}`);
  const token = (await readFile(join(dataDir, 'api.token'), 'utf8')).trim();
  return { nodeId, url, multiaddrs, dataDir, token, child, log: () => stderr };
}

/** The loopback TCP multiaddr of a node (what another node bootstraps from). */
export function tcpAddress(node: MeshProcess): string {
  const addr = node.multiaddrs.find((a) => a.startsWith('/ip4/127.0.0.1/tcp/') && !a.includes('/ws'));
  if (!addr) throw new Error(`no loopback TCP address among ${node.multiaddrs.join(', ')}`);
  return addr;
}

/** Stops a node with `signal` and resolves to its exit code (null when killed by the signal). */
export async function stopNode(node: MeshProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (node.child.exitCode !== null || node.child.signalCode !== null) return node.child.exitCode;
  const exited = new Promise<number | null>((resolve) => node.child.once('exit', (code) => resolve(code)));
  node.child.kill(signal);
  return exited;
}

/** Stops every node still running and removes the temp directories. */
export async function stopAll(): Promise<void> {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  dirs.clear();
}

/** GET `path` as JSON (throws on a non-2xx status). */
export async function getJson<T = unknown>(node: MeshProcess, path: string): Promise<T> {
  const response = await fetch(node.url + path);
  if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** POST JSON with the node's token; resolves to status and parsed body. */
export async function postJson(node: MeshProcess, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(node.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${node.token}`, ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** Runs `mesh …args` as a user types it (bin/mesh.js); its exit code and output, whatever the code. */
export function runMesh(args: readonly string[], timeoutMs = 60_000): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(NODE, [join(ROOT, 'bin/mesh.js'), ...args], { cwd: ROOT, timeout: timeoutMs }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, out: stdout, err: stderr });
    });
  });
}

/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** An open SSE stream: its parsed `data:` events, their ids and raw comments, as they arrive. */
export interface EventStream<T> {
  readonly events: T[];
  /** The `id:` of each event (the last one set, as EventSource keeps it; '' before any). */
  readonly ids: string[];
  /** The `event:` type of each event ('message' when its frame names none, as EventSource dispatches it). */
  readonly types: string[];
  /** When each event arrived: epoch ms with a fraction (performance.timeOrigin + performance.now()). */
  readonly arrivals: number[];
  readonly comments: string[];
  /** Resolves with the first event (already received or later) that matches. */
  next(match: (event: T) => boolean, timeoutMs?: number): Promise<T>;
  close(): void;
}

export async function openStream<T = any>(node: MeshProcess, path: string, headers: Record<string, string> = {}): Promise<EventStream<T>> {
  const controller = new AbortController();
  const response = await fetch(node.url + path, { signal: controller.signal, headers });
  if (!response.ok || !response.body) throw new Error(`GET ${path}: ${response.status}`);
  const events: T[] = [];
  const ids: string[] = [];
  const types: string[] = [];
  let lastId = '';
  const arrivals: number[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  void (async () => {
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        // Frames are cut at a moving start, and the buffer once per chunk: a chunk may hold many.
        let start = 0;
        let end;
        while ((end = buffer.indexOf('\n\n', start)) >= 0) {
          const frame = buffer.slice(start, end);
          start = end + 2;
          let type = 'message';
          for (const line of frame.split('\n')) {
            if (line.startsWith('id:')) lastId = line.slice(3).trim();
            else if (line.startsWith('event:')) type = line.slice(6).trim();
            else if (line.startsWith('data:')) {
              events.push(JSON.parse(line.slice(5)) as T);
              ids.push(lastId);
              types.push(type);
              arrivals.push(performance.timeOrigin + performance.now());
            } else if (line.startsWith(':')) comments.push(line.slice(1).trim());
          }
          for (const wake of waiters) wake();
        }
        buffer = buffer.slice(start);
      }
    } catch {
      // Closed by the test or the node.
    }
  })();
  return {
    events,
    ids,
    types,
    arrivals,
    comments,
    next(match, timeoutMs = 30_000) {
      return new Promise<T>((resolve, reject) => {
        const check = (): boolean => {
          const found = events.find(match);
          if (found === undefined) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching event on ${path} in ${timeoutMs} ms (${events.length} events)`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
      });
    },
    close: () => controller.abort(),
  };
}
