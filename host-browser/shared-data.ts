/**
 * Shared data files in a browser: read from `/shared-data/` on the page's origin (the test server
 * serves `../shared/data` there, see web-test-runner.config.js), else from Cache Storage,
 * downloaded there once from the pinned upstream. Same API as `host-node/shared-data.ts`;
 * `#shared-data` (package.json `imports`) picks this file for the browser.
 */
import { loadPinned, SHARED_FILES, type SharedDataPlaces, type SharedFiles } from '../core/data/shared-data.ts';

export { SHARED_FILES, SharedDataError, type SharedFile, type SharedFiles } from '../core/data/shared-data.ts';

export interface SharedDataOptions {
  /** URL of the shared data folder; default `/shared-data/` on the page's origin. */
  readonly root?: string;
  /** Name of the Cache Storage cache for downloads; default `mesh-data`. */
  readonly cacheDir?: string;
  /** The files and their upstreams; default the project's table (tests pass their own). */
  readonly files?: SharedFiles;
}

/** A file's bytes from `url`, or undefined when the server has no such file. */
async function fetchIfThere(url: URL): Promise<Uint8Array | undefined> {
  const response = await fetch(url);
  if (response.status === 404) {
    await response.body?.cancel();
    return undefined;
  }
  if (!response.ok) throw new Error(`${url.href}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function download(url: string): Promise<Uint8Array> {
  const bytes = await fetchIfThere(new URL(url));
  if (bytes === undefined) throw new Error('HTTP 404');
  return bytes;
}

function places(root: URL, cacheName: string): SharedDataPlaces {
  // Cache entries are keyed by a URL of their own, so a copy is found by name whatever its upstream.
  const key = (name: string): string => new URL(name, 'https://mesh.invalid/shared-data/').href;
  return {
    shared: root.href,
    cache: `Cache Storage "${cacheName}"`,
    readShared: (name) => fetchIfThere(new URL(name, root)),
    async readCache(name) {
      const hit = await (await caches.open(cacheName)).match(key(name));
      return hit === undefined ? undefined : new Uint8Array(await hit.arrayBuffer());
    },
    async writeCache(name, bytes) {
      await (await caches.open(cacheName)).put(key(name), new Response(bytes as Uint8Array<ArrayBuffer>));
    },
    async removeCache(name) {
      await (await caches.open(cacheName)).delete(key(name));
    },
    download,
  };
}

/** The bytes of a shared data file (its path under `shared/data`), SHA-256 checked. */
export function loadSharedData(name: string, options: SharedDataOptions = {}): Promise<Uint8Array> {
  const root = new URL(options.root ?? '/shared-data/', globalThis.location.href);
  return loadPinned(name, options.files ?? SHARED_FILES, places(root, options.cacheDir ?? 'mesh-data'));
}
