import { createPrivateKey, hash, sign } from 'node:crypto';
import type { CryptoBackends } from '../core/crypto/backends.ts';
import { checkedEd25519Backend, ED25519_PKCS8_PREFIX, type Ed25519Backend } from '../core/crypto/ed25519.ts';
import { checkedSha256, type Sha256Hasher } from '../core/crypto/sha256.ts';
import { equationHolds } from './ed25519-openssl.ts';
import { workerEd25519Backend } from './ed25519-workers.ts';

/**
 * Node's native crypto, for the host to hand to what it constructs (the chain, and through it the
 * mempool, sync and the node's decoding of gossip): SHA-256 by node:crypto (OpenSSL, with the
 * CPU's SHA extensions) and Ed25519 batches checked on worker threads (ed25519-workers.ts). The
 * core checks both against known answers first. Batches of small messages (a state root's trie
 * nodes) stay with the core's own four-lane hasher: node:crypto hashes one message per call, and
 * the call costs more than the hashing.
 */
export async function nodeCrypto(): Promise<CryptoBackends> {
  return { sha256: nodeSha256(), ed25519: await checkedEd25519Backend(workerEd25519Backend()) };
}

/** The native SHA-256 alone, checked by the core (the ledger benchmark measures it on its own). */
export function nodeSha256(): Sha256Hasher {
  return checkedSha256('node:crypto', nativeSha256);
}

/** SHA-256 by node:crypto, one message (exported for the benchmarks). */
export function nativeSha256(data: Uint8Array): Uint8Array {
  // hash() is fastest with string output: asking it for a Buffer costs about 1 µs more per call
  // (bench/RESULTS.md). 'binary' (latin1) maps each digest byte to one character, so this loop is exact.
  const digest = hash('sha256', data, 'binary');
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = digest.charCodeAt(i);
  return out;
}

/**
 * Ed25519 by node:crypto on the calling thread, signing and checking: for the simulator (core/sim),
 * whose checks must finish in the order it asks for them, as noble's do, and which with noble spent
 * a fifth of a run in big-integer arithmetic. The same verdicts as the node's own verifier, which
 * runs this equation on its worker threads. Checked by the core against known answers first.
 */
export function opensslEd25519Backend(): Promise<Ed25519Backend> {
  return checkedEd25519Backend({
    name: 'openssl',
    async signer(seed) {
      const key = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
      // A plain Uint8Array, not a Buffer: Buffer's slice shares memory where Uint8Array's copies.
      return async (message) => new Uint8Array(sign(null, message, key));
    },
    async verifyEquation(publicKey, message, signature) {
      return equationHolds(publicKey, message, signature);
    },
  });
}
