/**
 * The directory on Node: the `mesh directory` command, serving the fetch-style router with the
 * project's one node:http adapter (host-node/http-server.ts), a dataset file as its data source, its
 * prebuilt index beside it (index-cache.ts) and node:crypto for its ETag.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { type HttpServer, serveFetch } from '../../host-node/http-server.ts';
import { importHint } from '../http/problem.ts';
import { createDirectory } from '../router.ts';
import { defaultDatasetPath } from './dataset-path.ts';
import { fileIndexCache } from './index-cache.ts';
import { fileDataSource, nodeSha256 } from './node-data.ts';
import { restartWithDirectoryYoungGeneration } from './young-generation.ts';
import { FileSubmissionStore } from '../submissions/file-store.ts';
import { command, entry } from '../../host-node/cli/command.ts';
import { stopSignal } from '../../host-node/cli/stop-signal.ts';
import { origin, SERVE_DESCRIPTION, SERVE_NOTES, serveConfig, type ServeOptions, serveOptions } from './options.ts';

/** Where submissions go when `--submissions` is not given. */
export const DEFAULT_SUBMISSIONS_DIR = join(homedir(), '.mesh', 'directory', 'submissions');

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
  // Before anything is opened: the process may be replaced by one with a smaller young generation.
  restartWithDirectoryYoungGeneration();
  const stopped = stopSignal();
  const dataPath = options.data ? resolve(options.data) : defaultDatasetPath();
  const store = await FileSubmissionStore.open(options.submissions ? resolve(options.submissions) : DEFAULT_SUBMISSIONS_DIR);
  const directory = createDirectory({
    data: fileDataSource(dataPath),
    sha256: nodeSha256,
    indexCache: fileIndexCache(dataPath),
    submissions: store,
    limits: { rateLimit: { perSecond: options.rateLimit, burst: options.burst } },
    trustProxy: options.trustProxy,
    onError: (error) => process.stderr.write(`directory: ${(error as Error)?.message ?? String(error)}\n`),
  });
  // Load before listening, so the first requests do not wait and start-up time includes the load.
  const records = await directory.ready();
  let server: HttpServer;
  try {
    server = await serveFetch(directory.fetch, options.host, options.port);
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
  await stopped;
  await directory.close();
  await server.close();
  await store.close();
  return 0;
}
