/**
 * Third-party data files (the EPA FRS extract, measured RTT matrices) are never copied into the
 * repository: they live in the project's shared data folder (`../shared/data` beside the
 * repository, as in CI), and each names a public upstream at a pinned commit with its SHA-256.
 * `loadPinned` reads a file from the shared folder when it is there; otherwise it takes it from a
 * cache, downloading it once from its upstream. Every copy is checked against the SHA-256 before it
 * is used, and a download that does not match is refused and never cached.
 *
 * This part is the same on every runtime; the places (a folder and a cache directory on Node and
 * Deno, the test server and Cache Storage in a browser) are a port that each host supplies, in
 * `host-node/shared-data.ts` and `host-browser/shared-data.ts`.
 */
import { sha256 } from '../crypto/sha256.ts';
import { toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';

/** A shared data file: its pinned public upstream and the SHA-256 of its bytes (lower-case hex). */
export interface SharedFile {
  readonly upstream: string;
  readonly sha256: string;
}

/** Shared data files by their path under `shared/data`. */
export type SharedFiles = Readonly<Record<string, SharedFile>>;

/** The project's shared data files, as the README of each data set under `shared/data` names them. */
export const SHARED_FILES = {
  // US EPA Facility Registry Service export, NAICS 32591 (public domain): the directory's default dataset.
  'epa-frs/frs-naics-32591.csv': {
    upstream:
      'https://raw.githubusercontent.com/lindsaypoirier/Carceral-PFAS-Analysis-V2/cce35e3d664a6cba3d071bb09565f08deb669854/source_datasets/naics/naics_32591.CSV',
    sha256: '62bb2cc1cee03fe7eff8afca6f149348730bcdf96745b89cd5fa01b34d82d927',
  },
  // Measured RTT matrices (NetLatency-Data, MIT): for the measurement layer.
  'netlatency/PlanetLabData_1': {
    upstream: 'https://raw.githubusercontent.com/uofa-rzhu3/NetLatency-Data/a5845579654bf3b7f191d2697c0de24ec485b8e9/PlanetLab/PlanetLabData_1',
    sha256: 'dd7fd6bb6917c55590e547d7c00a41f93175d4bda68ef0c81c8f372086165afc',
  },
  'netlatency/SeattleData_1': {
    upstream: 'https://raw.githubusercontent.com/uofa-rzhu3/NetLatency-Data/a5845579654bf3b7f191d2697c0de24ec485b8e9/Seattle/SeattleData_1',
    sha256: '9c28f7b3f701b11c052dd5c0c6623ba9b8df578c22f16c8e12e7adc88570659e',
  },
} as const satisfies SharedFiles;

/**
 * A shared data file could not be had. `code`: `unknown-file` (no such entry in the table),
 * `hash-mismatch` (a copy's bytes are not the pinned ones), `unavailable` (neither in the shared
 * folder nor downloadable).
 */
export class SharedDataError extends MeshError {}

/** Where a host finds shared data files. `name` is always a key of the table. */
export interface SharedDataPlaces {
  /** The shared data folder, as messages name it (a path or a URL). */
  readonly shared: string;
  /** The cache, as messages name it. */
  readonly cache: string;
  /** The file from the shared folder; undefined when the folder or the file is not there. */
  readShared(name: string): Promise<Uint8Array | undefined>;
  /** The cached copy; undefined when there is none. */
  readCache(name: string): Promise<Uint8Array | undefined>;
  /** Stores a checked copy, whole or not at all. */
  writeCache(name: string, bytes: Uint8Array): Promise<void>;
  removeCache(name: string): Promise<void>;
  /** The upstream's bytes; rejects when the download fails. */
  download(url: string): Promise<Uint8Array>;
}

const matches = (file: SharedFile, bytes: Uint8Array): boolean => toHex(sha256(bytes)) === file.sha256;

function check(name: string, file: SharedFile, bytes: Uint8Array, where: string): Uint8Array {
  if (!matches(file, bytes)) {
    const actual = toHex(sha256(bytes));
    throw new SharedDataError('hash-mismatch', `shared data ${name} from ${where} has SHA-256 ${actual}, not the pinned ${file.sha256}`);
  }
  return bytes;
}

/** What went wrong, with the cause where fetch hides it ("fetch failed": connection refused). */
function reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message;
}

/**
 * The bytes of shared data file `name`, checked against its SHA-256: from the shared folder when
 * it is there, else from the cache, else downloaded once from the pinned upstream into the cache.
 */
export async function loadPinned(name: string, files: SharedFiles, places: SharedDataPlaces): Promise<Uint8Array> {
  const file = Object.hasOwn(files, name) ? files[name] : undefined;
  if (file === undefined) throw new SharedDataError('unknown-file', `no shared data file ${JSON.stringify(name)}; known: ${Object.keys(files).join(', ')}`);
  const local = await places.readShared(name);
  if (local !== undefined) return check(name, file, local, `${places.shared}/${name}`);
  const cached = await places.readCache(name);
  if (cached !== undefined) {
    if (matches(file, cached)) return cached;
    // A damaged copy (a disk error, a hand edit) is dropped and fetched again.
    await places.removeCache(name);
  }
  let downloaded: Uint8Array;
  try {
    downloaded = await places.download(file.upstream);
  } catch (error) {
    throw new SharedDataError(
      'unavailable',
      `shared data ${name} is not in ${places.shared} and could not be downloaded from ${file.upstream} ` + `into ${places.cache}: ${reason(error)}`,
    );
  }
  await places.writeCache(name, check(name, file, downloaded, file.upstream));
  return downloaded;
}
