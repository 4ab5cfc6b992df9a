import { hash } from 'node:crypto';
import { useNativeSha256 } from '../core/crypto/sha256.ts';

/**
 * Gives the core Node's native SHA-256 (OpenSSL, with the CPU's SHA extensions). The core checks it
 * against known digests before using it.
 */
export function installNativeCrypto(): void {
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
