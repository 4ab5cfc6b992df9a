/**
 * The scheduler tests run on: it starts a day after the devnet genesis (2026-01-01), so blocks
 * mined in a test are not from the future, and its settles wait for WebCrypto calls in flight.
 * Tests of core code that takes no clock use it only to settle.
 */
import { Scheduler, type Turn } from './scheduler.ts';
import { watchWebCrypto } from './webcrypto-watch.ts';

const START_MS = Date.UTC(2026, 0, 2);

// A message task costs tens of µs where a timer costs a millisecond or more; Deno delivers
// messages among the microtasks, so it keeps the scheduler's timer turn.
const messageTurn: Turn = () =>
  new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = (): void => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
const turn = 'Deno' in globalThis ? undefined : messageTurn;

export function testScheduler(startMs = START_MS): Scheduler {
  const scheduler = new Scheduler(startMs, turn && { turn });
  watchWebCrypto(scheduler);
  return scheduler;
}
