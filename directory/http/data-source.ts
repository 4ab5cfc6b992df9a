/**
 * Loading the dataset behind the routes, and failing honestly. The source is a port: a function
 * that opens the dataset file's bytes (a file on Node, a file or bundled asset on Deno). While it
 * cannot be loaded every data route answers 503 with `factories: null`; later requests retry the
 * load with a doubling back-off (1 s up to 16 s by default), so a repaired file is picked up
 * without a restart. Once loaded, the dataset stays: a file broken later does not take down a
 * service that already holds good data.
 */
import { createSha256 } from '../../core/crypto/sha256.ts';
import { toHex } from '../../core/encoding/hex.ts';
import type { Dataset } from '../dataset.ts';
import { DirectoryIndex } from '../search.ts';
import { type Attribution, attributionOf } from './attribution.ts';

/** Opens the dataset file (UTF-8 JSON in the layout of `directory/dataset.ts`); rejects when it cannot. */
export type DataSource = () => Promise<ReadableStream<Uint8Array>>;

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
}

export type DataState =
  | { readonly ok: true; readonly data: LoadedData }
  | { readonly ok: false; readonly retryAfterSeconds: number };

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

  constructor(source: DataSource, clock: Clock, retry: RetryOptions, onError: (error: unknown) => void, sha256: Sha256Factory = createSha256) {
    this.#source = source;
    this.#sha256 = sha256;
    this.#clock = clock;
    this.#retry = retry;
    this.#onError = onError;
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
      const hasher = await this.#sha256();
      const bytes = await this.#source();
      const hashed = bytes.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            hasher.update(chunk);
            controller.enqueue(chunk);
          },
        }),
      );
      // Indexed while read: a million records never sit in memory as objects.
      const { index, header: dataset } = await DirectoryIndex.load(hashed);
      const hash = toHex(hasher.digest()).slice(0, 32);
      this.#loaded = {
        index,
        generated: dataset.generated,
        sources: dataset.sources,
        attribution: attributionOf(dataset),
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
}
