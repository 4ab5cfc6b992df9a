import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { PACE_NODES } from '../net/broadcast-pace.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { CAPACITY_INTERVAL_MS, type Capacity } from './atlas.ts';
import { CapacityBroadcast } from './capacity-service.ts';
import type { SignalRequest } from './service.ts';
import type { AtlasEntry } from './types.ts';

/** A broadcast over a fake signals service whose atlas holds `others` nodes; the times it sent at, s from the start. */
function broadcast(others: number, capacity: () => Capacity) {
  const clock = testScheduler();
  const start = clock.now();
  const sent: number[] = [];
  const signals = {
    sendSignal: async (_request: SignalRequest) => {
      sent.push((clock.now() - start) / 1000);
      return { id: '', nonce: sent.length };
    },
    atlas: () => Array.from({ length: others }, (_, i) => ({ node_id: `${i}` }) as AtlasEntry),
  };
  const b = new CapacityBroadcast({ signals, clock, log: () => {} }, { probe: capacity });
  b.afterStart();
  return { clock, sent, stop: () => b.beforeStop() };
}

const steady = (): Capacity => ({ cpuCores: 2, memMb: 2048, runningJobs: 0, tags: [] });

test('capacity: every interval in a mesh of up to PACE_NODES nodes', async () => {
  const { clock, sent, stop } = broadcast(10, steady);
  await clock.advance(5 * CAPACITY_INTERVAL_MS);
  await stop();
  assert.deepEqual(sent, [2, 60, 120, 180, 240, 300]);
});

test('capacity: unchanged, paced to the atlas past PACE_NODES nodes; changed, sent at the next look', async () => {
  // Others and this node, ten times PACE_NODES: every ten intervals while nothing changes.
  let memMb = 2048;
  const { clock, sent, stop } = broadcast(10 * PACE_NODES - 1, () => ({ ...steady(), memMb }));
  await clock.advance(11 * CAPACITY_INTERVAL_MS);
  assert.deepEqual(sent, [2, 600]);
  memMb = 1024;
  await clock.advance(CAPACITY_INTERVAL_MS);
  await stop();
  assert.deepEqual(sent, [2, 600, 720]);
});
