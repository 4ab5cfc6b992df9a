/**
 * Sync across forks, on the memory network and simulated time: partitions of any depth heal once
 * the halves can talk again, the fork point is found exactly (no range of blocks the requester
 * holds is asked for), and a peer is not blamed for answering with blocks the requester holds.
 */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { MAX_BLOCKS_PER_RESPONSE } from '../chain/chain.ts';
import { copyChain, key, mine, nextBlock, openChain, params } from '../chain/testnet.test-util.ts';
import { goesFirst, tieTip } from '../chain/tie.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { type Block, signBlock } from '../ledger/block.ts';
import { PeerBusyError } from '../net/errors.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { TOPICS } from '../net/network.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { startNode } from './node.test-util.ts';
import { forkedChains, partitionHeals, servedFrom, startHalves } from './partition.test-util.ts';

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

test('sync: of halves level after a partition, the one whose rival goes first holds it as a tie, and both keep their tips', async () => {
  const [chainA, chainB] = await forkedChains(40, 20, 20);
  const tipA = toHex(chainA.tip.hash);
  const tipB = toHex(chainB.tip.hash);
  // The tie goes to the earlier tip (then the lower hash): only the other half has a tie to break.
  const bFirst = goesFirst(chainB.tip, chainA.tip);
  const { clock, bus, a, b, netA, netB } = await startHalves(chainA, chainB);
  const [later, first] = bFirst ? [a, b] : [b, a];
  try {
    assert.isNull(later.services.sync.levelBranch(), 'apart, no tie is known');
    bus.link(netA, netB);
    await clock.until('the later half holds the other branch', () => later.services.sync.levelBranch() !== null, 10_000);
    assert.equal(later.services.sync.levelBranch()!.forkHeight, 40);
    assert.equal(toHex(later.services.sync.levelBranch()!.hash), bFirst ? tipB : tipA);
    assert.isNull(first.services.sync.levelBranch(), 'a rival that goes after is no tie to break');
    assert.equal(toHex(a.chain.tip.hash), tipA, 'a level branch replaces nothing (node-api.md, Ledger rules 7)');
    assert.equal(toHex(b.chain.tip.hash), tipB);
    assert.deepEqual([...netA.penalties, ...netB.penalties], [], 'nobody was blamed');
  } finally {
    await a.stop();
    await b.stop();
  }
});

/** A node on a chain of 11 blocks, and a block at its tip's height that goes before its tip, made by `sign`. */
async function raceAtTip(sign: (first: Block) => Promise<Block>) {
  const chain = await openChain();
  await mine(chain, A, 10);
  const [one, two] = [await nextBlock(await copyChain(chain), A), await nextBlock(await copyChain(chain), B)];
  const [first, ours] = goesFirst(tieTip(one), tieTip(two)) ? [one, two] : [two, one];
  const rival = await sign(first);
  await chain.addBlock(ours);
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const a = await startNode(bus, chain, A, clock);
  const netA = bus.members.get(toHex(A.publicKey))!;
  await netA.receive({ topic: TOPICS.blocks, data: rival.bytes, origin: C.publicKey, peer: C.publicKey }, new Set([toHex(A.publicKey)]));
  await clock.advance(1_000);
  const tie = a.services.sync.levelBranch();
  const tip = toHex(a.chain.tip.hash);
  await a.stop();
  assert.equal(tip, toHex(ours.hash), 'the first block seen stays the tip');
  return { tie, rival };
}

test('sync: a competing block at the tip that goes first is a tie once applied ahead and valid', async () => {
  const { tie, rival } = await raceAtTip(async (first) => first);
  assert.equal(toHex(tie!.hash), toHex(rival.hash));
  assert.equal(tie!.forkHeight, 10);
});

test('sync: a competing block that lies about its state is no tie', async () => {
  const { tie } = await raceAtTip(async (first) => {
    const { header } = first;
    return signBlock(params.network, { ...header, state_root: new Uint8Array(32).fill(7) }, [], bytesEqual(header.producer, A.publicKey) ? A : B);
  });
  assert.isNull(tie);
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
