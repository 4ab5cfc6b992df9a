/**
 * The scheduler tests run on: it starts a day after the devnet genesis (2026-01-01), so blocks
 * mined in a test are not from the future, and its settles wait for WebCrypto calls in flight.
 * Tests of core code that takes no clock use it only to settle. It turns on a message task where
 * the runner has a cheap one (test/harness.ts `messageTurn`): tens of µs where a timer takes a
 * millisecond or more.
 */
import { messageTurn } from '../../test/harness.ts';
import { Scheduler } from './scheduler.ts';
import { watchWebCrypto } from './webcrypto-watch.ts';

const START_MS = Date.UTC(2026, 0, 2);

export function testScheduler(startMs = START_MS): Scheduler {
  const scheduler = new Scheduler(startMs, messageTurn && { turn: messageTurn });
  watchWebCrypto(scheduler);
  return scheduler;
}
