/**
 * Shared data files on Node and Deno (both provide node:fs): read from `../shared/data` beside the
 * repository when it is there, else from `$XDG_CACHE_HOME/mesh/data` (or `~/.cache/mesh/data`),
 * downloaded there once from the pinned upstream. The browser's twin is `host-browser/shared-data.ts`;
 * `#shared-data` (package.json `imports`) picks the one for the runtime. The rules are in
 * `core/data/shared-data.ts`.
 *
 *   const csv = await loadSharedData('epa-frs/frs-naics-32591.csv');
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPinned, SHARED_FILES, type SharedDataPlaces, type SharedFiles } from '../core/data/shared-data.ts';

export { SHARED_FILES, SharedDataError, type SharedFile, type SharedFiles } from '../core/data/shared-data.ts';

export interface SharedDataOptions {
  /** The shared data folder; default `../shared/data` beside the repository. */
  readonly root?: string;
  /** The download cache; default `$XDG_CACHE_HOME/mesh/data`, else `~/.cache/mesh/data`. */
  readonly cacheDir?: string;
  /** The files and their upstreams; default the project's table (tests pass their own). */
  readonly files?: SharedFiles;
}

/** `../shared/data` beside the repository this file is in. */
export const DEFAULT_SHARED_ROOT: string = fileURLToPath(new URL('../../shared/data/', import.meta.url));

function defaultCacheDir(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'mesh', 'data');
}

async function readIfThere(path: string): Promise<Uint8Array | undefined> {
  try {
    return new Uint8Array(await readFile(path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function download(url: string): Promise<Uint8Array> {
  const response = await fetch(url);
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`HTTP ${response.status}`);
  }
  return new Uint8Array(await response.arrayBuffer());
}

function places(root: string, cacheDir: () => string): SharedDataPlaces {
  return {
    shared: root,
    get cache() {
      return cacheDir();
    },
    readShared: (name) => readIfThere(join(root, name)),
    readCache: (name) => readIfThere(join(cacheDir(), name)),
    async writeCache(name, bytes) {
      const path = join(cacheDir(), name);
      await mkdir(dirname(path), { recursive: true });
      // Written beside, then renamed: a reader never sees half a file.
      const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
      await writeFile(temporary, bytes);
      await rename(temporary, path);
    },
    removeCache: (name) => rm(join(cacheDir(), name), { force: true }),
    download,
  };
}

/** The bytes of a shared data file (its path under `shared/data`), SHA-256 checked. */
export function loadSharedData(name: string, options: SharedDataOptions = {}): Promise<Uint8Array> {
  // The cache directory is worked out only when needed: on Deno, reading the environment needs a permission.
  const cacheDir = (): string => options.cacheDir ?? defaultCacheDir();
  return loadPinned(name, options.files ?? SHARED_FILES, places(options.root ?? DEFAULT_SHARED_ROOT, cacheDir));
}
