/**
 * The directory on Node: the `mesh directory` command, serving the fetch-style router with the
 * project's one node:http adapter (host-node/http-server.ts), a dataset file as its data source, its
 * prebuilt index beside it (index-cache.ts) and node:crypto for its ETag.
 */
import { stat } from 'node:fs/promises';
import { availableParallelism, homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { command, entry, option } from '../../host-node/cli/command.ts';
import { stopSignal } from '../../host-node/cli/stop-signal.ts';
import { integer } from '../../host-node/cli/values.ts';
import { connectionCounts, threadBalance } from '../../host-node/connection-balance.ts';
import { type HttpServer, serveFetch } from '../../host-node/http-server.ts';
import { isSharedStore } from '../bitset-simd.ts';
import { importHint } from '../http/problem.ts';
import { bucketMemory } from '../http/rate-limit.ts';
import { createDirectory, type Directory } from '../router.ts';
import { FileSubmissionStore } from '../submissions/file-store.ts';
import { defaultDatasetPath } from './dataset-path.ts';
import { restartWithDirectoryHeapSizes } from './heap-size.ts';
import { fileIndexCache, indexPathOf } from './index-cache.ts';
import { fileDataSource, nodeSha256, reportOnStderr } from './node-data.ts';
import { origin, SERVE_DESCRIPTION, SERVE_NOTES, type ServeOptions, serveConfig, serveOptions } from './options.ts';
import { type ServingThreads, startThreads, threadsCanShareAPort } from './threads.ts';

/** Where submissions go when `--submissions` is not given. */
export const DEFAULT_SUBMISSIONS_DIR = join(homedir(), '.mesh', 'directory', 'submissions');

const importEntry = entry('import', "build the directory's dataset from the public sources", async () => (await import('../import/cli.ts')).importCommand);

/** `mesh directory [options]` (and `mesh directory import`): serves until SIGINT or SIGTERM. */
export const directoryCommand = command({
  description: SERVE_DESCRIPTION,
  options: {
    ...serveOptions('~/.mesh/directory/submissions'),
    threads: option({
      value: 'N',
      description: 'threads that serve, each on its own socket of the port (one copy of the index between them)',
      parse: integer(1, 256),
      default: threadsCanShareAPort(process.platform) ? availableParallelism() : 1,
      shown: threadsCanShareAPort(process.platform) ? 'one per core' : '1: this platform has no SO_REUSEPORT',
    }),
  },
  notes: SERVE_NOTES,
  commands: [importEntry],
  run: ({ options }) => runDirectory({ ...serveConfig(options), threads: options.threads }),
});

// How often a server whose dataset was unavailable at start tries it again, to spread over its threads.
const LOAD_RETRY_MS = 1000;

async function runDirectory(asked: ServeOptions & { threads: number }): Promise<number> {
  // Before anything is opened: the process may be replaced by one with the directory's heap sizes.
  restartWithDirectoryHeapSizes();
  const options = { ...asked, threads: threadsOn(process.platform, asked.threads) };
  let stopping = false;
  const stopped = stopSignal().then(() => {
    stopping = true;
  });
  const dataPath = options.data ? resolve(options.data) : defaultDatasetPath();
  const submissions = options.submissions ? resolve(options.submissions) : DEFAULT_SUBMISSIONS_DIR;
  const store = await FileSubmissionStore.open(submissions);
  const rateLimitMemory = bucketMemory();
  const connections = connectionCounts(options.threads);
  const onError = reportOnStderr;
  const open = (): Directory =>
    createDirectory({
      data: fileDataSource(dataPath),
      sha256: nodeSha256,
      indexCache: fileIndexCache(dataPath),
      submissions: store,
      limits: { rateLimit: { perSecond: options.rateLimit, burst: options.burst, memory: rateLimitMemory } },
      trustProxy: options.trustProxy,
      onError,
    });
  let directory = open();
  // Load before listening, so the first requests do not wait and start-up time includes the load.
  const startedAt = Date.now();
  const records = await directory.ready();
  let server: HttpServer;
  try {
    server = await serveFetch((request, client) => directory.fetch(request, client), options.host, options.port, {
      reusePort: options.threads > 1,
      balance: threadBalance(connections, 0),
    });
  } catch (error) {
    process.stderr.write(`mesh directory: cannot listen on ${origin(options.host, options.port)}: ${(error as Error).message}\n`);
    await store.close();
    return 1;
  }
  process.stdout.write(`directory listening on ${server.url}\n`);
  process.stdout.write(
    records === null
      ? `dataset ${dataPath} unavailable: data routes answer 503 and the load is retried. ${importHint(dataPath)}\n`
      : `dataset ${dataPath}: ${records} records\n`,
  );

  /** Once the dataset is loaded from its index file, the other threads start serving it too. */
  async function spread(): Promise<ServingThreads | undefined> {
    while ((await directory.ready()) === null) {
      if (stopping) return undefined;
      await new Promise((done) => setTimeout(done, LOAD_RETRY_MS));
    }
    if (directory.sharedIndex() === undefined && (await writtenSince(indexPathOf(dataPath), startedAt))) {
      // Built from the dataset, and its index file written: serve that instead, one copy for all threads.
      const fromFile = open();
      if ((await fromFile.ready()) !== null) {
        const built = directory;
        directory = fromFile;
        await built.close();
      }
    }
    const index = directory.sharedIndex();
    if (stopping) return undefined;
    if (!(index?.file.buffer instanceof SharedArrayBuffer && isSharedStore(index.bitsets))) {
      // Said, not silent: the user asked for more threads.
      onError(
        new Error(
          `serving on 1 thread, not ${options.threads}: the index was built from the dataset and its file ${indexPathOf(dataPath)} could not be written and read back, so there is no copy of it to share`,
        ),
      );
      return undefined;
    }
    const { port } = new URL(server.url);
    const threads = await startThreads(
      options.threads - 1,
      {
        host: options.host,
        port: Number(port),
        index,
        rateLimitMemory,
        rateLimit: options.rateLimit,
        burst: options.burst,
        trustProxy: options.trustProxy,
        submissions,
        connections,
      },
      onError,
    );
    process.stdout.write(`serving on ${threads.count + 1} threads\n`);
    return threads;
  }

  // A thread that cannot be made (spread rejects) leaves the main thread serving alone, said on stderr.
  const threads = options.threads > 1 ? spread().catch((error: unknown) => void onError(error)) : Promise.resolve(undefined);
  await stopped;
  await (await threads)?.close();
  await directory.close();
  await server.close();
  await store.close();
  return 0;
}

/** The threads asked for, or one where sockets cannot share a port (said on stderr). */
function threadsOn(platform: string, asked: number): number {
  if (asked === 1 || threadsCanShareAPort(platform)) return asked;
  process.stderr.write(`directory: serving on 1 thread, not ${asked}: sockets cannot share a port (SO_REUSEPORT) on ${platform}\n`);
  return 1;
}

/** True when the file at `path` exists and was written at or after `since` (ms since the epoch). */
async function writtenSince(path: string, since: number): Promise<boolean> {
  try {
    return (await stat(path)).mtimeMs >= since - 1000;
  } catch {
    return false;
  }
}
