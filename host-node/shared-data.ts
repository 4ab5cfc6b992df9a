/**
 * Shared data files on Node and Deno (both provide node:fs): read from `../shared/data` beside the
 * repository when it is there, else from `$XDG_CACHE_HOME/mesh/data` (or `~/.cache/mesh/data`),
 * downloaded there once from the pinned upstream. The browser's twin is `host-browser/shared-data.ts`;
 * `#shared-data` (package.json `imports`) picks the one for the runtime. The rules are in
 * `core/data/shared-data.ts`.
 *
 *   const csv = await loadSharedData('epa-frs/frs-naics-32591.csv');
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPinned, SHARED_FILES, type SharedDataPlaces, type SharedFiles } from '../core/data/shared-data.ts';
import { writeAtomically } from './atomic-file.ts';

export { SHARED_FILES, SharedDataError, type SharedFile, type SharedFiles } from '../core/data/shared-data.ts';

export interface SharedDataOptions {
  /** The shared data folder; default `../shared/data` beside the repository. */
  readonly root?: string;
  /** The download cache; default `$XDG_CACHE_HOME/mesh/data`, else `~/.cache/mesh/data`. */
  readonly cacheDir?: string;
  /** The files and their upstreams; default the project's table (tests pass their own). */
  readonly files?: SharedFiles;
  /** How long a download may take in all before it is given up; default 120 s. */
  readonly downloadTimeoutMs?: number;
  /** The most bytes a download may bring; default 64 MiB (the largest file is a few MiB). */
  readonly maxDownloadBytes?: number;
}

const DOWNLOAD_TIMEOUT_MS = 120_000;
const MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024;

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

/**
 * The upstream's bytes, within `timeoutMs` in all and at most `maxBytes`: a stalled or endless
 * upstream fails the load with a reason instead of hanging the first start forever.
 */
async function download(url: string, timeoutMs: number, maxBytes: number): Promise<Uint8Array> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const response = await fetch(url, { signal: controller.signal });
    if (!response.ok || response.body === null) {
      await response.body?.cancel();
      throw new Error(`HTTP ${response.status}`);
    }
    const tooMany = (): Error => new Error(`the upstream sends more than ${maxBytes} bytes`);
    if (Number(response.headers.get('content-length')) > maxBytes) {
      await response.body.cancel();
      throw tooMany();
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += chunk.length;
      // Leaving the loop cancels the body.
      if (size > maxBytes) throw tooMany();
      chunks.push(chunk);
    }
    return new Uint8Array(await new Blob(chunks as BlobPart[]).arrayBuffer());
  } catch (error) {
    if (controller.signal.aborted) throw new Error(`no complete answer within ${timeoutMs / 1000} s`);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

function places(root: string, cacheDir: () => string, options: SharedDataOptions): SharedDataPlaces {
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
      await writeAtomically(path, (file) => file.writeFile(bytes));
    },
    removeCache: (name) => rm(join(cacheDir(), name), { force: true }),
    download: (url) => download(url, options.downloadTimeoutMs ?? DOWNLOAD_TIMEOUT_MS, options.maxDownloadBytes ?? MAX_DOWNLOAD_BYTES),
  };
}

/** The bytes of a shared data file (its path under `shared/data`), SHA-256 checked. */
export function loadSharedData(name: string, options: SharedDataOptions = {}): Promise<Uint8Array> {
  // The cache directory is worked out only when needed: on Deno, reading the environment needs a permission.
  const cacheDir = (): string => options.cacheDir ?? defaultCacheDir();
  return loadPinned(name, options.files ?? SHARED_FILES, places(options.root ?? DEFAULT_SHARED_ROOT, cacheDir, options));
}
