/**
 * Hostile peers on the gossip topics, on the in-memory bus: what a peer that lies, floods or relays
 * junk can make an honest node do. Each test names the attack; the node must stay live, bounded,
 * and blame only whoever is at fault.
 */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import type { Chain } from '../chain/chain.ts';
import { copyChain, key, mine, mineWeight, nextBlock, openChain, tx } from '../chain/testnet.test-util.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { CREDIT } from '../encoding/amount.ts';
import { encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { type Block, signBlock } from '../ledger/block.ts';
import { signTx, type Tx } from '../ledger/tx.ts';
import { PeerBusyError } from '../net/errors.ts';
import { MemoryBus, type MemoryNetwork } from '../net/memory.test-util.ts';
import { TOPICS } from '../net/network.ts';
import { sleep } from '../time/clock.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import { type FullNode, startNode } from './node.test-util.ts';
import { SEGMENTS_PROTOCOL, Segments, segmentRequestCodec } from './segments.ts';
import { Sync } from './sync.ts';
import { heightCodec, MAX_SYNC_ANSWER_BYTES, SYNC_PROTOCOL, syncRequestCodec, syncResponseCodec } from './wire.ts';

const A = key(1);
const B = key(2);
const node = (bus: MemoryBus, clock: Scheduler, chain: Chain, k: SigningKey, mine = false, syncTimeoutMs = 500): Promise<FullNode> =>
  startNode(bus, chain, k, clock, { mine, syncTimeoutMs });

/** A hostile member: announces `height` every 100 ms and answers sync requests as `answer` says. */
function liar(
  bus: MemoryBus,
  clock: Scheduler,
  k: SigningKey,
  height: number,
  answer: 'never' | 'empty',
): { net: MemoryNetwork; asked: () => number; stop: () => void } {
  const net = bus.join(k.publicKey);
  let asked = 0;
  net.handle(TOPICS.heights, async () => 'ignore');
  net.serve(SYNC_PROTOCOL, async ({ signal }) => {
    asked++;
    if (answer === 'empty') return encode(syncResponseCodec, { tip_height: height, matched: 0, blocks: [] });
    // Never answers: holds the request until the requester gives up on it.
    return new Promise<Uint8Array>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
  });
  const announce = (): void => void net.publish(TOPICS.heights, encode(heightCodec, { height, hash: new Uint8Array(32).fill(7) }));
  announce();
  const timer = clock.setInterval(announce, 100);
  return { net, asked: () => asked, stop: () => timer.cancel() };
}

for (const answer of ['never', 'empty'] as const) {
  test(`sync: peers that announce a height they cannot serve (answer: ${answer}) do not stop a mining node`, async () => {
    const clock = testScheduler();
    const bus = new MemoryBus(clock);
    const a = await node(bus, clock, await openChain(), A, true);
    // Several identities, so forgetting one liar is not enough.
    const liars = [key(20), key(21), key(22), key(23)].map((k) => liar(bus, clock, k, 1_000_000, answer));
    try {
      await clock.until('a has asked every liar', () => liars.every((l) => l.asked() > 0), 10_000);
      const start = a.chain.tip.height;
      await clock.until('a keeps producing', () => a.chain.tip.height >= start + 10, 15_000);
    } finally {
      for (const l of liars) l.stop();
      await a.stop();
    }
  });
}

test('sync: more liars than timeouts allow for hold production back only briefly', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const a = await node(bus, clock, await openChain(), A, true);
  // Forty identities at 500 ms each would keep the node "behind" for 20 s if every claim counted.
  const liars = Array.from({ length: 40 }, (_, i) => liar(bus, clock, key(100 + i), 1_000_000, 'never'));
  try {
    await clock.until('a has asked a liar', () => liars.some((l) => l.asked() > 0), 10_000);
    const start = a.chain.tip.height;
    await clock.until('a keeps producing', () => a.chain.tip.height >= start + 10, 8_000);
  } finally {
    for (const l of liars) l.stop();
    await a.stop();
  }
});

test('sync: an honest peer ahead is still followed after liars were found out', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainB = await openChain();
  await mine(chainB, B, 30);
  const a = await node(bus, clock, await openChain(), A);
  const liars = [key(20), key(21)].map((k) => liar(bus, clock, k, 1_000_000, 'never'));
  try {
    await clock.until('a has asked a liar', () => liars.some((l) => l.asked() > 0), 10_000);
    const b = await node(bus, clock, chainB, B);
    try {
      await clock.until('a syncs from b', () => a.chain.tip.height === 30, 15_000);
    } finally {
      await b.stop();
    }
  } finally {
    for (const l of liars) l.stop();
    await a.stop();
  }
});

test('sync: a relayed block on an unknown parent makes the node sync from the relay, not the far producer', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainB = await openChain();
  const blocks = await mine(chainB, B, 5);
  // B serves sync but never announces (a bare Sync), so only the block can tell A that B is ahead.
  const syncB = new Sync({ chain: chainB, network: bus.join(B.publicKey), clock });
  syncB.start();
  const a = await node(bus, clock, await openChain(), A);
  const far = key(30);
  try {
    // Block 5, published by a node two hops away (not A's peer), handed to A by B.
    const netA = bus.members.get(toHex(A.publicKey))!;
    await netA.receive({ topic: TOPICS.blocks, data: blocks[4]!.bytes, origin: far.publicKey, peer: B.publicKey }, new Set([toHex(A.publicKey)]));
    await clock.until('a syncs from b', () => a.chain.tip.height === 5, 0);
  } finally {
    syncB.stop();
    await a.stop();
  }
});

test('gossip: a block kept aside by a producer without weight is not passed on, so no relay is blamed for a block it could not judge', async () => {
  // R is at height 2; V, one block behind, is at height 1. A hostile producer H signs a block at
  // height 2 whose state root is wrong. For R it is a side block (not validated, only kept); for V
  // it extends the tip and fails validation. Had R passed it on, V would blame R.
  const H = key(40);
  const chainR = await openChain();
  const [b1] = await mine(chainR, A, 2);
  const chainV = await openChain();
  await chainV.addBlock(b1!);
  const bad = await signBlock(
    chainR.params.network,
    { height: 2, prev_hash: b1!.hash, timestamp_ms: b1!.header.timestamp_ms + 60_000, producer: H.publicKey, state_root: new Uint8Array(32).fill(9) },
    [],
    H,
  );
  const verdict = async (chain: Chain, k: SigningKey, peer: SigningKey): Promise<string | undefined> => {
    const bus = new MemoryBus();
    const n = await node(bus, testScheduler(), chain, k);
    try {
      await bus.members
        .get(toHex(k.publicKey))!
        .receive({ topic: TOPICS.blocks, data: bad.bytes, origin: H.publicKey, peer: peer.publicKey }, new Set([toHex(k.publicKey)]));
      return bus.verdicts.find((v) => v.topic === TOPICS.blocks)?.verdict;
    } finally {
      await n.stop();
    }
  };
  assert.equal(await verdict(chainV, B, A), 'reject', 'V finds the block invalid');
  assert.notEqual(await verdict(chainR, A, H), 'accept', 'R does not pass on what it did not validate');
});

test('gossip: a competing block at the tip height by a producer with weight is passed on, once per producer and height', async () => {
  // A fork race: R's tip is P's block at the new height; W's block on the same parent, kept aside,
  // reaches those that took P's block first, so whichever branch wins is held everywhere already.
  const P = key(41);
  const W = key(42);
  const chainR = await openChain();
  await mineWeight(chainR, A, [
    [P, 100n * CREDIT],
    [W, 100n * CREDIT],
  ]);
  const fork = await copyChain(chainR);
  const [byP] = await mine(chainR, P);
  const byW = await nextBlock(fork, W);
  const byW2 = await nextBlock(fork, W, null, 1);
  const bus = new MemoryBus();
  const n = await node(bus, testScheduler(), chainR, B);
  try {
    const give = async (data: Uint8Array): Promise<string | undefined> => {
      bus.verdicts.length = 0;
      await bus.members.get(toHex(B.publicKey))!.receive({ topic: TOPICS.blocks, data, origin: W.publicKey, peer: W.publicKey }, new Set([toHex(B.publicKey)]));
      return bus.verdicts.find((v) => v.topic === TOPICS.blocks)?.verdict;
    };
    assert.equal(await give(byW.bytes), 'accept', "W's competing block goes on");
    assert.notEqual(await give(byW2.bytes), 'accept', "W's second block at that height does not");
    assert.equal(toHex(chainR.tip.hash), toHex(byP!.hash), 'the tip stays the block seen first');
  } finally {
    await n.stop();
  }
});

test('gossip: a competing block of a producer with weight that breaks a state rule is ignored, so the relay that passed it on is not blamed', async () => {
  // V is one block behind. W, with weight, signs a block at the next height whose state root is
  // wrong: a relay passed it on as a competing block (its signature checked, not its state). V finds
  // it invalid, and does not reject it, which would count against that relay.
  const W = key(43);
  const chainV = await openChain();
  await mineWeight(chainV, A, [[W, 100n * CREDIT]]);
  const tip = chainV.tip.block;
  // W's block on V's tip, `later` ms after it, with a wrong state root.
  const wrongState = (later: number): Promise<Block> =>
    signBlock(
      chainV.params.network,
      {
        height: tip.header.height + 1,
        prev_hash: tip.hash,
        timestamp_ms: tip.header.timestamp_ms + later,
        producer: W.publicKey,
        state_root: new Uint8Array(32).fill(9),
      },
      [],
      W,
    );
  const bus = new MemoryBus();
  const n = await node(bus, testScheduler(), chainV, B);
  try {
    const give = async (block: Block): Promise<string | undefined> => {
      bus.verdicts.length = 0;
      await bus.members
        .get(toHex(B.publicKey))!
        .receive({ topic: TOPICS.blocks, data: block.bytes, origin: W.publicKey, peer: A.publicKey }, new Set([toHex(B.publicKey)]));
      return bus.verdicts.find((v) => v.topic === TOPICS.blocks)?.verdict;
    };
    assert.equal(await give(await wrongState(60_000)), 'ignore');
    assert.equal(toHex(chainV.tip.hash), toHex(tip.hash), 'the invalid block is not taken');
    // A second one of W's at that height is no fork race: it is rejected.
    assert.equal(await give(await wrongState(61_000)), 'reject');
  } finally {
    await n.stop();
  }
});

test('gossip: blocks kept aside are bounded in bytes, not only in number', async () => {
  // Side blocks need only a valid producer signature (any key will do), so a peer can send as many
  // distinct ones as it likes. 4,096 blocks of 1,024 transactions would hold gigabytes in memory.
  const H = key(41);
  const chain = await openChain();
  await mine(chain, A, 2);
  const bus = new MemoryBus();
  const a = await node(bus, testScheduler(), chain, A);
  const txs: Tx[] = [];
  for (let i = 0; i < 1024; i++)
    txs.push(await signTx({ kind: 'Transfer', sender: H.publicKey, nonce: i + 1, to: A.publicKey, amount: 1n }, H, chain.params.network));
  const g = chain.genesis;
  const sent: Uint8Array[] = [];
  let bytes = 0;
  try {
    // 36 MiB of blocks at height 1, each a different block (its timestamp differs).
    for (let i = 0; bytes < 36 * 1024 * 1024; i++) {
      const block = await signBlock(
        chain.params.network,
        { height: 1, prev_hash: g.hash, timestamp_ms: g.header.timestamp_ms + 1_000 + i, producer: H.publicKey, state_root: new Uint8Array(32) },
        txs,
        H,
      );
      await bus.members
        .get(toHex(A.publicKey))!
        .receive({ topic: TOPICS.blocks, data: block.bytes, origin: H.publicKey, peer: H.publicKey }, new Set([toHex(A.publicKey), toHex(H.publicKey)]));
      sent.push(block.hash);
      bytes += block.bytes.length;
    }
    let held = 0;
    for (const hash of sent) if ((await chain.blockByHash(hash)) !== undefined) held++;
    assert.isBelow(held, sent.length / 2, `held ${held} of ${sent.length} side blocks (${Math.round(bytes / 2 ** 20)} MiB)`);
    assert.isDefined(await chain.blockByHash(sent[sent.length - 1]!), 'the newest is kept');
  } finally {
    await a.stop();
  }
});

test('sync: a node catching up holds at most one answer waiting to be applied, however fast answers come', async () => {
  // Answers come faster than this node applies them. Were the next range asked for as soon as an
  // answer arrived, every range of a long chain would wait in memory, decoded, for its turn.
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainB = await openChain();
  await mine(chainB, B, 3_000);
  const chainA = await openChain();
  const addBranch = chainA.addBranch.bind(chainA);
  let waiting = 0;
  let most = 0;
  Object.defineProperty(chainA, 'addBranch', {
    value: async (...args: Parameters<Chain['addBranch']>) => {
      most = Math.max(most, ++waiting);
      try {
        await sleep(clock, 150);
        return await addBranch(...args);
      } finally {
        waiting--;
      }
    },
  });
  const b = await node(bus, clock, chainB, B, false, 5_000);
  const a = await node(bus, clock, chainA, A, false, 5_000);
  try {
    // Time moves from timer to timer, the delays above among them, while blocks are applied: the
    // bound is only there to end a test that hangs.
    await clock.until('a catches up', () => chainA.tip.height === 3_000, 24 * 3_600_000);
    assert.isAtMost(most, 2, 'answers waiting to be applied at once');
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('sync: a peer that asks over and over is served a bounded number of bytes a second, and told it is busy past them', async () => {
  // Each answer may carry 2 MiB of blocks read from the store; requests cost the asker a few bytes.
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainB = await openChain();
  await mine(chainB, B, 300);
  const budget = 64 * 1024;
  const syncB = new Sync({ chain: chainB, network: bus.join(B.publicKey), serveBytesPerSecond: budget, clock });
  syncB.start();
  const asker = bus.join(key(50).publicKey);
  let answered = 0;
  let largest = 0;
  let busy = 0;
  try {
    const started = clock.now();
    const request = encode(syncRequestCodec, { locator: [{ height: 0, hash: chainB.genesis.hash }], max_blocks: 500 });
    for (let i = 0; i < 15; i++) {
      try {
        const answer = await asker.request(B.publicKey, SYNC_PROTOCOL, request, { maxResponseBytes: MAX_SYNC_ANSWER_BYTES });
        answered += answer.length;
        largest = Math.max(largest, answer.length);
      } catch (error) {
        assert.instanceOf(error, PeerBusyError, 'a request over budget is refused as busy, not left unanswered');
        busy++;
      }
      await clock.advance(20);
    }
    const seconds = (clock.now() - started) / 1000;
    assert.isAtMost(answered, budget * (1 + seconds) + largest, `${answered} bytes answered in ${seconds.toFixed(1)} s`);
    // A bucket that starts full serves a whole second's budget before it holds anything back.
    assert.isAtLeast(answered, budget, "the first second's budget is served");
    assert.isAbove(busy, 0, 'requests over budget are refused');
  } finally {
    syncB.stop();
  }
});

test('segments: a peer that asks over and over is served a bounded number of bytes a second, and told it is busy past them', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chain = await openChain();
  await mine(chain, A, 3);
  const transfers = await Promise.all(Array.from({ length: 40 }, (_, i) => tx(A, { kind: 'Transfer', nonce: i + 1, to: key(120 + i).publicKey, amount: 1n })));
  await mine(chain, A, 1, transfers);
  const budget = 2 * 1024;
  const server = new Segments(bus.join(A.publicKey), chain.params, chain, { serveBytesPerSecond: budget, clock });
  server.start();
  const asker = bus.join(key(51).publicKey);
  let answered = 0;
  let largest = 0;
  let busy = 0;
  const started = clock.now();
  const request = encode(segmentRequestCodec, { checkpoint: chain.tip.hash, offset: 0 });
  for (let i = 0; i < 20; i++) {
    try {
      const answer = await asker.request(A.publicKey, SEGMENTS_PROTOCOL, request, { maxResponseBytes: 8 * 1024 * 1024 });
      answered += answer.length;
      largest = Math.max(largest, answer.length);
    } catch (error) {
      assert.instanceOf(error, PeerBusyError);
      busy++;
    }
    await clock.advance(20);
  }
  const seconds = (clock.now() - started) / 1000;
  assert.isAtLeast(answered, budget, "the first second's budget is served");
  assert.isAtMost(answered, budget * (1 + seconds) + largest, `${answered} bytes answered in ${seconds.toFixed(1)} s`);
  assert.isAbove(busy, 0, 'requests over budget are refused');
  server.stop();
});

test('sync: answers to a flood of requests are read one at a time, and past a few waiting the rest are told busy', async () => {
  // A range's reads hold the chain, so block production waits behind them: however many peers ask
  // at once, it must wait behind one range at most.
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainB = await openChain();
  await mine(chainB, B, 50);
  let reading = 0;
  let most = 0;
  const serve = chainB.blockBytesFrom.bind(chainB);
  chainB.blockBytesFrom = async (start, count, maxBytes) => {
    most = Math.max(most, ++reading);
    try {
      await sleep(clock, 50);
      return await serve(start, count, maxBytes);
    } finally {
      reading--;
    }
  };
  const syncB = new Sync({ chain: chainB, network: bus.join(B.publicKey), clock });
  syncB.start();
  const askers = [key(60), key(61), key(62), key(63)].map((k) => bus.join(k.publicKey));
  const request = encode(syncRequestCodec, { locator: [{ height: 0, hash: chainB.genesis.hash }], max_blocks: 500 });
  try {
    const asked = Promise.all(
      askers.flatMap((asker) =>
        Array.from({ length: 3 }, () =>
          asker.request(B.publicKey, SYNC_PROTOCOL, request, { maxResponseBytes: MAX_SYNC_ANSWER_BYTES }).then(
            () => 'answered',
            (error: unknown) => (error instanceof PeerBusyError ? 'busy' : String(error)),
          ),
        ),
      ),
    );
    await clock.advance(1_000);
    const outcomes = await asked;
    assert.equal(most, 1, 'one range read at a time');
    assert.equal(outcomes.filter((o) => o === 'answered').length, 4, 'one read and three waiting');
    assert.equal(outcomes.filter((o) => o === 'busy').length, 8);
  } finally {
    syncB.stop();
  }
});
