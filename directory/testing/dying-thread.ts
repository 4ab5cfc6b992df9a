/** A serving thread that starts listening and then dies (threads.node.test.ts), as one at its heap limit does. */
import { parentPort } from 'node:worker_threads';

parentPort!.postMessage({ listening: true });
setTimeout(() => process.exit(7), 20);
