import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { key, mine, openChain } from '../chain/testnet.test-util.ts';
import { toHex } from '../encoding/hex.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { startNode } from './node.test-util.ts';

const A = key(1);
const B = key(2);

test('sync tells the network the heights its peers announce, which the peer list shows', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 3);
  const a = await startNode(bus, chainA, A, clock);
  const b = await startNode(bus, await openChain(), B, clock);
  const netA = bus.members.get(toHex(A.publicKey))!;
  const netB = bus.members.get(toHex(B.publicKey))!;
  try {
    await clock.until('b lists a at height 3', () => netB.peers().some((p) => toHex(p.node) === toHex(A.publicKey) && p.height === 3), 0);
    // b's new height goes out with its next announcement (1 s and 3 s after a peer joins).
    await clock.until('a lists b once b caught up', () => netA.peers().some((p) => toHex(p.node) === toHex(B.publicKey) && p.height === 3), 5_000);
    // The tip a peer announced, hash and all: what a light page checks against the chain it holds.
    assert.deepEqual(
      b.services.sync.sync.announcedTips().map((t) => [toHex(t.node), t.height, toHex(t.hash)]),
      [[toHex(A.publicKey), 3, toHex(chainA.tip.hash)]],
    );
  } finally {
    await a.stop();
    await b.stop();
  }
});
