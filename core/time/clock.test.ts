import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { seededRandom } from '../crypto/random.test-util.ts';
import { systemRandom } from '../crypto/random.ts';
import { sleep, systemClock } from './clock.ts';

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
