/**
 * The directory on Node: `node:http` in front of the fetch-style router, streaming both ways
 * (request bodies reach the router as streams, so the body limit holds before anything is
 * buffered; responses are piped with backpressure, and a client that goes away cancels the
 * export), and the `mesh directory` command around it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { open } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { DEFAULT_DATASET_URL } from '../dataset.ts';
import type { DataSource } from '../http/data-source.ts';
import { clientKeyOf } from '../http/rate-limit.ts';
import { type ClientInfo, createDirectory } from '../router.ts';
import { FileSubmissionStore } from '../submissions/file-store.ts';
import { origin, parseServeArgs, serveUsage } from './options.ts';

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

/** A data source reading a dataset file. Opening first makes a missing file fail at once, not mid-stream. */
export function fileDataSource(path: string): DataSource {
  return async () => {
    const handle = await open(path, 'r');
    return Readable.toWeb(handle.createReadStream()) as ReadableStream<Uint8Array>;
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
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(url, {
    method,
    headers,
    signal,
    ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
  } as RequestInit);
}

async function send(res: ServerResponse, response: Response): Promise<void> {
  res.statusCode = response.status;
  for (const [name, value] of response.headers) res.setHeader(name, value);
  if (response.body === null) {
    res.end();
    return;
  }
  try {
    await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>), res);
  } catch {
    // The client went away mid-body; pipeline has already cancelled the response stream.
  }
}

/** Serves `handler` on `host:port`; resolves once listening. */
export function serveNode(handler: FetchHandler, host: string, port: number): Promise<NodeServer> {
  let base = origin(host, port);
  const server = createServer((req, res) => {
    const abort = new AbortController();
    res.on('close', () => abort.abort());
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
      .catch(() => {
        if (!res.headersSent) res.statusCode = 500;
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

/** `mesh directory [options]`: serves until SIGINT or SIGTERM; resolves to the exit code. */
export async function runDirectoryCommand(args: string[]): Promise<number> {
  const usage = serveUsage('mesh directory', '~/.mesh/directory/submissions');
  let options;
  try {
    options = parseServeArgs(args);
  } catch (error) {
    process.stderr.write(`mesh directory: ${(error as Error).message}\n\n${usage}`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(`${usage}\nmesh directory import --help: build the dataset from the public sources.\n`);
    return 0;
  }
  const dataPath = options.data ? resolve(options.data) : fileURLToPath(DEFAULT_DATASET_URL);
  const store = await FileSubmissionStore.open(options.submissions ? resolve(options.submissions) : DEFAULT_SUBMISSIONS_DIR);
  const directory = createDirectory({
    data: fileDataSource(dataPath),
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
