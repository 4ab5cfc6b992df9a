import { hash } from 'node:crypto';
import { useEd25519Backend } from '../core/crypto/ed25519.ts';
import { useNativeSha256 } from '../core/crypto/sha256.ts';
import { workerEd25519Backend } from './ed25519-workers.ts';

/**
 * Gives the core Node's native crypto: SHA-256 by node:crypto (OpenSSL, with the CPU's SHA
 * extensions) and Ed25519 batches checked on worker threads (ed25519-workers.ts). The core checks
 * both against known answers before using them. Batches of small messages (a state root's trie
 * nodes) stay with the core's own four-lane hasher: node:crypto hashes one message per call, and
 * the call costs more than the hashing.
 */
export async function installNativeCrypto(): Promise<void> {
  installNativeSha256();
  await useEd25519Backend(workerEd25519Backend());
}

/** The native SHA-256 alone (the ledger benchmark swaps hashers in and out). */
export function installNativeSha256(): void {
  useNativeSha256(nativeSha256);
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
