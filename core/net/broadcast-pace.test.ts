import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { everyPaced, PACE_NODES, PEER_RELAY_SHARE, pacedPeriodMs, RELAY_BUDGET_FACTOR, RelayBudget } from './broadcast-pace.ts';

test('pace: the base period up to PACE_NODES nodes, stretched in proportion past them', () => {
  assert.equal(pacedPeriodMs(30_000, 1), 30_000);
  assert.equal(pacedPeriodMs(30_000, PACE_NODES), 30_000);
  assert.equal(pacedPeriodMs(30_000, 10 * PACE_NODES), 300_000);
  // What each node receives, N broadcasts per period, stays at PACE_NODES per base period.
  for (const nodes of [100, 1_000, 10_000]) assert.closeTo((nodes / pacedPeriodMs(60_000, nodes)) * 60_000, PACE_NODES, 0.01);
});

test('pace: everyPaced works the period out again at each call, and stops when cancelled', async () => {
  const clock = testScheduler();
  const start = clock.now();
  let nodes = 1;
  const calls: number[] = [];
  const timer = everyPaced(
    clock,
    1_000,
    () => nodes,
    () => calls.push(clock.now() - start),
  );
  await clock.advance(2_000);
  nodes = 4 * PACE_NODES;
  await clock.advance(10_000);
  timer.cancel();
  await clock.advance(10_000);
  assert.deepEqual(calls, [1_000, 2_000, 3_000, 7_000, 11_000]);
});

test('pace: everyPaced never waits longer than its maxMs, however large the mesh', async () => {
  const clock = testScheduler();
  const start = clock.now();
  const calls: number[] = [];
  const timer = everyPaced(
    clock,
    1_000,
    () => 100 * PACE_NODES,
    () => calls.push(clock.now() - start),
    5_000,
  );
  await clock.advance(12_000);
  timer.cancel();
  assert.deepEqual(calls, [5_000, 10_000]);
});

test('pace: a relay budget passes on a burst of twice PACE_NODES, then as many per base period', async () => {
  const clock = testScheduler();
  const budget = new RelayBudget(clock, 60_000);
  // From many peers, one each: the budget is what binds.
  let peer = 0;
  const from = (count: number) => Array.from({ length: count }, () => budget.take(`p${peer++}`)).filter(Boolean).length;
  assert.equal(from(100), RELAY_BUDGET_FACTOR * PACE_NODES);
  // Refilled at the same number per base period: half a period later, half as many.
  await clock.advance(30_000);
  assert.equal(from(100), PACE_NODES);
  // Never more than a burst, however long it waited.
  await clock.advance(3_600_000);
  assert.equal(from(100), RELAY_BUDGET_FACTOR * PACE_NODES);
});

test('pace: one peer passes on at most a quarter of a relay budget; the others still get theirs', async () => {
  const clock = testScheduler();
  const budget = new RelayBudget(clock, 60_000);
  assert.equal(Array.from({ length: 100 }, () => budget.take('minting identities')).filter(Boolean).length, PEER_RELAY_SHARE);
  assert.equal(Array.from({ length: 100 }, () => budget.take('honest')).filter(Boolean).length, PEER_RELAY_SHARE);
});
