/**
 * The directory on Deno: `Deno.serve` in front of the same fetch-style router the Node adapter
 * serves, submissions in Deno KV, the dataset read from a file. `deno.ts` is the entry that calls
 * this; tests import it to serve on a free port.
 *
 * Only the few `Deno` members used here are typed (below), so the file also type-checks under tsc.
 */

import { type Command, command, EXIT } from '../../host-node/cli/command.ts';
import type { DataSource, IndexCache } from '../http/data-source.ts';
import { importHint } from '../http/problem.ts';
import { type ClientInfo, createDirectory } from '../router.ts';
import { KvSubmissionStore } from '../submissions/kv-store.ts';
import { origin, SERVE_DESCRIPTION, SERVE_NOTES, type ServeOptionDefinitions, type ServeOptions, serveConfig, serveOptions } from './options.ts';

interface DenoHttpServer {
  readonly finished: Promise<void>;
  shutdown(): Promise<void>;
}

interface DenoApi {
  serve(
    options: { hostname: string; port: number; onListen(addr: { hostname: string; port: number }): void },
    handler: (request: Request, info: { remoteAddr: { hostname: string } }) => Promise<Response>,
  ): DenoHttpServer;
  open(path: string | URL, options: { read: true }): Promise<{ readable: ReadableStream<Uint8Array> }>;
  open(path: string, options: { write: true; createNew: true; mode: number }): Promise<DenoFile>;
  readFile(path: string): Promise<Uint8Array>;
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
  readonly errors: { readonly NotFound: new () => Error };
  addSignalListener(signal: 'SIGINT' | 'SIGTERM', listener: () => void): void;
}

function deno(): DenoApi {
  const api = (globalThis as unknown as { Deno?: DenoApi }).Deno;
  if (!api) throw new TypeError('the Deno adapter runs on Deno only');
  return api;
}

interface DenoFile {
  write(bytes: Uint8Array): Promise<number>;
  sync(): Promise<void>;
  close(): void;
}

/** A fetch-style handler, as `createDirectory` returns. */
export type FetchHandler = (request: Request, client: ClientInfo) => Promise<Response>;

export interface DenoServer {
  /** `http://HOST:PORT` as bound. */
  readonly url: string;
  /** Stops accepting and waits for requests in flight. */
  close(): Promise<void>;
}

/** A data source reading a dataset file. */
export function denoFileSource(path: string | URL): DataSource {
  return async () => (await deno().open(path, { read: true })).readable;
}

/**
 * The dataset's prebuilt index on Deno: the file `<dataset>.index` beside it, as on Node
 * (adapter/index-cache.ts), written to a temporary name, flushed and renamed into place.
 */
export function denoIndexCache(datasetPath: string): IndexCache {
  const path = `${datasetPath}.index`;
  return {
    read: async () => {
      try {
        return await deno().readFile(path);
      } catch (error) {
        if (error instanceof deno().errors.NotFound) return undefined;
        throw error;
      }
    },
    write: async (chunks) => {
      const temporary = `${path}.${crypto.randomUUID()}.tmp`;
      const file = await deno().open(temporary, { write: true, createNew: true, mode: 0o666 });
      try {
        try {
          for (const chunk of chunks) for (let at = 0; at < chunk.length; ) at += await file.write(chunk.subarray(at));
          await file.sync();
        } finally {
          file.close();
        }
        await deno().rename(temporary, path);
      } catch (error) {
        await deno()
          .remove(temporary)
          .catch(() => {});
        throw error;
      }
    },
  };
}

/** Serves `handler` with Deno.serve on `host:port` (0: a free port); resolves once listening. */
export function serveDeno(handler: FetchHandler, host: string, port: number): Promise<DenoServer> {
  return new Promise((resolve) => {
    const server = deno().serve(
      {
        hostname: host,
        port,
        onListen: (addr) => resolve({ url: origin(addr.hostname, addr.port), close: () => server.shutdown() }),
      },
      (request, info) => handler(request, { remoteAddress: info.remoteAddr.hostname }),
    );
  });
}

/** A running directory: its server, and everything to close with it. */
export interface DenoDirectory {
  readonly url: string;
  readonly records: number | null;
  close(): Promise<void>;
}

/** Starts the directory from parsed options and the dataset file to serve: KV store, router, server. */
export async function startDenoDirectory(options: ServeOptions, data: string, onError: (error: unknown) => void): Promise<DenoDirectory> {
  const store = await KvSubmissionStore.open(options.submissions);
  const directory = createDirectory({
    data: denoFileSource(data),
    indexCache: denoIndexCache(data),
    submissions: store,
    limits: { rateLimit: { perSecond: options.rateLimit, burst: options.burst } },
    trustProxy: options.trustProxy,
    onError,
  });
  const records = await directory.ready();
  const server = await serveDeno(directory.fetch, options.host, options.port);
  return {
    url: server.url,
    records,
    async close(): Promise<void> {
      await directory.close();
      await server.close();
      await store.close();
    },
  };
}

/**
 * `deno task directory [options]`: the same flags as `mesh directory`; `--submissions` names a
 * Deno KV file (default: Deno's default KV, the project's KV on Deno Deploy). Without `--data`,
 * `defaultDataset()` names the dataset file (deno.ts passes `~/.mesh/directory/directory.json`,
 * which needs a permission this module does without); while it is missing the routes answer 503
 * and the command prints how to import one. Its run resolves to the exit code once stopped by
 * SIGINT or SIGTERM. deno.ts parses the command line against it.
 */
export function denoDirectoryCommand(defaultDataset: () => string): Command<ServeOptionDefinitions> {
  return command({
    description: SERVE_DESCRIPTION,
    options: serveOptions("Deno's default KV database"),
    notes: SERVE_NOTES,
    run: async ({ options }, io) => {
      const config = serveConfig(options);
      const data = config.data ?? defaultDataset();
      const running = await startDenoDirectory(config, data, (error) => io.err(`directory: ${(error as Error)?.message ?? String(error)}\n`));
      io.out(`directory listening on ${running.url}\n`);
      io.out(
        running.records === null
          ? `dataset ${data} unavailable: data routes answer 503 and the load is retried. ${importHint(data)}\n`
          : `dataset: ${running.records} records\n`,
      );
      await new Promise<void>((done) => {
        try {
          deno().addSignalListener('SIGINT', done);
          deno().addSignalListener('SIGTERM', done);
        } catch {
          // No signals where the platform runs the process (Deno Deploy): serve until stopped.
        }
      });
      await running.close();
      return EXIT.done;
    },
  });
}
