import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { sleep } from './clock.ts';
import { testScheduler } from './scheduler.test-util.ts';
import { Scheduler } from './scheduler.ts';

test('scheduler: time moves only when advanced, and timers fire in time order, then in the order set', async () => {
  const clock = testScheduler(1_000);
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

test('scheduler: a cancelled timer never fires, and cancelling twice or after firing does nothing', async () => {
  const clock = testScheduler();
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

test('scheduler: an interval fires once per period across one long advance, until cancelled', async () => {
  const clock = testScheduler(0);
  const at: number[] = [];
  const every = clock.setInterval(() => at.push(clock.now()), 100);
  await clock.advance(350);
  assert.deepEqual(at, [100, 200, 300]);
  every.cancel();
  await clock.advance(1_000);
  assert.deepEqual(at, [100, 200, 300]);
});

test('scheduler: timers set by timers fire in the same advance when they fall due within it', async () => {
  const clock = testScheduler(0);
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

test('scheduler: async work a timer starts settles before the next timer runs', async () => {
  const clock = testScheduler(0);
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

test('scheduler: sleep resolves when the clock reaches it; until moves time to the next timer', async () => {
  const clock = testScheduler(0);
  let woke = false;
  void sleep(clock, 500).then(() => (woke = true));
  await clock.advance(499);
  assert.isFalse(woke);
  await clock.until('the sleeper wakes', () => woke, 1_000);
  assert.equal(clock.now(), 500);
});

test('scheduler: until gives up once its span of clock time is spent, or at once with no timer and time standing still', async () => {
  const clock = testScheduler(0);
  clock.setInterval(() => {}, 100);
  let error = await clock.until('never', () => false, 1_000).catch((e: unknown) => e);
  assert.instanceOf(error, Error);
  assert.match((error as Error).message, /timed out: never \(1000 ms on the clock\)/);
  assert.equal(clock.now(), 1_000);
  const still = testScheduler(0);
  let done = false;
  void Promise.resolve().then(() => (done = true));
  await still.until('work that needs no timer', () => done, 0);
  assert.equal(still.now(), 0);
  error = await testScheduler(0)
    .until('nothing to wait for', () => false, 10)
    .catch((e: unknown) => e);
  assert.instanceOf(error, Error);
});

test('scheduler: intervals and timeouts due at one instant run in the order they were first set, across many timers', async () => {
  const clock = new Scheduler(0);
  const log: string[] = [];
  clock.setInterval(() => log.push(`i@${clock.now()}`), 50);
  for (let i = 9; i >= 0; i--) clock.setTimeout(() => log.push(`t${i}@${clock.now()}`), i * 10);
  clock.setTimeout(() => log.push(`late@${clock.now()}`), 50);
  await clock.advance(100);
  assert.deepEqual(log, ['t0@0', 't1@10', 't2@20', 't3@30', 't4@40', 'i@50', 't5@50', 'late@50', 't6@60', 't7@70', 't8@80', 't9@90', 'i@100']);
});

test('scheduler: the same inputs give the same order of events, hand-overs included', async () => {
  const run = async (): Promise<string[]> => {
    const clock = new Scheduler(0);
    const log: string[] = [];
    for (const node of ['a', 'b', 'c']) {
      clock.setInterval(() => {
        log.push(`${node} tick ${clock.now()}`);
        void (async () => {
          await clock.nextTask();
          log.push(`${node} handed over`);
          await clock.nextTask();
          log.push(`${node} answered`);
        })();
      }, 10);
    }
    await clock.advance(30);
    return log;
  };
  const first = await run();
  assert.lengthOf(first, 27);
  assert.deepEqual(first.slice(0, 9), [
    'a tick 10',
    'b tick 10',
    'c tick 10',
    'a handed over',
    'b handed over',
    'c handed over',
    'a answered',
    'b answered',
    'c answered',
  ]);
  assert.deepEqual(await run(), first);
});

test('scheduler: hand-overs run in later tasks, in the order asked for, without time moving', async () => {
  const clock = new Scheduler(0);
  const log: string[] = [];
  void clock.nextTask().then(() => log.push('first'));
  void clock.nextTask().then(() => log.push('second'));
  await Promise.resolve();
  assert.deepEqual(log, [], 'not in a microtask');
  await clock.settle();
  assert.deepEqual(log, ['first', 'second']);
  assert.equal(clock.now(), 0);
});

test('scheduler: a settle waits for WebCrypto work that finishes on another thread, one call after another', async () => {
  const clock = testScheduler(0);
  const data = new Uint8Array(1 << 20);
  let rounds = 0;
  clock.setTimeout(() => {
    void (async () => {
      // Each call is started only when the one before has finished: no quiet count can tell.
      for (let i = 0; i < 20; i++) {
        data.set(new Uint8Array(await crypto.subtle.digest('SHA-256', data)));
        rounds++;
      }
    })();
  }, 5);
  await clock.advance(5);
  assert.equal(rounds, 20);
  const key = (await crypto.subtle.generateKey('Ed25519', false, ['sign', 'verify'])) as CryptoKeyPair;
  let verified: boolean | undefined;
  void crypto.subtle.sign('Ed25519', key.privateKey, data).then(async (signature) => {
    verified = await crypto.subtle.verify('Ed25519', key.publicKey, signature, data);
  });
  await clock.settle();
  assert.isTrue(verified);
});

test('scheduler: a settle waits until every watched component is idle, and for the tracked work its end starts', async () => {
  const clock = testScheduler(0);
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  let busy = true;
  const component = { idle: async (): Promise<void> => gate };
  const unwatch = clock.watch(component);
  let after = '';
  void gate.then(async () => {
    busy = false;
    await clock.nextTask();
    after = 'handed over';
  });
  // The component finishes on a real timer, outside anything the scheduler tracks.
  globalThis.setTimeout(release, 20);
  await clock.settle();
  assert.isFalse(busy);
  assert.equal(after, 'handed over');
  unwatch();
  clock.watch({ idle: () => new Promise<void>(() => {}) })();
  await clock.settle();
});

test('scheduler: tracked work rejected is still waited for, and its rejection stays with its owner', async () => {
  const clock = new Scheduler(0);
  const failing = clock.track(clock.nextTask().then(() => Promise.reject(new Error('boom'))));
  await clock.settle();
  const error = await failing.catch((e: unknown) => e);
  assert.match((error as Error).message, /boom/);
});
