// The SSE keep-alive of the contract (node-api.md §6: "a keep-alive comment is sent every 15 s on
// idle connections"), on simulated time: nothing at 14,999 ms of quiet, the comment at 15,000.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import type { Clock, Timer } from '../time/clock.ts';
import { eventStream, SSE_KEEP_ALIVE_MS, type Subscribe } from './sse.ts';

/** Time that moves only by `advance`, firing each timer at its instant. */
function steppedClock(): Clock & { advance(ms: number): void } {
  let now = 0;
  const timers = new Set<{ at: number; fn: () => void }>();
  return {
    now: () => now,
    setTimeout(fn, ms): Timer {
      const timer = { at: now + ms, fn };
      timers.add(timer);
      return { cancel: () => void timers.delete(timer) };
    },
    setInterval(): Timer {
      throw new Error('not used by the stream');
    },
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const next = [...timers].filter((t) => t.at <= until).sort((x, y) => x.at - y.at)[0];
        if (next === undefined) break;
        timers.delete(next);
        now = next.at;
        next.fn();
      }
      now = until;
    },
  };
}

/** Lets the stream's queued chunks reach a pending read (promise jobs only, no real time). */
async function promiseJobs(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

test('sse: the keep-alive is 15 s', () => {
  assert.equal(SSE_KEEP_ALIVE_MS, 15_000);
});

test('sse: an idle stream gets its keep-alive comment after 15 s of quiet, and 15 s after an event', async () => {
  const clock = steppedClock();
  let send: (event: unknown) => void = () => {};
  const subscribe: Subscribe<unknown> = (listener) => {
    send = listener;
    return () => {};
  };
  const reader = eventStream(subscribe, { keepAliveMs: SSE_KEEP_ALIVE_MS, maxQueued: 10, clock }).getReader();
  const text = new TextDecoder();
  let got: string | undefined;
  const next = (): void => {
    got = undefined;
    void reader.read().then(({ value }) => (got = text.decode(value)));
  };

  next();
  clock.advance(14_999);
  await promiseJobs();
  assert.isUndefined(got, 'nothing before 15 s');
  clock.advance(1);
  await promiseJobs();
  assert.equal(got, ': keep-alive\n\n');

  next();
  clock.advance(5_000);
  send({ n: 1 });
  await promiseJobs();
  assert.equal(got, 'data: {"n":1}\n\n');
  next();
  clock.advance(14_999);
  await promiseJobs();
  assert.isUndefined(got, 'an event restarts the quiet time');
  clock.advance(1);
  await promiseJobs();
  assert.equal(got, ': keep-alive\n\n');
  await reader.cancel();
});
