/**
 * One thread of the Node host's Ed25519 verifier (ed25519-workers.ts): takes signatures of a shared
 * job, a few at a time, until none is left, and checks each with node:crypto (OpenSSL, as WebCrypto
 * on Node). Only the group equation: the core checked the encodings before the job was made.
 */
import { parentPort } from 'node:worker_threads';
import { type JobMessage, jobView } from './ed25519-job.ts';
import { equationHolds } from './ed25519-openssl.ts';

// Signatures a thread takes from the job at once: few enough that the threads finish together.
const TAKE = 8;

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
