/**
 * The directory on several threads (Node): the main thread serves, and so does each of `count − 1`
 * worker threads, every one with its own socket on the same port (SO_REUSEPORT), over which Linux
 * spreads the connections. One thread of two cores answered a closed loop of 32 connections with
 * a 99th percentile of tens of milliseconds whatever the handler did; two threads halve the queue
 * each request waits in (bench/RESULTS.md, directory section).
 *
 * What the threads share instead of copying: the index file's bytes, which the main thread read
 * into a SharedArrayBuffer and every thread's index reads in place (a million records' index is
 * 250 MB: one copy, not one a thread), the bit sets of its long lists (tens of MB), and the rate
 * limit's table of buckets, so a client gets its limit once. Submissions go to the same folder,
 * whose writes are atomic per file.
 */
import { Worker } from 'node:worker_threads';
import { forgetThread, setServingThreads } from '../../host-node/connection-balance.ts';
import { releaseBucketLock } from '../http/rate-limit.ts';
import { DIRECTORY_OLD_SPACE_MB, DIRECTORY_SEMI_SPACE_MB } from './heap-size.ts';
import type { ThreadData } from './thread.ts';

/** The worker threads that serve beside the main thread. */
export interface ServingThreads {
  /** How many started and serve. */
  readonly count: number;
  /** Stops them: each stops accepting and lets its requests in flight finish, as the main server does. */
  close(): Promise<void>;
}

/**
 * Whether `platform` lets sockets share a port (SO_REUSEPORT, Node's `reusePort`), as the threads
 * need: the platforms Node's documentation names. Elsewhere (macOS, Windows) listening with it
 * fails, and the directory serves on one thread.
 */
export function threadsCanShareAPort(platform: string): boolean {
  return ['linux', 'freebsd', 'sunos', 'aix'].includes(platform);
}

// How long a thread gets to finish its requests on close before it is stopped outright.
const STOP_GRACE_MS = 5000;

/**
 * Starts `count` threads serving what `data` names, numbered from 1 (the main thread is 0). Resolves
 * with those that started listening; a thread that fails to start is reported to `onError` and left
 * out: the server goes on with the others, which the connection balance is told. So is a thread
 * that stops later: its share of the rate-limit table's lock is released (it may have died holding
 * it), and closing does not wait for it. `script` is the thread's module (tests give another).
 */
export async function startThreads(
  count: number,
  data: Omit<ThreadData, 'thread'>,
  onError: (error: unknown) => void,
  script: URL = new URL('./thread.ts', import.meta.url),
): Promise<ServingThreads> {
  // Counted as each starts listening and stops, so a thread that stops before the others have started is not counted.
  let serving = 1;
  const live = new Set<Running>();
  const started = (thread: Running): void => {
    live.add(thread);
    setServingThreads(data.connections, ++serving);
  };
  const stopped = (thread: Running): void => {
    live.delete(thread);
    forgetThread(data.connections, thread.index);
    setServingThreads(data.connections, --serving);
    releaseBucketLock(data.rateLimitMemory, thread.index);
  };
  await Promise.all(Array.from({ length: count }, (_, i) => startThread(script, { ...data, thread: i + 1 }, onError, started, stopped)));
  return {
    count: live.size,
    close: () => Promise.all([...live].map(stopThread)).then(() => undefined),
  };
}

/** A thread that listens, with its number and its exit (which a listener added later would miss). */
interface Running {
  readonly worker: Worker;
  readonly index: number;
  readonly exited: Promise<void>;
}

function startThread(
  script: URL,
  data: ThreadData,
  onError: (error: unknown) => void,
  started: (thread: Running) => void,
  stopped: (thread: Running) => void,
): Promise<void> {
  const worker = new Worker(script, {
    workerData: data,
    // The main thread's heap sizes (heap-size.ts), also when the user gave the process others.
    resourceLimits: { maxOldGenerationSizeMb: DIRECTORY_OLD_SPACE_MB, maxYoungGenerationSizeMb: 2 * DIRECTORY_SEMI_SPACE_MB },
  });
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  const thread: Running = { worker, index: data.thread, exited: exited.then(() => undefined) };
  return new Promise((resolve) => {
    let listening = false;
    worker.once('message', (message: { listening?: true; error?: string }) => {
      if (message.listening) {
        listening = true;
        started(thread);
      } else {
        onError(new Error(`a serving thread did not start: ${message.error}`));
        void worker.terminate();
      }
      resolve();
    });
    worker.on('error', (error) => {
      onError(new Error(`a serving thread failed: ${error.message}`));
    });
    void exited.then((code) => {
      resolve();
      if (!listening) return;
      stopped(thread);
      if (code !== 0) onError(new Error(`a serving thread stopped (exit code ${code}); the others serve on`));
    });
  });
}

async function stopThread({ worker, exited }: Running): Promise<void> {
  worker.postMessage('stop');
  const timer = setTimeout(() => void worker.terminate(), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}
