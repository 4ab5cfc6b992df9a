/**
 * Sync across forks, on the memory network and simulated time: partitions of any depth heal once
 * the halves can talk again, the fork point is found exactly (no range of blocks the requester
 * holds is asked for), a peer is not blamed for answering with blocks the requester holds, and a
 * held branch has the blocks it would replace read back four heights per block it holds.
 */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { MAX_BLOCKS_PER_RESPONSE } from '../chain/chain.ts';
import { key, mine, openChain } from '../chain/testnet.test-util.ts';
import { toHex } from '../encoding/hex.ts';
import { PeerBusyError } from '../net/errors.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { startNode } from './node.test-util.ts';
import { forkedChains, partitionHeals, servedFrom } from './partition.test-util.ts';

const A = key(1);
const B = key(2);
const C = key(3);

// The 10,000-block case is in sync-deep-fork.node.test.ts: it mines 20,000 blocks, longer than the
// browser runner gives a test.
for (const depth of [100, 1_300]) {
  test(`sync: halves that mined ${depth.toLocaleString('en')} blocks apart converge once they can talk again`, () => partitionHeals(depth));
}

test('sync: a fork below the dense part of the locator is found exactly, in a few round trips', async () => {
  // 16 entries cover the last 16 heights; a fork 300 blocks below the tip falls in a gap of the
  // doubling part, which narrowing closes.
  const [chainA, chainB] = await forkedChains(200, 300, 310);
  const served = servedFrom(chainB);
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  let requests = 0;
  const a = await startNode(bus, chainA, A, clock);
  const netA = bus.members.get(toHex(A.publicKey))!;
  const request = netA.request.bind(netA);
  netA.request = (peer, protocol, data, options) => {
    requests++;
    return request(peer, protocol, data, options);
  };
  const b = await startNode(bus, chainB, B, clock);
  try {
    await clock.until('a adopts b', () => toHex(a.chain.tip.hash) === toHex(chainB.tip.hash), 10_000);
    assert.deepEqual(served, [201], 'one range, from just past the fork');
    // The sparse locator, at most three narrowing ones (a 256-block gap: 63-fold, then to the block), then the range.
    assert.isAtMost(requests, 5);
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('sync: a peer that answers with blocks the requester holds is neither blamed nor distrusted', async () => {
  const chainB = await openChain();
  await mine(chainB, B, 30);
  const chainA = await openChain();
  await chainA.addBranch(await chainB.blocksFrom(1, 20));
  // B's first answer is stale: blocks 1 to 10, which A holds (as a race with gossip, or a target
  // that answered from below, would give). Its next answers are right.
  let stale = true;
  const serve = chainB.blockBytesFrom.bind(chainB);
  chainB.blockBytesFrom = (start, count, maxBytes) => {
    if (!stale) return serve(start, count, maxBytes);
    stale = false;
    return serve(1, 10, maxBytes);
  };
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const a = await startNode(bus, chainA, A, clock);
  const b = await startNode(bus, chainB, B, clock);
  try {
    await clock.until('a reaches b', () => a.chain.tip.height === 30, 10_000);
    assert.isFalse(stale, 'the stale answer was sent');
    assert.deepEqual(bus.members.get(toHex(A.publicKey))!.penalties, []);
    assert.includeMembers(
      a.services.sync.sync.announcedTips().map((t) => toHex(t.node)),
      [toHex(B.publicKey)],
      'b still counts as a peer ahead or level',
    );
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('sync: a peer over its serve budget answers busy, and the requester gets the blocks from another', async () => {
  const chainB = await openChain();
  await mine(chainB, B, 1_200);
  const chainC = await openChain();
  for (let h = 1; h <= 1_200; h += MAX_BLOCKS_PER_RESPONSE) await chainC.addBranch(await chainB.blocksFrom(h, MAX_BLOCKS_PER_RESPONSE));
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  // B serves anyone 1 KiB a second: one range, then busy.
  const b = await startNode(bus, chainB, B, clock, { serveBytesPerSecond: 1024 });
  const a = await startNode(bus, await openChain(), A, clock);
  const busy: string[] = [];
  const netA = bus.members.get(toHex(A.publicKey))!;
  const request = netA.request.bind(netA);
  netA.request = async (peer, protocol, data, options) => {
    try {
      return await request(peer, protocol, data, options);
    } catch (error) {
      if (error instanceof PeerBusyError) busy.push(toHex(peer));
      throw error;
    }
  };
  try {
    await clock.until('a asked b and was told b is busy', () => busy.length > 0, 10_000);
    const c = await startNode(bus, chainC, C, clock);
    try {
      await clock.until('a catches up', () => a.chain.tip.height === 1_200, 10_000);
      assert.deepEqual(netA.penalties, [], 'busy is no fault');
      assert.isTrue(
        busy.every((peer) => peer === toHex(B.publicKey)),
        'only b was busy',
      );
    } finally {
      await c.stop();
    }
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('sync: a held branch has the chain read back four heights for each of its blocks, towards the fork point', async () => {
  const shared = 20;
  const [chainA, chainB] = await forkedChains(shared, 600, 610);
  const asked: [number, number][] = [];
  const readRewindAhead = chainA.readRewindAhead.bind(chainA);
  chainA.readRewindAhead = (forkHeight, toHeight) => {
    asked.push([forkHeight, toHeight]);
    readRewindAhead(forkHeight, toHeight);
  };
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const a = await startNode(bus, chainA, A, clock);
  const b = await startNode(bus, chainB, B, clock);
  try {
    await clock.until('a adopts b', () => toHex(a.chain.tip.hash) === toHex(chainB.tip.hash), 10_000);
    // The first range held, 500 blocks, covers 2,000 heights: all 600 this node rewinds, so the
    // switch is prepared while the rest of the branch comes.
    assert.deepEqual(asked[0], [shared, shared + 4 * MAX_BLOCKS_PER_RESPONSE]);
  } finally {
    await a.stop();
    await b.stop();
  }
});
