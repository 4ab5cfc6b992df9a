/**
 * A benchmark's peer process: a script that answers JSON requests a line on stdin, `{id, op, ...}`,
 * with `{id, ok: value}` or `{id, error}` on stdout, after a first unasked line `{ready: {node_id,
 * addr}}` (bench/tunnel/peer.ts, bench/punch/peer.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

/** What a peer process answers: an op's name to what does it. */
export type PeerOps = Record<string, (request: Record<string, unknown>) => Promise<unknown>>;

/** A peer process and the requests it takes. */
export interface Peer {
  readonly nodeId: string;
  readonly addr: string;
  readonly pid: number;
  /** What the process wrote to stderr (its log). */
  log(): string;
  call<T = unknown>(op: string, args?: Record<string, unknown>): Promise<T>;
  stop(): Promise<void>;
}

export interface PeerProcessOptions {
  readonly script: string;
  /** Arguments for Node before the script (a CPU profile). */
  readonly nodeArgs?: readonly string[];
  /** Arguments after the script. */
  readonly args?: readonly string[];
  /** A command the process runs under: `['ip', 'netns', 'exec', NS]` runs it in a namespace. */
  readonly wrap?: readonly string[];
}

/** Starts a peer process; resolves once it said it is ready. */
export async function startPeerProcess(options: PeerProcessOptions): Promise<Peer> {
  const [command, ...prefix] = [...(options.wrap ?? []), process.execPath];
  const child: ChildProcess = spawn(command!, [...prefix, ...(options.nodeArgs ?? []), options.script, ...(options.args ?? [])], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let ready: (info: { node_id: string; addr: string }) => void = () => {};
  const started = new Promise<{ node_id: string; addr: string }>((resolve, reject) => {
    ready = resolve;
    child.once('exit', (code) => reject(new Error(`the peer exited with ${code}\n${stderr}`)));
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as { ready?: { node_id: string; addr: string }; id?: number; ok?: unknown; error?: string };
    if (message.ready) return ready(message.ready);
    const pending = waiting.get(message.id!);
    waiting.delete(message.id!);
    if (message.error !== undefined) pending?.reject(new Error(message.error));
    else pending?.resolve(message.ok);
  });
  const info = await started;
  let next = 0;
  const call = <T>(op: string, args: Record<string, unknown> = {}): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      child.stdin!.write(`${JSON.stringify({ id, op, ...args })}\n`);
    });
  return {
    nodeId: info.node_id,
    addr: info.addr,
    pid: child.pid!,
    log: () => stderr,
    call,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      await call('stop').catch(() => {});
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** In the peer process: says it is ready, then answers each request line on stdin with its op. */
export async function answerRequests(ready: { readonly node_id: string; readonly addr: string }, ops: PeerOps): Promise<void> {
  const out = (value: unknown): void => void process.stdout.write(`${JSON.stringify(value)}\n`);
  out({ ready });
  for await (const line of createInterface({ input: process.stdin })) {
    const request = JSON.parse(line) as { id: number; op: string } & Record<string, unknown>;
    const op = ops[request.op];
    void (op === undefined ? Promise.reject(new Error(`no op ${request.op}`)) : op(request)).then(
      (ok) => out({ id: request.id, ok: ok ?? null }),
      (error: unknown) => out({ id: request.id, error: error instanceof Error ? error.message : String(error) }),
    );
  }
}
