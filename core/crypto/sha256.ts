import { createSHA256, createSHA512, type IHasher } from 'hash-wasm';
import { bytesEqual, ensureBytes } from '../encoding/bytes.ts';
import { MeshError } from '../errors.ts';

// One reused WebAssembly hasher per algorithm: creating a hasher costs far more than hashing an
// id or a Merkle node, and JavaScript is single-threaded, so a shared instance is never re-entered.
const sha256Hasher: IHasher = await createSHA256();
const sha512Hasher: IHasher = await createSHA512();

/**
 * From this size on, `sha256Async` without a native hasher hands the input to WebCrypto, which
 * hashes natively; below it the call's fixed cost outweighs the speed. Tuned for browsers, the
 * runtime that has no native hasher to install: there WebCrypto's fixed cost is a few µs and the
 * measured crossover is 1–2 KiB (bench/RESULTS.md, "SHA-256 crossover"). On Node and Deno the
 * fixed cost is 60–80 µs; hosts there install their native hasher instead (`useNativeSha256`).
 */
export const WEBCRYPTO_MIN_BYTES = 2 * 1024;

let nativeSha256: ((data: Uint8Array) => Uint8Array) | undefined;

/** SHA-256 of `data`, synchronously: ids, tx ids, Merkle nodes, and bulk data on hosts with a native hasher. */
export function sha256(data: Uint8Array): Uint8Array {
  ensureBytes(data, 'data');
  if (nativeSha256) return nativeSha256(data);
  return sha256Hasher.init().update(data).digest('binary');
}

/** SHA-256 of `data`; without a native hasher, large inputs go to WebCrypto off the main thread. */
export async function sha256Async(data: Uint8Array): Promise<Uint8Array> {
  ensureBytes(data, 'data');
  if (nativeSha256 || data.length < WEBCRYPTO_MIN_BYTES) return sha256(data);
  return new Uint8Array(await crypto.subtle.digest('SHA-256', data as Uint8Array<ArrayBuffer>));
}

// FIPS 180-2 B.1 and B.3: a native hasher must reproduce them before the core relies on it.
const CHECKS: [string, string][] = [
  ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
  ['a'.repeat(1_000_000), 'cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0'],
];

/**
 * Lets a host plug in its platform's native SHA-256 (node:crypto on Node), used from then on for
 * every size: a host installs one only where it is faster than WebAssembly even for 32 bytes, as
 * on Node. The function is checked against known digests first; a wrong one is refused with a
 * MeshError and the core keeps its own hasher.
 */
export function useNativeSha256(hash: (data: Uint8Array) => Uint8Array): void {
  const encoder = new TextEncoder();
  for (const [input, digest] of CHECKS) {
    const wanted = Uint8Array.from(digest.match(/../g)!, (b) => parseInt(b, 16));
    const got = hash(encoder.encode(input));
    if (!(got instanceof Uint8Array) || !bytesEqual(got, wanted)) {
      throw new MeshError('native-sha256-wrong', 'the native SHA-256 gave a wrong digest; not used');
    }
  }
  nativeSha256 = hash;
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
