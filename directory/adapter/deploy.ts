/**
 * The directory on Deno Deploy, and under `deno serve` anywhere: the module's default export is
 * the `{ fetch }` handler `deno serve` and Deploy call. It needs only what Deploy grants and
 * writes no file:
 *
 * - the dataset is fetched from the URL in the environment variable `DIRECTORY_DATA_URL` (an
 *   https URL of a dataset file: an object store, a release asset, another directory's
 *   /directory.json; a file: URL where file reads are allowed), streamed and indexed as it
 *   arrives, or the dataset's index file (`directory.json.index`, index-file.ts), read whole with no
 *   indexing; without it every read is the 503 that says how to get a dataset;
 * - submissions go to Deno KV, `Deno.openKv()` with no path: on Deploy the project's own KV.
 *
 *   DIRECTORY_DATA_URL=https://… deno serve --allow-net --allow-env=DIRECTORY_DATA_URL --unstable-kv directory/adapter/deploy.ts
 *
 * The client address is the connection's (Deploy reports the client's own); the rate limit and
 * everything else are `mesh directory`'s defaults. Deploy steps: docs/directory.md.
 */
import type { DataSource } from '../http/data-source.ts';
import { importHint } from '../http/problem.ts';
import { createDirectory } from '../router.ts';
import { KvSubmissionStore } from '../submissions/kv-store.ts';

/** The environment variable naming the dataset's URL. */
export const DATA_URL_VARIABLE = 'DIRECTORY_DATA_URL';

interface DenoEnv {
  env: { get(name: string): string | undefined };
}

/** A data source fetching the dataset from `url`: a failed or refused answer is the 503 path, retried later. */
export function urlDataSource(url: string | undefined): DataSource {
  return async () => {
    if (!url) throw new Error(`${DATA_URL_VARIABLE} is not set. ${importHint()}`);
    const response = await fetch(url);
    if (!response.ok || response.body === null) {
      await response.body?.cancel();
      throw new Error(`the dataset at ${url} answered HTTP ${response.status}`);
    }
    return response.body;
  };
}

const deno = (globalThis as unknown as { Deno: DenoEnv }).Deno;
const directory = createDirectory({
  data: urlDataSource(deno.env.get(DATA_URL_VARIABLE)),
  submissions: await KvSubmissionStore.open(),
  onError: (error) => console.error(`directory: ${(error as Error)?.message ?? String(error)}`),
});

export default {
  fetch: (request: Request, info: { remoteAddr: { hostname: string } }): Promise<Response> =>
    directory.fetch(request, { remoteAddress: info.remoteAddr.hostname }),
};
