import { hash } from 'node:crypto';
import type { CryptoBackends } from '../core/crypto/backends.ts';
import { checkedEd25519Backend } from '../core/crypto/ed25519.ts';
import { checkedSha256, type Sha256Hasher } from '../core/crypto/sha256.ts';
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
