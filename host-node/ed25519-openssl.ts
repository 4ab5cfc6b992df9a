/**
 * The Ed25519 group equation by node:crypto (OpenSSL, as WebCrypto on Node), synchronous on the
 * calling thread: for the worker threads of the node's verifier (ed25519-worker.ts) and the
 * simulator's backend (native-crypto.ts). Imports nothing of the core, so a worker loads only this.
 */
import { createPublicKey, type KeyObject, verify } from 'node:crypto';

// SubjectPublicKeyInfo of an Ed25519 key (RFC 8410): this header, then the 32 key bytes.
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

// Keys made into KeyObjects, as the core's WebCrypto cache does: making one costs about half a
// verification. Two generations, the older dropped whole when the younger fills.
const GENERATION = 4096;
let young = new Map<string, KeyObject>();
let old = new Map<string, KeyObject>();

function keyOf(bytes: Uint8Array): KeyObject {
  const id = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  const cached = young.get(id) ?? old.get(id);
  if (cached !== undefined) {
    if (!young.has(id)) remember(id, cached);
    return cached;
  }
  const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, bytes]), format: 'der', type: 'spki' });
  remember(id, key);
  return key;
}

function remember(id: string, key: KeyObject): void {
  if (young.size >= GENERATION) {
    old = young;
    young = new Map();
  }
  young.set(id, key);
}

/** The group equation only: the caller checked the encodings (`checkEncodings`). */
export function equationHolds(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  try {
    return verify(null, message, keyOf(publicKey), signature);
  } catch {
    return false; // a key OpenSSL cannot use is not a curve point
  }
}
