/**
 * One worker thread of the directory server (threads.ts): the same router as the main thread, over
 * the index file's shared bytes and the shared table of rate-limit buckets, on its own socket of
 * the server's port. Tells its parent `{ listening: true }` or `{ error }`; stops on 'stop'.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { threadBalance } from '../../host-node/connection-balance.ts';
import { serveFetch } from '../../host-node/http-server.ts';
import { createDirectory, type SharedIndex } from '../router.ts';
import { FileSubmissionStore } from '../submissions/file-store.ts';
import { nodeSha256, reportOnStderr } from './node-data.ts';

/** What a thread is given: where to listen, and what to serve. */
export interface ThreadData {
  readonly host: string;
  /** The port the main thread bound (never 0). */
  readonly port: number;
  /** The main thread's index, in shared memory. */
  readonly index: SharedIndex;
  /** The table of rate-limit buckets (rate-limit.ts `bucketMemory`). */
  readonly rateLimitMemory: ArrayBufferLike;
  readonly rateLimit: number;
  readonly burst: number;
  readonly trustProxy: boolean;
  /** The submissions folder. */
  readonly submissions: string;
  /** The threads' connection counts (host-node/connection-balance.ts), and this thread's index among them (the main thread is 0). */
  readonly connections: SharedArrayBuffer;
  readonly thread: number;
}

async function serve(data: ThreadData): Promise<void> {
  const store = await FileSubmissionStore.open(data.submissions);
  const directory = createDirectory({
    // The index file as one chunk: the loader uses it in place (data-source.ts readWhole).
    data: () =>
      Promise.resolve(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(data.index.file);
            controller.close();
          },
        }),
      ),
    sha256: nodeSha256,
    submissions: store,
    limits: { rateLimit: { perSecond: data.rateLimit, burst: data.burst, memory: data.rateLimitMemory, owner: data.thread } },
    trustProxy: data.trustProxy,
    index: { bitsets: data.index.bitsets },
    onError: reportOnStderr,
  });
  if ((await directory.ready()) === null) throw new Error('the shared index did not load');
  const server = await serveFetch(directory.fetch, data.host, data.port, { reusePort: true, balance: threadBalance(data.connections, data.thread) });
  parentPort!.on('message', (message) => {
    if (message !== 'stop') return;
    void directory
      .close()
      .then(() => server.close())
      .then(() => store.close())
      .finally(() => parentPort!.close());
  });
  parentPort!.postMessage({ listening: true });
}

serve(workerData as ThreadData).catch((error: unknown) => parentPort!.postMessage({ error: (error as Error)?.message ?? String(error) }));
