/**
 * The directory on Node: `node:http` in front of the fetch-style router, streaming both ways
 * (request bodies reach the router as streams, so the body limit holds before anything is
 * buffered; responses are written from their body's reader with backpressure, and a client that
 * goes away cancels the export), and the `mesh directory` command around it.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { open } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import type { DataSource, Sha256Hasher } from '../http/data-source.ts';
import { clientKeyOf } from '../http/rate-limit.ts';
import { ensureDefaultDataset } from '../import/default-dataset.ts';
import { type ClientInfo, createDirectory } from '../router.ts';
import { FileSubmissionStore } from '../submissions/file-store.ts';
import { command, entry } from '../../host-node/cli/command.ts';
import { origin, SERVE_DESCRIPTION, SERVE_NOTES, serveConfig, type ServeOptions, serveOptions } from './options.ts';

/** A fetch-style handler, as `createDirectory` returns. */
export type FetchHandler = (request: Request, client: ClientInfo) => Promise<Response>;

export interface NodeServer {
  /** `http://HOST:PORT` as bound (the real port when 0 was asked for). */
  readonly url: string;
  /** Stops accepting, lets requests in flight finish (up to `graceMs`), then closes what is left. */
  close(graceMs?: number): Promise<void>;
}

/** Where submissions go when `--submissions` is not given. */
export const DEFAULT_SUBMISSIONS_DIR = join(homedir(), '.mesh', 'directory', 'submissions');

/**
 * A data source reading a dataset file. Opening first makes a missing file fail at once, not
 * mid-stream. Reads of 1 MiB rather than the default 64 KiB: a million records load a second faster.
 */
export function fileDataSource(path: string): DataSource {
  return async () => {
    const handle = await open(path, 'r');
    return Readable.toWeb(handle.createReadStream({ highWaterMark: 1 << 20 })) as ReadableStream<Uint8Array>;
  };
}

/** node:crypto's SHA-256 as the directory's hasher for its ETag (several times the WebAssembly one's speed). */
export function nodeSha256(): Sha256Hasher {
  const hash = createHash('sha256');
  return {
    update: (data) => {
      hash.update(data);
    },
    digest: () => new Uint8Array(hash.digest()),
  };
}

function toRequest(req: IncomingMessage, fallbackOrigin: string, signal: AbortSignal): Request {
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  let url: URL;
  try {
    // The Host header makes absolute URLs (a receipt's status_url) point where the client connected.
    url = new URL(req.url ?? '/', req.headers.host ? `http://${req.headers.host}` : fallbackOrigin);
  } catch {
    url = new URL(req.url ?? '/', fallbackOrigin);
  }
  const method = req.method ?? 'GET';
  // GET and HEAD carry no body: no stream is made for them (most requests).
  if (method === 'GET' || method === 'HEAD') return new Request(url, { method, headers, signal });
  return new Request(url, {
    method,
    headers,
    signal,
    body: Readable.toWeb(req) as ReadableStream<Uint8Array>,
    duplex: 'half',
  } as RequestInit);
}

/** Resolves true once `res` can take more, false if the client went away first. */
function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = (): void => done(true);
    const onClose = (): void => done(false);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

/**
 * Writes `response` to `res` straight from its body's reader, without converting web streams to
 * Node streams (that conversion and its pipeline cost more than the rest of a search). A body that
 * arrives in one chunk (every answer but the export) is written with one `end`, which also gives it a
 * Content-Length; a longer one is written chunk by chunk, waiting for `drain`, and cancelled if the
 * client goes away.
 */
async function send(res: ServerResponse, response: Response): Promise<void> {
  const head: string[] = [];
  response.headers.forEach((value, name) => {
    head.push(name, value);
  });
  if (response.body === null) {
    res.writeHead(response.status, head).end();
    return;
  }
  const reader = response.body.getReader();
  const first = await reader.read();
  const second = first.done ? first : await reader.read();
  if (second.done) {
    // Node sends a body after an explicit writeHead in chunks unless told its length.
    if (first.value !== undefined && !response.headers.has('content-length')) head.push('content-length', String(first.value.length));
    res.writeHead(response.status, head).end(first.value);
    return;
  }
  res.writeHead(response.status, head);
  let chunk: Uint8Array = first.value!;
  let next: ReadableStreamReadResult<Uint8Array> = second;
  for (;;) {
    if (res.destroyed || (!res.write(chunk) && !(await drained(res)))) {
      // The client went away: stop producing the rest.
      await reader.cancel().catch(() => {});
      return;
    }
    if (next.done) break;
    chunk = next.value;
    next = await reader.read();
  }
  res.end();
}

/** Serves `handler` on `host:port`; resolves once listening. */
export function serveNode(handler: FetchHandler, host: string, port: number): Promise<NodeServer> {
  let base = origin(host, port);
  const server = createServer((req, res) => {
    const abort = new AbortController();
    // Aborted only for a client that leaves before its answer is written: an AbortError is costly
    // to make, and every finished response also ends with 'close'.
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    let request: Request;
    try {
      request = toRequest(req, base, abort.signal);
    } catch {
      res.statusCode = 400;
      res.end();
      return;
    }
    handler(request, { clientKey: clientKeyOf(req.socket.remoteAddress) })
      .then((response) => send(res, response))
      .catch((error: unknown) => {
        if (res.headersSent) {
          // A body that fails half-way must not look complete: cut the connection.
          res.destroy(error as Error);
          return;
        }
        res.statusCode = 500;
        res.end();
      });
  });
  return new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      const bound = typeof address === 'object' && address !== null ? address.port : port;
      base = origin(host, bound);
      resolvePromise({
        url: base,
        close: (graceMs = 5000) =>
          new Promise<void>((done) => {
            const timer = setTimeout(() => server.closeAllConnections(), graceMs);
            server.close(() => {
              clearTimeout(timer);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}

const importEntry = entry('import', "build the directory's dataset from the public sources", async () => (await import('../import/cli.ts')).importCommand);

/** `mesh directory [options]` (and `mesh directory import`): serves until SIGINT or SIGTERM. */
export const directoryCommand = command({
  description: SERVE_DESCRIPTION,
  options: serveOptions('~/.mesh/directory/submissions'),
  notes: SERVE_NOTES,
  commands: [importEntry],
  run: ({ options }) => runDirectory(serveConfig(options)),
});

async function runDirectory(options: ServeOptions): Promise<number> {
  let dataPath: string;
  try {
    dataPath = options.data ? resolve(options.data) : await ensureDefaultDataset((line) => process.stderr.write(`mesh directory: ${line}\n`));
  } catch (error) {
    process.stderr.write(`mesh directory: ${(error as Error).message}\n`);
    return 1;
  }
  const store = await FileSubmissionStore.open(options.submissions ? resolve(options.submissions) : DEFAULT_SUBMISSIONS_DIR);
  const directory = createDirectory({
    data: fileDataSource(dataPath),
    sha256: nodeSha256,
    submissions: store,
    limits: { rateLimit: { perSecond: options.rateLimit, burst: options.burst } },
    onError: (error) => process.stderr.write(`directory: ${(error as Error)?.message ?? String(error)}\n`),
  });
  // Load before listening, so the first requests do not wait and start-up time includes the load.
  const records = await directory.ready();
  let server: NodeServer;
  try {
    server = await serveNode(directory.fetch, options.host, options.port);
  } catch (error) {
    process.stderr.write(`mesh directory: cannot listen on ${origin(options.host, options.port)}: ${(error as Error).message}\n`);
    await store.close();
    return 1;
  }
  process.stdout.write(`directory listening on ${server.url}\n`);
  process.stdout.write(
    records === null
      ? `dataset ${dataPath} unavailable: data routes answer 503 and the load is retried\n`
      : `dataset ${dataPath}: ${records} records\n`,
  );
  await new Promise<void>((done) => {
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
  await directory.close();
  await server.close();
  await store.close();
  return 0;
}
