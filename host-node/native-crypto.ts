import { hash } from 'node:crypto';
import { useNativeSha256 } from '../core/crypto/sha256.ts';

/**
 * Gives the core Node's native SHA-256 (OpenSSL, with the CPU's SHA extensions) for bulk inputs.
 * The core checks it against known digests before using it.
 */
export function installNativeCrypto(): void {
  useNativeSha256((data) => {
    const digest = hash('sha256', data, 'buffer');
    // A Buffer may share a pooled ArrayBuffer; the core gets its own plain Uint8Array.
    return new Uint8Array(digest.buffer.slice(digest.byteOffset, digest.byteOffset + digest.length));
  });
}
