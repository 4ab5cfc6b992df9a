import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { everyPaced, PACE_NODES, pacedPeriodMs } from './broadcast-pace.ts';

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
