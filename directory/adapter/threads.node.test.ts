// Node only: the directory's worker threads (threads.ts).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectionCounts } from '../../host-node/connection-balance.ts';
import { bucketMemory, TokenBucketLimiter } from '../http/rate-limit.ts';
import { startThreads, threadsCanShareAPort } from './threads.ts';

test('a thread that dies after it started is counted out, its hold on the rate limit let go, and closing does not wait for it', async () => {
  const connections = connectionCounts(3);
  const rateLimitMemory = bucketMemory(100);
  // Dead inside a take: the table's lock (its first Int32) left held by thread 1.
  Atomics.store(new Int32Array(rateLimitMemory, 0, 1), 0, 1 + 1);
  const errors: string[] = [];
  const index = { file: new Uint8Array(new SharedArrayBuffer(0)), bitsets: new SharedArrayBuffer(0) };
  const data = { host: '127.0.0.1', port: 1, index, rateLimitMemory, rateLimit: 1, burst: 1, trustProxy: false, submissions: '', connections };
  const threads = await startThreads(2, data, (error) => errors.push((error as Error).message), new URL('../testing/dying-thread.ts', import.meta.url));
  for (let i = 0; i < 100 && errors.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(errors, Array(2).fill('a serving thread stopped (exit code 7); the others serve on'));
  assert.equal(Atomics.load(new Int32Array(connections), 0), 1, 'the main thread serves alone');
  const take = new TokenBucketLimiter({ perSecond: 1, burst: 1, memory: rateLimitMemory }, { now: () => 0 }).take('a');
  assert.equal(take.ok, true);
  const closed = await Promise.race([threads.close().then(() => 'closed'), new Promise((resolve) => setTimeout(resolve, 2000, 'still waiting'))]);
  assert.equal(closed, 'closed');
});

test('threads serve only where sockets can share a port: listening with reusePort fails on macOS and Windows', () => {
  assert.equal(threadsCanShareAPort('linux'), true);
  assert.equal(threadsCanShareAPort('darwin'), false);
  assert.equal(threadsCanShareAPort('win32'), false);
});
