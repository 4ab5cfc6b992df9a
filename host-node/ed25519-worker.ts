/**
 * One thread of the Node host's Ed25519 verifier (ed25519-workers.ts): takes signatures of a shared
 * job, a few at a time, until none is left, and checks each with node:crypto (OpenSSL, as WebCrypto
 * on Node). Only the group equation: the core checked the encodings before the job was made.
 */
import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import { type JobMessage, jobView } from './ed25519-job.ts';

// SubjectPublicKeyInfo of an Ed25519 key (RFC 8410): this header, then the 32 key bytes.
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
// Signatures a thread takes from the job at once: few enough that the threads finish together.
const TAKE = 8;

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

function equationHolds(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  try {
    return verify(null, message, keyOf(publicKey), signature);
  } catch {
    return false; // a key OpenSSL cannot use is not a curve point
  }
}

parentPort!.on('message', (message: JobMessage) => {
  const job = jobView(message.buffer, message.count);
  for (;;) {
    const start = Atomics.add(job.control, 0, TAKE);
    if (start >= job.count) return;
    const end = Math.min(start + TAKE, job.count);
    for (let i = start; i < end; i++) {
      const { publicKey, signature, message: signed } = job.item(i);
      job.verdicts[i] = equationHolds(publicKey, signed, signature) ? 1 : 0;
    }
    // The thread that completes the job says so.
    if (Atomics.add(job.control, 1, end - start) + (end - start) === job.count) parentPort!.postMessage(message.id);
  }
});
