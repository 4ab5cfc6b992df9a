import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { seededRandom } from '../crypto/random.test-util.ts';
import { systemRandom } from '../crypto/random.ts';
import { sleep, systemClock } from './clock.ts';
import { ManualClock } from './clock.test-util.ts';

test('manual clock: time moves only when advanced, and timers fire in time order, then in the order set', async () => {
  const clock = new ManualClock(1_000);
  const fired: string[] = [];
  clock.setTimeout(() => fired.push(`c@${clock.now()}`), 30);
  clock.setTimeout(() => fired.push(`a@${clock.now()}`), 10);
  clock.setTimeout(() => fired.push(`b@${clock.now()}`), 10);
  await clock.settle();
  assert.equal(clock.now(), 1_000);
  assert.deepEqual(fired, []);
  await clock.advance(9);
  assert.deepEqual(fired, []);
  await clock.advance(1);
  assert.deepEqual(fired, ['a@1010', 'b@1010']);
  await clock.advance(100);
  assert.deepEqual(fired, ['a@1010', 'b@1010', 'c@1030']);
  assert.equal(clock.now(), 1_110);
  assert.equal(clock.pending, 0);
});

test('manual clock: a cancelled timer never fires, and cancelling twice or after firing does nothing', async () => {
  const clock = new ManualClock();
  const fired: string[] = [];
  const kept = clock.setTimeout(() => fired.push('kept'), 5);
  const dropped = clock.setTimeout(() => fired.push('dropped'), 5);
  // A timer may cancel another that is due at the same instant.
  clock.setTimeout(() => later.cancel(), 10);
  const later = clock.setTimeout(() => fired.push('later'), 10);
  dropped.cancel();
  dropped.cancel();
  await clock.advance(20);
  kept.cancel();
  assert.deepEqual(fired, ['kept']);
  assert.equal(clock.pending, 0);
});

test('manual clock: an interval fires once per period across one long advance, until cancelled', async () => {
  const clock = new ManualClock(0);
  const at: number[] = [];
  const every = clock.setInterval(() => at.push(clock.now()), 100);
  await clock.advance(350);
  assert.deepEqual(at, [100, 200, 300]);
  every.cancel();
  await clock.advance(1_000);
  assert.deepEqual(at, [100, 200, 300]);
});

test('manual clock: timers set by timers fire in the same advance when they fall due within it', async () => {
  const clock = new ManualClock(0);
  const at: number[] = [];
  clock.setTimeout(() => {
    at.push(clock.now());
    clock.setTimeout(() => at.push(clock.now()), 0);
    clock.setTimeout(() => at.push(clock.now()), 40);
    clock.setTimeout(() => at.push(clock.now()), 100);
  }, 10);
  await clock.advance(60);
  assert.deepEqual(at, [10, 10, 50]);
  await clock.advance(50);
  assert.deepEqual(at, [10, 10, 50, 110]);
});

test('manual clock: async work a timer starts settles before the next timer runs', async () => {
  const clock = new ManualClock(0);
  const log: string[] = [];
  clock.setTimeout(() => {
    void (async () => {
      await crypto.subtle.digest('SHA-256', new Uint8Array(8));
      log.push('digest done');
    })();
  }, 10);
  clock.setTimeout(() => log.push('second timer'), 20);
  await clock.advance(20);
  assert.deepEqual(log, ['digest done', 'second timer']);
});

test('manual clock: sleep resolves when the clock reaches it; until moves time to the next timer', async () => {
  const clock = new ManualClock(0);
  let woke = false;
  void sleep(clock, 500).then(() => (woke = true));
  await clock.advance(499);
  assert.isFalse(woke);
  await clock.until('the sleeper wakes', () => woke, 1_000);
  assert.equal(clock.now(), 500);
});

test('manual clock: until gives up once its span of clock time is spent, or at once with no timer and time standing still', async () => {
  const clock = new ManualClock(0);
  clock.setInterval(() => {}, 100);
  let error = await clock.until('never', () => false, 1_000).catch((e: unknown) => e);
  assert.instanceOf(error, Error);
  assert.match((error as Error).message, /timed out: never \(1000 ms on the clock\)/);
  assert.equal(clock.now(), 1_000);
  const still = new ManualClock(0);
  let done = false;
  void Promise.resolve().then(() => (done = true));
  await still.until('work that needs no timer', () => done, 0);
  assert.equal(still.now(), 0);
  error = await new ManualClock(0).until('nothing to wait for', () => false, 10).catch((e: unknown) => e);
  assert.instanceOf(error, Error);
});

test('system clock and randomness: real time passes, timers fire and cancel, bytes are random', async () => {
  const before = systemClock.now();
  let fired = 0;
  const cancelled = systemClock.setTimeout(() => fired--, 1);
  cancelled.cancel();
  await new Promise<void>((resolve) => {
    const every = systemClock.setInterval(() => {
      if (++fired === 2) {
        every.cancel();
        resolve();
      }
    }, 1);
  });
  await sleep(systemClock, 5);
  assert.equal(fired, 2);
  assert.isAtLeast(systemClock.now(), before + 5);
  const big = systemRandom.bytes(100_000);
  assert.equal(big.length, 100_000);
  assert.notDeepEqual(big.subarray(0, 32), big.subarray(70_000, 70_032), 'both calls to getRandomValues filled their part');
  assert.notDeepEqual(systemRandom.bytes(16), systemRandom.bytes(16));
});

test('seeded randomness: one seed gives the same bytes, another seed others', () => {
  assert.deepEqual(seededRandom(7).bytes(32), seededRandom(7).bytes(32));
  assert.notDeepEqual(seededRandom(7).bytes(32), seededRandom(8).bytes(32));
  const r = seededRandom(7);
  assert.notDeepEqual(r.bytes(8), r.bytes(8));
});
