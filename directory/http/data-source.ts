/**
 * Loading the dataset behind the routes, and failing honestly. The source is a port: a function
 * that opens the dataset file's bytes (a file on Node, a file or bundled asset on Deno). While it
 * cannot be loaded every data route answers 503 with `factories: null`; later requests retry the
 * load with a doubling back-off (1 s up to 16 s by default), so a repaired file is picked up
 * without a restart. Once loaded, the dataset stays: a file broken later does not take down a
 * service that already holds good data.
 */
import { createSha256 } from '../../core/crypto/sha256.ts';
import { concatBytes } from '../../core/encoding/bytes.ts';
import { toHex } from '../../core/encoding/hex.ts';
import type { Dataset, DatasetHeader } from '../dataset.ts';
import type { IndexOptions } from '../index-builder.ts';
import { INDEX_FILE_FIXED_BYTES, indexFileChunks, indexFileLengths, readIndexFile } from '../index-file.ts';
import { DirectoryIndex } from '../search.ts';
import { type Attribution, attributionOf } from './attribution.ts';

/**
 * Opens the dataset file (UTF-8 JSON in the layout of `directory/dataset.ts`), or an index file
 * made from one (`directory/index-file.ts`: a deployment that fetches its data can fetch that and
 * skip the indexing); rejects when it cannot.
 */
export type DataSource = () => Promise<ReadableStream<Uint8Array>>;

/**
 * Where the prebuilt index of the dataset is kept (on Node and Deno a file beside the dataset):
 * read on start, and used when it was made from the very bytes of the dataset (checked by their
 * SHA-256); written again when missing or stale.
 */
export interface IndexCache {
  /** The index file's bytes, or undefined when there is none. */
  read(): Promise<Uint8Array | undefined>;
  /** Replaces the index file with these bytes, written whole or not at all. */
  write(chunks: readonly Uint8Array[]): Promise<void>;
  /**
   * The SHA-256 of the dataset's bytes in hex, where the host reads the file faster than through
   * the source's stream (on Node: into one buffer, over and over, where a stream makes a buffer per
   * read and the collector runs after them). Without it, the source is read and hashed.
   */
  datasetSha256?(): Promise<string>;
}

/** Incremental SHA-256, as `createSha256` of the core makes it. */
export interface Sha256Hasher {
  update(data: Uint8Array): void;
  digest(): Uint8Array;
}

/**
 * Makes a hasher for the dataset's ETag. Default: the core's, in WebAssembly, which runs on every
 * runtime; a host with a native one passes it (on Node, node:crypto hashes a 650 MB dataset in a
 * fifth of the time).
 */
export type Sha256Factory = () => Sha256Hasher | Promise<Sha256Hasher>;

/** Milliseconds since the epoch; injected so tests control time. */
export interface Clock {
  now(): number;
}

/** A loaded dataset, with what the routes derive from it once. */
export interface LoadedData {
  readonly index: DirectoryIndex;
  readonly generated: string;
  readonly sources: Dataset['sources'];
  readonly attribution: Attribution;
  /**
   * Strong ETag of the export: the SHA-256 of the dataset's bytes (first 128 bits) and the
   * export format version, so the tag changes when either does.
   */
  readonly etag: string;
  /** Strong ETag of the NDJSON export: the same hash, the NDJSON format version. */
  readonly ndjsonEtag: string;
  /** The index file's bytes, which the index reads in place, when it was read from one (see `Built`). */
  readonly indexFile?: Uint8Array;
}

export type DataState = { readonly ok: true; readonly data: LoadedData } | { readonly ok: false; readonly retryAfterSeconds: number };

export interface RetryOptions {
  /** Wait after the first failure (ms); doubles with each further failure. */
  readonly minMs: number;
  /** Longest wait between attempts (ms). */
  readonly maxMs: number;
}

/** Version of the export's layout, part of its ETag. */
export const EXPORT_FORMAT = 'e1';
/** Version of the NDJSON export's layout, part of its ETag. */
export const NDJSON_FORMAT = 'n1';

/** Loads once, shares one attempt among concurrent requests, and retries failures after a back-off. */
export class DataLoader {
  readonly #source: DataSource;
  readonly #clock: Clock;
  readonly #retry: RetryOptions;
  readonly #onError: (error: unknown) => void;
  readonly #sha256: Sha256Factory;
  #loaded: LoadedData | undefined;
  #pending: Promise<DataState> | undefined;
  #failures = 0;
  #retryAt = 0;

  readonly #indexCache: IndexCache | undefined;
  readonly #indexOptions: IndexOptions;

  constructor(
    source: DataSource,
    clock: Clock,
    retry: RetryOptions,
    onError: (error: unknown) => void,
    sha256: Sha256Factory = createSha256,
    indexCache?: IndexCache,
    indexOptions: IndexOptions = {},
  ) {
    this.#source = source;
    this.#indexOptions = indexOptions;
    this.#indexCache = indexCache;
    this.#sha256 = sha256;
    this.#clock = clock;
    this.#retry = retry;
    this.#onError = onError;
  }

  /** The dataset once loaded, without waiting. */
  get loaded(): LoadedData | undefined {
    return this.#loaded;
  }

  /** The dataset, or how long until the next attempt. Never rejects. */
  get(): Promise<DataState> {
    if (this.#loaded) return Promise.resolve({ ok: true, data: this.#loaded });
    if (this.#pending) return this.#pending;
    const wait = this.#retryAt - this.#clock.now();
    if (this.#failures > 0 && wait > 0) return Promise.resolve({ ok: false, retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)) });
    this.#pending = this.#load().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #load(): Promise<DataState> {
    try {
      const { index, header, sha256, indexFile } = (await this.#fromCache()) ?? (await this.#fromSource());
      const hash = sha256.slice(0, 32);
      this.#loaded = {
        index,
        indexFile,
        generated: header.generated,
        sources: header.sources,
        attribution: attributionOf(header),
        etag: `"${hash}-${EXPORT_FORMAT}"`,
        ndjsonEtag: `"${hash}-${NDJSON_FORMAT}"`,
      };
      this.#failures = 0;
      return { ok: true, data: this.#loaded };
    } catch (error) {
      this.#onError(error);
      this.#failures++;
      const delay = Math.min(this.#retry.maxMs, this.#retry.minMs * 2 ** (this.#failures - 1));
      this.#retryAt = this.#clock.now() + delay;
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(delay / 1000)) };
    }
  }

  /** The index from the cache, if it holds one made from the dataset's current bytes. */
  async #fromCache(): Promise<Built | undefined> {
    if (this.#indexCache === undefined) return undefined;
    let file;
    let bytes;
    try {
      bytes = await this.#indexCache.read();
      if (bytes === undefined) return undefined;
      file = readIndexFile(bytes);
    } catch (error) {
      this.#onError(error); // a broken index file is made again
      return undefined;
    }
    // The dataset is hashed (not parsed) to know the index is its own: a changed file is indexed again.
    const sha256 = this.#indexCache.datasetSha256 ? await this.#indexCache.datasetSha256() : await this.#hashSource();
    if (sha256 !== file.datasetSha256) return undefined;
    const index = new DirectoryIndex({ generated: file.header.generated, parts: file.parts }, this.#indexOptions);
    return { index, header: file.header, sha256, indexFile: bytes };
  }

  async #hashSource(): Promise<string> {
    const hasher = await this.#sha256();
    const reader = (await this.#source()).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      hasher.update(value);
    }
    return toHex(hasher.digest());
  }

  /** The index made from the source, and written to the cache. */
  async #fromSource(): Promise<Built> {
    const built = await indexSource(this.#source, this.#sha256, this.#indexOptions);
    if (this.#indexCache !== undefined && !built.fromIndexFile) {
      // Serving does not fail with the file: without it, the next start indexes again.
      await this.#indexCache.write(indexFileChunks(built.index.parts, built.header, built.sha256)).catch(this.#onError);
    }
    return built;
  }
}

/**
 * Reads a source and indexes it: a dataset file is parsed, checked and indexed while read, and
 * hashed on the way; an index file is read whole. Rejects with InvalidDatasetError.
 */
export async function indexSource(
  source: DataSource,
  sha256: Sha256Factory = createSha256,
  indexOptions: IndexOptions = {},
): Promise<Built & { fromIndexFile: boolean }> {
  const reader = (await source()).getReader();
  const first = await readAtLeast(reader, INDEX_FILE_FIXED_BYTES);
  const lengths = indexFileLengths(first);
  if (lengths !== undefined) {
    const bytes = await readWhole(reader, first, lengths.file);
    const file = readIndexFile(bytes);
    const index = new DirectoryIndex({ generated: file.header.generated, parts: file.parts }, indexOptions);
    return { index, header: file.header, sha256: file.datasetSha256, fromIndexFile: true, indexFile: bytes };
  }
  const hasher = await sha256();
  const hashed = new ReadableStream<Uint8Array>({
    start(controller) {
      if (first.length > 0) {
        hasher.update(first);
        controller.enqueue(first);
      }
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else {
        hasher.update(value);
        controller.enqueue(value);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  // Indexed while read: a million records never sit in memory as objects.
  const { index, header } = await DirectoryIndex.load(hashed, indexOptions);
  return { index, header, sha256: toHex(hasher.digest()), fromIndexFile: false };
}

export interface Built {
  readonly index: DirectoryIndex;
  readonly header: DatasetHeader;
  /** The SHA-256 of the dataset's bytes, in hex. */
  readonly sha256: string;
  /**
   * The index file the index was read from (its typed arrays are views of these bytes), or
   * undefined when it was built from the dataset. In shared memory, other threads can serve the
   * same index from it without a copy (directory/adapter/threads.ts).
   */
  readonly indexFile?: Uint8Array;
}

/** At least `n` bytes from the start of a stream (fewer only when it ends sooner), as one array. */
async function readAtLeast(reader: ReadableStreamDefaultReader<Uint8Array>, n: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let length = 0;
  while (length < n) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    length += value.length;
  }
  return parts.length === 1 ? parts[0]! : concatBytes(...parts);
}

/**
 * The whole stream, `first` being what was read of it already, into one array of `length` bytes
 * (made once). A stream that gave the whole file in its first chunk gives that chunk itself: a
 * thread handed the index file's shared bytes uses them in place.
 */
async function readWhole(reader: ReadableStreamDefaultReader<Uint8Array>, first: Uint8Array, length: number): Promise<Uint8Array> {
  if (!Number.isSafeInteger(length) || length < first.length) throw new RangeError('the index file gives a wrong length');
  if (first.length === length) {
    const { done, value } = await reader.read();
    if (done) return first;
    if (value.length > 0) throw new RangeError(`the index file is longer than the ${length} bytes it gives`);
  }
  const out = new Uint8Array(length);
  out.set(first, 0);
  let at = first.length;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (at + value.length > length) throw new RangeError(`the index file is longer than the ${length} bytes it gives`);
    out.set(value, at);
    at += value.length;
  }
  if (at !== length) throw new RangeError(`the index file ends after ${at} of its ${length} bytes`);
  return out;
}
