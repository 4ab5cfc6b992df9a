import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { ManualClock } from '../testing/fixtures.ts';
import { bucketMemory, clientKeyOf, releaseBucketLock, TokenBucketLimiter } from './rate-limit.ts';

test('a client gets its burst at once, then the rate; Retry-After says when the next token comes', () => {
  const clock = new ManualClock();
  const limiter = new TokenBucketLimiter({ perSecond: 4, burst: 10 }, clock);
  for (let i = 0; i < 10; i++) assert.isTrue(limiter.take('a').ok, `request ${i}`);
  assert.deepInclude(limiter.take('a'), { ok: false, retryAfterSeconds: 1 });
  assert.isTrue(limiter.take('b').ok, 'another client has its own bucket');
  clock.advance(250);
  assert.isTrue(limiter.take('a').ok);
  assert.isFalse(limiter.take('a').ok);
  clock.advance(10_000);
  for (let i = 0; i < 10; i++) assert.isTrue(limiter.take('a').ok, 'refilled to the burst, not beyond');
  assert.isFalse(limiter.take('a').ok);
});

test('Retry-After is whole seconds, at least 1, long enough for one token', () => {
  const clock = new ManualClock();
  const slow = new TokenBucketLimiter({ perSecond: 0.1, burst: 1 }, clock);
  assert.isTrue(slow.take('a').ok);
  assert.deepInclude(slow.take('a'), { ok: false, retryAfterSeconds: 10 });
  clock.advance(9_000);
  assert.deepInclude(slow.take('a'), { ok: false, retryAfterSeconds: 1 });
  clock.advance(1_000);
  assert.isTrue(slow.take('a').ok);
});

test('rate 0 turns the limit off; a clock that steps back does not drain a bucket', () => {
  const clock = new ManualClock();
  const off = new TokenBucketLimiter({ perSecond: 0, burst: 1 }, clock);
  for (let i = 0; i < 1000; i++) assert.isTrue(off.take('a').ok);
  const limiter = new TokenBucketLimiter({ perSecond: 1, burst: 2 }, clock);
  assert.isTrue(limiter.take('a').ok);
  clock.advance(-60_000);
  assert.isTrue(limiter.take('a').ok);
  assert.isFalse(limiter.take('a').ok);
  assert.throws(() => new TokenBucketLimiter({ perSecond: -1, burst: 1 }, clock), RangeError);
  assert.throws(() => new TokenBucketLimiter({ perSecond: 1, burst: 0 }, clock), RangeError);
});

test('the table of clients stays bounded: idle buckets go first, then the oldest', () => {
  const clock = new ManualClock();
  const limiter = new TokenBucketLimiter({ perSecond: 1, burst: 5, maxClients: 100 }, clock);
  for (let i = 0; i < 100; i++) limiter.take(`idle-${i}`);
  clock.advance(10_000);
  limiter.take('new');
  assert.equal(limiter.size, 1, 'refilled buckets are the same as none');
  for (let i = 0; i < 300; i++) limiter.take(`busy-${i}`);
  assert.isAtMost(limiter.size, 100);
});

test('clients are keyed by IPv4 address and by IPv6 /64', () => {
  assert.equal(clientKeyOf('203.0.113.9'), '203.0.113.9');
  assert.equal(clientKeyOf('::ffff:203.0.113.9'), '203.0.113.9');
  assert.equal(clientKeyOf('2001:db8:1:2:aaaa::1'), clientKeyOf('2001:0db8:0001:0002:bbbb:cccc:dddd:eeee'));
  assert.notEqual(clientKeyOf('2001:db8:1:2::1'), clientKeyOf('2001:db8:1:3::1'));
  assert.equal(clientKeyOf('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(clientKeyOf('::1'), '0:0:0:0::/64');
  assert.equal(clientKeyOf('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(clientKeyOf(undefined), 'unknown');
});

test('RateLimit-Policy and RateLimit state the bucket: its size and refill window, the tokens left and when it is full again', () => {
  const clock = new ManualClock();
  const limiter = new TokenBucketLimiter({ perSecond: 4, burst: 10 }, clock);
  const first = limiter.take('a');
  assert.deepEqual(limiter.fields(first), { 'ratelimit-policy': '"burst";q=10;w=3', ratelimit: '"burst";r=9;t=1' });
  for (let i = 0; i < 9; i++) limiter.take('a');
  const refused = limiter.take('a');
  assert.isFalse(refused.ok);
  assert.deepEqual(limiter.fields(refused), { 'ratelimit-policy': '"burst";q=10;w=3', ratelimit: '"burst";r=0;t=1' });
  clock.advance(1000);
  const again = limiter.take('a');
  assert.deepEqual(limiter.fields(again), { 'ratelimit-policy': '"burst";q=10;w=3', ratelimit: '"burst";r=3;t=2' });
  const off = new TokenBucketLimiter({ perSecond: 0, burst: 1 }, clock);
  assert.isUndefined(off.fields(off.take('a')));
});

test('limiters given the same memory share their buckets, as the threads of one server do', () => {
  const clock = new ManualClock();
  const memory = bucketMemory(1000);
  const one = new TokenBucketLimiter({ perSecond: 1, burst: 4, memory }, clock);
  const two = new TokenBucketLimiter({ perSecond: 1, burst: 4, memory }, clock);
  assert.isTrue(one.take('a').ok);
  assert.isTrue(two.take('a').ok);
  assert.isTrue(one.take('a').ok);
  assert.deepInclude(two.take('a'), { ok: true, tokens: 0 });
  assert.isFalse(one.take('a').ok, 'the burst is the client’s, not each thread’s');
  assert.isTrue(two.take('b').ok);
  assert.equal(one.size, 2);
  assert.throws(() => new TokenBucketLimiter({ perSecond: 1, burst: 1, memory: new ArrayBuffer(20) }, clock), RangeError);
  assert.throws(() => bucketMemory(0), RangeError);
});

test("the lock of a thread that died inside a take is released for it, and no other thread's", () => {
  const clock = new ManualClock();
  const memory = bucketMemory(100);
  const main = new TokenBucketLimiter({ perSecond: 1, burst: 4, memory }, clock);
  // Thread 3 stopped between taking the table's lock (its first Int32) and letting it go.
  const lock = new Int32Array(memory, 0, 1);
  const held = 3 + 1;
  Atomics.store(lock, 0, held);
  releaseBucketLock(memory, 2);
  assert.equal(Atomics.load(lock, 0), held, 'thread 2 does not hold it');
  releaseBucketLock(memory, 3);
  assert.equal(Atomics.load(lock, 0), 0);
  assert.isTrue(main.take('a').ok, 'the others take again');
  const worker = new TokenBucketLimiter({ perSecond: 1, burst: 4, memory, owner: 3 }, clock);
  assert.isTrue(worker.take('a').ok);
  assert.equal(Atomics.load(lock, 0), 0, 'a take lets it go');
  assert.throws(() => new TokenBucketLimiter({ perSecond: 1, burst: 4, owner: -1 }, clock), RangeError);
});

test('a full table takes a refilled bucket first, else the least recently used one, whose client starts afresh', () => {
  const clock = new ManualClock();
  const limiter = new TokenBucketLimiter({ perSecond: 1, burst: 3, maxClients: 4 }, clock);
  for (const client of ['a', 'b', 'c', 'd']) {
    for (let i = 0; i < 3; i++) assert.isTrue(limiter.take(client).ok);
    clock.advance(10);
  }
  assert.equal(limiter.size, 4);
  assert.isFalse(limiter.take('b').ok, 'b is busy, and now the most recently used');
  assert.isTrue(limiter.take('e').ok, 'e takes a slot');
  assert.equal(limiter.size, 4);
  assert.isTrue(limiter.take('a').ok, 'a, the least recently used, lost its bucket to e and got a fresh one');
  assert.isFalse(limiter.take('b').ok, 'b kept its bucket');
  clock.advance(10_000);
  assert.equal(limiter.size, 0, 'refilled buckets are the same as none');
  for (const client of ['f', 'g', 'h', 'i']) limiter.take(client);
  assert.equal(limiter.size, 4);
});
