import { createSHA256, createSHA512, type IHasher } from 'hash-wasm';
import { bytesEqual, ensureBytes } from '../encoding/bytes.ts';
import { MeshError } from '../errors.ts';
import { createLanesBatch, type Sha256Batch } from './sha256-lanes.ts';

// One reused WebAssembly hasher per algorithm: creating a hasher costs far more than hashing an
// id or a Merkle node, and JavaScript is single-threaded, so a shared instance is never re-entered.
const sha256Hasher: IHasher = await createSHA256();
const sha512Hasher: IHasher = await createSHA512();

/**
 * From this size on, `sha256Async` without a native hasher hands the input to WebCrypto, which
 * hashes natively; below it the call's fixed cost outweighs the speed. Tuned for browsers, the
 * runtime that has no native hasher to hand in: there WebCrypto's fixed cost is a few µs and the
 * measured crossover is 1–2 KiB (bench/RESULTS.md, "SHA-256 crossover"). On Node and Deno the
 * fixed cost is 60–80 µs; hosts there hand in their native hasher instead (`checkedSha256`).
 */
export const WEBCRYPTO_MIN_BYTES = 2 * 1024;

export type { Sha256Batch } from './sha256-lanes.ts';

/**
 * A SHA-256 implementation, as a component is given it (the crypto port, crypto/backends.ts):
 * `hash` for one message, `batch` for many laid out one after another (as `sha256Batch`, whose
 * argument checks it makes). `coreSha256` is the core's own; `checkedSha256` makes one of a host's.
 */
export interface Sha256Hasher {
  readonly name: string;
  hash(data: Uint8Array): Uint8Array;
  batch: Sha256Batch;
}

/** SHA-256 of `data`, synchronously, by the core's own (WebAssembly) hasher. */
export function sha256(data: Uint8Array): Uint8Array {
  ensureBytes(data, 'data');
  return sha256Hasher.init().update(data).digest('binary');
}

/**
 * SHA-256 of `data`. By `hasher` when one is given (a host's native one, at any size); otherwise
 * large inputs go to WebCrypto off the main thread.
 */
export async function sha256Async(data: Uint8Array, hasher?: Sha256Hasher): Promise<Uint8Array> {
  ensureBytes(data, 'data');
  if (hasher !== undefined) return hasher.hash(data);
  if (data.length < WEBCRYPTO_MIN_BYTES) return sha256(data);
  return new Uint8Array(await crypto.subtle.digest('SHA-256', data as Uint8Array<ArrayBuffer>));
}

/** Throws RangeError unless `ends` are ascending offsets within `data` and `out` holds a digest for each. */
function checkBatch(data: Uint8Array, ends: ArrayLike<number>, out: Uint8Array): void {
  ensureBytes(data, 'data');
  ensureBytes(out, 'out');
  if (out.length < 32 * ends.length) throw new RangeError(`out holds ${out.length >> 5} digests, not ${ends.length}`);
  let start = 0;
  for (let i = 0; i < ends.length; i++) {
    const end = ends[i]!;
    if (!Number.isInteger(end) || end < start || end > data.length) throw new RangeError(`message end ${end} out of order or past the data`);
    start = end;
  }
}

/**
 * A checked batch over the core's four lanes, `one` hashing a batch of one message (four lanes cost
 * more than one call to a one-message hasher).
 */
function lanesBatch(one: (data: Uint8Array) => Uint8Array): Sha256Batch {
  return (data, ends, out) => {
    checkBatch(data, ends, out);
    if (ends.length === 1) out.set(one(data.subarray(0, ends[0])));
    else ownBatch(data, ends, out);
  };
}

/**
 * SHA-256 of many messages laid out one after another in `data`, each ending at the next offset
 * of `ends` (ascending, the first message starting at 0), digests written in order into `out` (32
 * bytes each, from offset 0). For thousands of small messages (a state root's trie nodes): one
 * call, four messages per compression (sha256-lanes.ts), no digest allocated; large data is
 * hashed faster by `sha256` on a host with a native hasher.
 */
export function sha256Batch(data: Uint8Array, ends: ArrayLike<number>, out: Uint8Array): void {
  coreBatch(data, ends, out);
}

// Messages per `sha256Batch` call in `sha256Each`: bounds the buffer they are laid out in.
const EACH_CHUNK = 8192;

/** The SHA-256 of each of `messages`, digest i at 32 i, by `hasher`'s batch: without laying them out yourself. */
export function sha256Each(messages: readonly Uint8Array[], hasher: Sha256Hasher = coreSha256): Uint8Array {
  const out = new Uint8Array(32 * messages.length);
  const ends: number[] = [];
  for (let from = 0; from < messages.length; from += EACH_CHUNK) {
    const to = Math.min(messages.length, from + EACH_CHUNK);
    let total = 0;
    for (let i = from; i < to; i++) total += ensureBytes(messages[i], 'message').length;
    const data = new Uint8Array(total);
    ends.length = 0;
    let at = 0;
    for (let i = from; i < to; i++) {
      data.set(messages[i]!, at);
      ends.push((at += messages[i]!.length));
    }
    hasher.batch(data, ends, out.subarray(32 * from, 32 * to));
  }
  return out;
}

function wasmBatch(data: Uint8Array, ends: ArrayLike<number>, out: Uint8Array): void {
  let start = 0;
  for (let i = 0; i < ends.length; i++) {
    const end = ends[i]!;
    out.set(sha256Hasher.init().update(data.subarray(start, end)).digest('binary'), 32 * i);
    start = end;
  }
}

// Four messages at a time in WebAssembly SIMD lanes, where the runtime has them (all current ones).
const ownBatch: Sha256Batch = (await createLanesBatch()) ?? wasmBatch;
const coreBatch: Sha256Batch = lanesBatch(sha256);

/** The core's own SHA-256: WebAssembly, four lanes for batches. What code that is given none uses. */
export const coreSha256: Sha256Hasher = Object.freeze({ name: 'wasm', hash: sha256, batch: coreBatch });

// FIPS 180-2 B.1 and B.3: a native hasher must reproduce them before the core relies on it.
const CHECKS: [string, string][] = [
  ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
  ['a'.repeat(1_000_000), 'cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0'],
];

/**
 * A host's SHA-256 (node:crypto on Node), for the components it constructs: a host hands one in
 * only where it is faster than WebAssembly even for 32 bytes, as on Node. `batch`, if given, serves
 * batches; without one the core's own four lanes do, which beat a call per message even to
 * node:crypto (and `hash` a batch of one). Both are checked against known digests first; a wrong
 * one is refused with a MeshError.
 */
export function checkedSha256(name: string, hash: (data: Uint8Array) => Uint8Array, batch?: Sha256Batch): Sha256Hasher {
  const encoder = new TextEncoder();
  const inputs = CHECKS.map(([input]) => encoder.encode(input));
  const wanted = CHECKS.map(([, digest]) => Uint8Array.from(digest.match(/../g)!, (b) => parseInt(b, 16)));
  const wrong = (): MeshError => new MeshError('native-sha256-wrong', 'the native SHA-256 gave a wrong digest; not used');
  inputs.forEach((input, i) => {
    const got = hash(input);
    if (!(got instanceof Uint8Array) || !bytesEqual(got, wanted[i]!)) throw wrong();
  });
  if (batch) {
    // The checks' messages in one batch, each preceded by an empty one: offsets must be honoured.
    const data = new Uint8Array(inputs.reduce((n, input) => n + input.length, 0));
    const ends: number[] = [];
    let at = 0;
    for (const input of inputs) {
      ends.push(at);
      data.set(input, at);
      ends.push((at += input.length));
    }
    const out = new Uint8Array(32 * ends.length);
    batch(data, ends, out);
    const empty = sha256Hasher.init().digest('binary');
    wanted.forEach((digest, i) => {
      if (!bytesEqual(out.subarray(64 * i, 64 * i + 32), empty) || !bytesEqual(out.subarray(64 * i + 32, 64 * i + 64), digest)) throw wrong();
    });
  }
  return {
    name,
    hash,
    batch: batch
      ? (data, ends, out): void => {
          checkBatch(data, ends, out);
          batch(data, ends, out);
        }
      : lanesBatch(hash),
  };
}

/** SHA-512 of `data`, synchronously (Ed25519's internal hash for the pure-JS backend). */
export function sha512(data: Uint8Array): Uint8Array {
  return sha512Hasher.init().update(data).digest('binary');
}

/** Incremental SHA-256 for data that arrives in pieces (a stream, a file). */
export async function createSha256(): Promise<{
  update(data: Uint8Array): void;
  digest(): Uint8Array;
}> {
  const hasher = await createSHA256();
  hasher.init();
  return {
    update(data: Uint8Array): void {
      hasher.update(ensureBytes(data, 'data'));
    },
    digest(): Uint8Array {
      return hasher.digest('binary');
    },
  };
}
