import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectionCounts, forgetThread, setServingThreads, threadBalance } from './connection-balance.ts';

test('a thread over its share sends clients away until it holds at most one over the average, counting those on their way back', () => {
  const counts = connectionCounts(2);
  const main = threadBalance(counts, 0);
  const other = threadBalance(counts, 1);
  for (let i = 0; i < 20; i++) main.opened();
  for (let i = 0; i < 12; i++) other.opened();
  assert.equal(main.shouldLeave(), false, 'one thread serving: nowhere to send a client');
  setServingThreads(counts, 2);
  assert.equal(other.shouldLeave(), false, 'under its share');
  const left = Array.from({ length: 10 }, () => main.shouldLeave()).filter(Boolean).length;
  assert.equal(left, 3, '20 of 32: three go, not every answer in flight');
  for (let i = 0; i < 3; i++) other.opened(); // they came back, on the other thread
  assert.equal(main.shouldLeave(), false, '17 and 15');
  main.opened(); // a new client on the main thread: 18 and 15
  assert.equal(main.shouldLeave(), true);
  main.opened(); // it came back to the main thread
  assert.equal(main.shouldLeave(), true, 'and goes again');
  other.opened();
  assert.equal(main.shouldLeave(), false, '17 and 16');
  assert.throws(() => threadBalance(counts, 2), RangeError);
  forgetThread(counts, 1);
  setServingThreads(counts, 1);
  assert.equal(main.shouldLeave(), false, 'alone again');
});
