import { hash } from 'node:crypto';
import { useEd25519Backend } from '../core/crypto/ed25519.ts';
import { useNativeSha256 } from '../core/crypto/sha256.ts';
import { workerEd25519Backend } from './ed25519-workers.ts';

/**
 * Gives the core Node's native crypto: SHA-256 by node:crypto (OpenSSL, with the CPU's SHA
 * extensions) and Ed25519 batches checked on worker threads (ed25519-workers.ts). The core checks
 * both against known answers before using them.
 */
export async function installNativeCrypto(): Promise<void> {
  installNativeSha256();
  await useEd25519Backend(workerEd25519Backend());
}

/** The native SHA-256 alone (the ledger benchmark swaps hashers in and out). */
export function installNativeSha256(): void {
  useNativeSha256(nativeSha256, nativeSha256Batch);
}

/** SHA-256 by node:crypto, as the host installs it (exported for the benchmark). */
export function nativeSha256(data: Uint8Array): Uint8Array {
  // hash() is fastest with string output: asking it for a Buffer costs about 1 µs more per call
  // (bench/RESULTS.md). 'binary' (latin1) maps each digest byte to one character, so this loop is exact.
  const digest = hash('sha256', data, 'binary');
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = digest.charCodeAt(i);
  return out;
}

/**
 * Many messages by node:crypto, digests written straight into `out` (see the core's `sha256Batch`):
 * node:crypto has no multi-message call, but this saves a digest allocation per message.
 */
export function nativeSha256Batch(data: Uint8Array, ends: ArrayLike<number>, out: Uint8Array): void {
  let start = 0;
  let at = 0;
  for (let i = 0; i < ends.length; i++) {
    const end = ends[i]!;
    const digest = hash('sha256', data.subarray(start, end), 'binary');
    for (let j = 0; j < 32; j++) out[at++] = digest.charCodeAt(j);
    start = end;
  }
}
