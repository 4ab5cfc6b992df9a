import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { MAX_BLOCKS_PER_RESPONSE } from '../chain/chain.ts';
import { key, mine, openChain, SlowStore } from '../chain/testnet.test-util.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { startNode } from './node.test-util.ts';

const A = key(1);
const B = key(2);

test('sync: the next range is asked for while one is applied, and no more than three ranges are under way, the next as soon as the first is applied', async () => {
  const ranges = 4;
  const chainA = await openChain();
  await mine(chainA, A, (ranges - 1) * MAX_BLOCKS_PER_RESPONSE + 1);
  // B's writes are slow, so that its first range is still being applied when the next answer is in.
  const clock = testScheduler();
  const store = new SlowStore(clock);
  const chainB = await openChain({ store });
  store.delayMs = 150;
  // B's tip at each request A serves.
  const servedAt: number[] = [];
  const serve = chainA.blockBytesFrom.bind(chainA);
  chainA.blockBytesFrom = (from, count, maxBytes) => {
    servedAt.push(chainB.tip.height);
    return serve(from, count, maxBytes);
  };
  const bus = new MemoryBus(clock);
  const a = await startNode(bus, chainA, A, clock);
  const b = await startNode(bus, chainB, B, clock, { syncTimeoutMs: 60_000 });
  try {
    await clock.until('b catches up', () => chainB.tip.height === chainA.tip.height, 60_000);
    assert.lengthOf(servedAt, ranges);
    // The second and third ranges were asked for before the first was applied ...
    assert.deepEqual(servedAt.slice(0, 3), [0, 0, 0]);
    // ... the fourth once the first was, while the second was being applied: one applied, one
    // checked, one travelling.
    assert.equal(servedAt[3], MAX_BLOCKS_PER_RESPONSE);
  } finally {
    await a.stop();
    await b.stop();
  }
});
