import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { key } from '../chain/testnet.test-util.ts';
import { median } from '../collections/median.ts';
import { seededRandom } from '../crypto/random.test-util.ts';
import type { Random } from '../crypto/random.ts';
import { toHex } from '../encoding/hex.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { PeerPings, PING_INTERVAL_MS, pingFigures } from './peer-pings.ts';

const A = key(1);
const B = key(2);
const C = key(3);

/** A Random whose every draw is the middle of the range: each round comes exactly one interval after the last. */
const MIDDLE: Random = { bytes: (length) => Object.assign(new Uint8Array(length), { 0: 0x80 }) };

test('peer pings: the median of the samples kept, the mean of the middle two for an even count', () => {
  assert.isNull(median([]));
  assert.equal(median([7]), 7);
  assert.equal(median([30, 10, 20]), 20);
  assert.equal(median([40, 10, 30, 20]), 25);
});

test("peer pings: rounds come every 10 s ± 25 %, jittered, on the node's clock", async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const a = bus.join(A.publicKey);
  bus.join(B.publicKey);
  const at: number[] = [];
  const ping = a.ping.bind(a);
  a.ping = (peer, options) => {
    at.push(clock.now());
    return ping(peer, options);
  };
  const pings = new PeerPings({ network: a, clock, random: seededRandom(7) });
  pings.start();
  try {
    await clock.advance(60 * PING_INTERVAL_MS);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    assert.isAtLeast(gaps.length, 40);
    for (const gap of gaps) assert.isTrue(gap >= 7_500 && gap <= 12_500, `${gap} ms between rounds`);
    assert.isAbove(new Set(gaps).size, gaps.length / 2, 'the rounds do not keep step');
    assert.isTrue(at[0]! - (clock.now() - 60 * PING_INTERVAL_MS) <= 12_500, 'the first round comes within one interval');
  } finally {
    pings.stop();
  }
  const before = at.length;
  await clock.advance(3 * PING_INTERVAL_MS);
  assert.equal(at.length, before, 'no rounds once stopped');
});

test('peer pings: the figures of a window of outcomes: median and jitter of its round trips, the share that failed', () => {
  assert.deepEqual(pingFigures([]), { medianMs: null, samplesMs: [], jitterMs: 0, loss: 0, outcomes: 0 });
  assert.deepEqual(pingFigures([null, null]), { medianMs: null, samplesMs: [], jitterMs: 0, loss: 1, outcomes: 2 });
  assert.deepEqual(pingFigures([7]), { medianMs: 7, samplesMs: [7], jitterMs: 0, loss: 0, outcomes: 1 });
  // Jitter runs over consecutive round trips, a failure between them skipped: |30 − 10| and |20 − 30|.
  assert.deepEqual(pingFigures([10, null, 30, 20, null]), { medianMs: 20, samplesMs: [10, 30, 20], jitterMs: 15, loss: 0.4, outcomes: 5 });
});

test('peer pings: each peer keeps its last 10 outcomes, round trips and failures, whose round trips and median GET /peers shows; a gone peer is forgotten', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const a = bus.join(A.publicKey);
  const b = bus.join(B.publicKey);
  bus.join(C.publicKey);
  const logs: string[] = [];
  const heard: [string, number | null][] = [];
  const pings = new PeerPings({ network: a, clock, random: MIDDLE, log: (line) => logs.push(line) });
  pings.onOutcome((peer, rtt) => {
    if (toHex(peer) === toHex(B.publicKey)) heard.push([JSON.stringify(pings.figures(B.publicKey).samplesMs), rtt]);
  });
  pings.start();
  try {
    assert.deepEqual(pings.figures(B.publicKey), pingFigures([]));
    bus.setLatency(A.publicKey, C.publicKey, 3);
    const rtts = [12, 50, 20, 30, 41, 100, 8, 15, 60, 25, 33, 70];
    for (const [i, rtt] of rtts.entries()) {
      bus.setLatency(A.publicKey, B.publicKey, rtt);
      await clock.until(`sample ${i + 1}`, () => pings.figures(B.publicKey).samplesMs.at(-1) === rtt, PING_INTERVAL_MS + rtt);
    }
    assert.deepEqual(pings.figures(B.publicKey), pingFigures(rtts.slice(2)));
    assert.equal(pings.figures(B.publicKey).medianMs, 31.5);
    assert.deepEqual(pings.figures(C.publicKey).samplesMs, new Array(10).fill(3));
    // A listener hears each outcome once it is in the window.
    assert.deepEqual(heard.at(-1), [JSON.stringify(rtts.slice(2)), 70]);
    // A ping slower than the timeout (5 s) is abandoned: a failure in the window, and the next round
    // pings again. The failure is said once, not at every round.
    bus.setLatency(A.publicKey, B.publicKey, 6_000);
    await clock.advance(2 * PING_INTERVAL_MS + 6_000);
    assert.deepEqual(pings.figures(B.publicKey), pingFigures([41, 100, 8, 15, 60, 25, 33, 70, null, null]));
    assert.include(pings.figures(B.publicKey), { medianMs: 37, loss: 0.2, outcomes: 10 });
    assert.deepEqual(
      heard.slice(-2).map(([, rtt]) => rtt),
      [null, null],
    );
    assert.equal(logs.length, 1, logs.join('\n'));
    assert.match(logs[0]!, /timed out/);
    bus.setLatency(A.publicKey, B.publicKey, 7);
    await clock.advance(PING_INTERVAL_MS);
    assert.deepEqual(pings.figures(B.publicKey).samplesMs, [100, 8, 15, 60, 25, 33, 70, 7]);
    assert.equal(pings.figures(B.publicKey).loss, 0.2);
    // B leaves: its window goes at the next round; C's stays.
    bus.leave(b);
    await clock.advance(PING_INTERVAL_MS);
    assert.deepEqual(pings.figures(B.publicKey), pingFigures([]));
    assert.equal(pings.figures(C.publicKey).medianMs, 3);
  } finally {
    pings.stop();
  }
});

test('peer pings: a schedule out of range is refused', () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const network = bus.join(A.publicKey);
  for (const schedule of [{ intervalMs: 0 }, { intervalMs: 1.5 }, { jitter: 1 }, { jitter: -0.1 }, { window: 0 }, { window: 2.5 }]) {
    assert.throws(() => new PeerPings({ network, clock, random: MIDDLE, schedule }), RangeError);
  }
});
