/**
 * The Node host's Ed25519 backend: batches of signatures are checked by node:crypto on worker
 * threads, one per core, and everything else (signing, single checks, small batches) by the
 * runtime's WebCrypto as before.
 *
 * Why: WebCrypto on Node runs each verification as a job on libuv's thread pool, which LevelDB
 * uses too, first come first served. A sync range queues ten thousand verifications at once, and
 * every store read or write behind them waited until they were all done, so a node applying one
 * range could not write it while the next was checked. Worker threads leave the pool to the store,
 * and a batch costs the main thread one copy into shared memory instead of a promise and WebCrypto's
 * argument checks per signature.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { type Ed25519Backend, ed25519Backends, type SignedMessage } from '../core/crypto/ed25519.ts';
import { type JobMessage, jobView, makeJob } from './ed25519-job.ts';

// Below this many signatures a batch stays with WebCrypto: handing it over costs a thread wake-up
// or two, about a verification's time.
const MIN_BATCH = 32;

interface Pending {
  readonly buffer: SharedArrayBuffer;
  readonly items: readonly SignedMessage[];
  readonly resolve: (verdicts: boolean[]) => void;
  readonly reject: (error: unknown) => void;
}

/** Verifies batches on `threads` worker threads (default: one per core). */
export function workerEd25519Backend(threads = availableParallelism()): Ed25519Backend {
  const inner = ed25519Backends[0]!;
  const pending = new Map<number, Pending>();
  let workers: Worker[] = [];
  let nextId = 0;
  // Set when a worker failed: from then on every batch goes to WebCrypto.
  let broken = false;

  // Workers keep the process alive only while they hold a batch.
  const hold = (on: boolean): void => {
    for (const worker of workers) {
      if (on) worker.ref();
      else worker.unref();
    }
  };

  const start = (): Worker[] => {
    if (workers.length > 0) return workers;
    workers = Array.from({ length: Math.max(1, threads) }, () => {
      const worker = new Worker(new URL('./ed25519-worker.ts', import.meta.url));
      worker.on('message', (id: number) => finish(id));
      worker.on('error', fail);
      worker.on('exit', (code) => fail(new Error(`an Ed25519 worker thread exited (${code})`)));
      worker.unref();
      return worker;
    });
    return workers;
  };

  const finish = (id: number): void => {
    const job = pending.get(id);
    if (job === undefined) return;
    pending.delete(id);
    if (pending.size === 0) hold(false);
    const view = jobView(job.buffer, job.items.length);
    // Read with an atomic first, so every verdict the threads wrote is seen.
    Atomics.load(view.control, 1);
    job.resolve(Array.from(view.verdicts, (v) => v === 1));
  };

  // A worker died: its batches, and every later one, go to WebCrypto.
  const fail = (error: unknown): void => {
    if (broken) return;
    broken = true;
    const dead = workers;
    workers = [];
    for (const worker of dead) void worker.terminate();
    const jobs = [...pending.values()];
    pending.clear();
    for (const job of jobs) viaWebCrypto(job.items).then(job.resolve, () => job.reject(error));
  };

  const viaWebCrypto = (items: readonly SignedMessage[]): Promise<boolean[]> =>
    Promise.all(items.map((m) => inner.verifyEquation(m.publicKey, m.message, m.signature)));

  return {
    name: 'node-workers',
    signer: (seed) => inner.signer(seed),
    verifyEquation: (publicKey, message, signature) => inner.verifyEquation(publicKey, message, signature),
    verifyEquations(items) {
      if (items.length < MIN_BATCH || broken) return viaWebCrypto(items);
      const threads = start();
      const buffer = makeJob(items);
      const id = nextId++;
      return new Promise<boolean[]>((resolve, reject) => {
        if (pending.size === 0) hold(true);
        pending.set(id, { buffer, items, resolve, reject });
        const message: JobMessage = { id, buffer, count: items.length };
        for (const worker of threads) worker.postMessage(message);
      });
    },
  };
}
