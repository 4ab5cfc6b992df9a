// The relay server's guard: a peer asking too often is refused and penalised, one address holds
// a bounded share of the reservations, a renewal keeps its slot, and the window moves with time.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { DEFAULT_RELAY_LIMITS, RelayGuard } from './relay-limits.ts';

test('relay guard: requests past the per-peer bound are refused and penalised until the window moves on', async () => {
  const clock = testScheduler();
  const guard = new RelayGuard(clock);
  for (let i = 0; i < DEFAULT_RELAY_LIMITS.requestsPerPeer; i++) assert.deepEqual(guard.judge('p', '198.18.0.1', []), { admit: true });
  const flood = guard.judge('p', '198.18.0.1', []);
  assert.isFalse(flood.admit);
  assert.isTrue(!flood.admit && flood.penalise);
  assert.match(!flood.admit ? flood.reason : '', /^reservation-flood: 5 requests in 10 min, at most 4$/);
  // Another peer is not held to p's count.
  assert.deepEqual(guard.judge('q', '198.18.0.1', []), { admit: true });
  await clock.advance(DEFAULT_RELAY_LIMITS.requestWindowMs);
  assert.deepEqual(guard.judge('p', '198.18.0.1', []), { admit: true });
});

test('relay guard: one address holds at most reservationsPerIp; a holder renews whatever the others hold', () => {
  const guard = new RelayGuard(testScheduler(), { reservationsPerIp: 2 });
  const held = [
    { peer: 'a', ip: '198.18.0.7' },
    { peer: 'b', ip: '198.18.0.7' },
  ];
  const refused = guard.judge('c', '198.18.0.7', held);
  assert.deepEqual(refused, { admit: false, penalise: false, reason: 'reservations-per-ip: 2 held from 198.18.0.7' });
  assert.deepEqual(guard.judge('a', '198.18.0.7', held), { admit: true });
  assert.deepEqual(guard.judge('d', '198.18.0.8', held), { admit: true });
  assert.deepEqual(guard.judge('e', null, held), { admit: true });
});
