/**
 * Equivocation end to end on the memory network and the manual clock: evidence gossiped and judged,
 * a slash reported and mined, the producer's slashing-protection record, and doppelganger detection
 * when two machines run one key.
 */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import type { Chain } from '../chain/chain.ts';
import { type Evidence, encodeEvidence, evidenceOf } from '../chain/evidence.ts';
import { buildBlock } from '../chain/miner.ts';
import { SlashingProtection } from '../chain/slashing-protection.ts';
import { key, mine, mineWeight, nextBlock, openChain, params } from '../chain/testnet.test-util.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { seededRandom } from '../crypto/random.test-util.ts';
import { CREDIT } from '../encoding/amount.ts';
import { toHex } from '../encoding/hex.ts';
import type { Block } from '../ledger/block.ts';
import { lockedBond } from '../ledger/state.ts';
import { MemoryBus, type MemoryNetwork } from '../net/memory.test-util.ts';
import { TOPICS } from '../net/network.ts';
import { MemoryStore } from '../store/kv.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import { BlockProducer, UNHEARD_WATCH_MS } from './block-producer.ts';
import { capacity, type FullNode } from './node.test-util.ts';
import { MeshNode } from './node.ts';
import { fullNodeServices } from './services.ts';

const PAYER = key(1);
const TWIN = key(5);
const X1 = key(6);
const X2 = key(7);
const BOND = 100n * CREDIT;

/** A chain on which TWIN earned work hosting a job and bonded BOND: it carries weight, and ranks first. */
async function bondedPrefix(): Promise<Block[]> {
  const chain = await openChain();
  await mineWeight(chain, PAYER, [[TWIN, BOND]]);
  assert.equal(chain.state.weights().length, 1);
  return chain.blocksFrom(1, 500);
}

async function chainWith(blocks: readonly Block[]): Promise<Chain> {
  const chain = await openChain();
  await chain.addBranch(blocks);
  return chain;
}

/**
 * A machine: a full node signing with `k` on its own network identity `id` (two machines may run
 * one key), joined to `bus` unlinked; the test links it.
 */
async function machine(
  bus: MemoryBus,
  clock: Scheduler,
  chain: Chain,
  k: SigningKey,
  id: SigningKey,
  options: { mine: boolean; store?: MemoryStore; log?: string[] },
): Promise<FullNode & { net: MemoryNetwork }> {
  const net = bus.join(id.publicKey, { linked: false });
  const n = await MeshNode.create({
    chain,
    network: net,
    key: k,
    clock,
    random: seededRandom(id.publicKey[0]!),
    log: (line) => options.log?.push(line),
    services: fullNodeServices({
      mine: options.mine,
      capacity,
      syncTimeoutMs: 2_000,
      ...(options.store === undefined ? {} : { slashingProtection: { store: options.store } }),
    }),
  });
  await n.start();
  return Object.assign(n, { net });
}

test('equivocation: one key on two halves of a devnet; when they join, both twins stop and the bond is burned', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const prefix = await bondedPrefix();
  const logA: string[] = [];
  const logB: string[] = [];
  const a = await machine(bus, clock, await chainWith(prefix), TWIN, key(11), { mine: true, log: logA });
  const x1 = await machine(bus, clock, await chainWith(prefix), X1, X1, { mine: true });
  const b = await machine(bus, clock, await chainWith(prefix), TWIN, key(12), { mine: true, log: logB });
  const x2 = await machine(bus, clock, await chainWith(prefix), X2, X2, { mine: true });
  const nodes = [a, x1, b, x2];
  bus.link(a.net, x1.net);
  bus.link(b.net, x2.net);
  try {
    // A transfer in one half only, so the twins' blocks differ from the first one on.
    await a.services.ledger.transfer(X2.publicKey, 1n);
    await clock.advance(20 * params.blockIntervalMs);
    const height = prefix.length;
    assert.isAtLeast(a.chain.tip.height, height + 10, 'half 1 grew');
    assert.isAtLeast(b.chain.tip.height, height + 10, 'half 2 grew');
    const at = height + 1;
    assert.notEqual(toHex((await a.chain.blockAt(at))!.hash), toHex((await b.chain.blockAt(at))!.hash), 'the twins signed different blocks');
    assert.deepEqual(a.services.ledger.status().production, { state: 'on', reason: null });

    bus.link(x1.net, x2.net);
    const burned = x1.chain.state.supply().burned;
    await clock.until(
      'the bond is slashed on both halves',
      () => [x1, x2].every((n) => n.chain.state.account(TWIN.publicKey).bond === 0n && n.chain.state.supply().burned - burned === BOND),
      200 * params.blockIntervalMs,
    );
    for (const n of [x1, x2]) assert.equal(lockedBond(n.chain.state.account(TWIN.publicKey), n.chain.tip.height), 0n);
    assert.deepEqual(x1.chain.state.weights(), [], 'nobody carries weight any more');
    // Both machines that run the key stopped producing, and said why.
    for (const [twin, log] of [
      [a, logA],
      [b, logB],
    ] as const) {
      const production = twin.services.ledger.status().production;
      assert.equal(production.state, 'halted', '/status shows it');
      assert.match(production.reason ?? '', /another machine is producing with this key/);
      assert.isTrue(
        log.some((line) => line.startsWith('producer: STOPPED.')),
        'the log says why',
      );
    }
    assert.equal(x1.services.ledger.status().production.state, 'on');
    // The chain goes on without them, and the halves agree.
    const tip = x1.chain.tip.height;
    await clock.until('the chain grows without the twins', () => x1.chain.tip.height >= tip + 3, 100 * params.blockIntervalMs);
    await clock.until('one tip', () => toHex(x1.chain.tip.hash) === toHex(x2.chain.tip.hash), 100 * params.blockIntervalMs);
    assert.isTrue(
      bus.verdicts.some((v) => v.topic === TOPICS.evidence && v.verdict === 'accept'),
      'evidence travelled',
    );
  } finally {
    for (const n of nodes) await n.stop();
  }
});

test('evidence: forged or malformed evidence is rejected and not forwarded; good evidence is forwarded once; a key without bond is ignored', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const prefix = await bondedPrefix();
  const y = await machine(bus, clock, await chainWith(prefix), X1, X1, { mine: false });
  const z = await machine(bus, clock, await chainWith(prefix), X2, X2, { mine: false });
  const hostile = bus.join(key(9).publicKey, { linked: false });
  bus.link(hostile as MemoryNetwork, y.net);
  bus.link(y.net, z.net);
  const chain = await chainWith(prefix);
  const one = await nextBlock(chain, TWIN);
  const two = await nextBlock(chain, TWIN, null, 1);
  const signed = (block: Block) => ({ header: block.header, signature: block.signature });
  const judged = (to: MemoryNetwork) => bus.verdicts.filter((v) => v.topic === TOPICS.evidence && v.to === toHex(to.self));
  try {
    // A second header that TWIN never signed: the signature is another block's.
    const forged = evidenceOf(signed(one), { header: two.header, signature: one.signature });
    await hostile.publish(TOPICS.evidence, encodeEvidence(forged));
    await hostile.publish(TOPICS.evidence, encodeEvidence(evidenceOf(signed(one), signed(one))));
    await hostile.publish(TOPICS.evidence, Uint8Array.of(1, 2, 3));
    await clock.until('y judged all three', () => judged(y.net).length === 3, 0);
    assert.deepEqual(
      judged(y.net).map((v) => v.verdict),
      ['reject', 'reject', 'reject'],
    );
    assert.deepEqual(y.services.evidence.pending(), []);

    // Evidence against a key with nothing bonded helps nobody: dropped without blame.
    const other = await nextBlock(chain, X2, null, 0);
    const another = await nextBlock(chain, X2, null, 3);
    await hostile.publish(TOPICS.evidence, encodeEvidence(evidenceOf(signed(other), signed(another))));
    await clock.until('y judged it', () => judged(y.net).length === 4, 0);
    assert.equal(judged(y.net)[3]!.verdict, 'ignore');

    const good = encodeEvidence(evidenceOf(signed(one), signed(two)));
    await hostile.publish(TOPICS.evidence, good);
    await hostile.publish(TOPICS.evidence, good);
    await clock.until('z has it', () => z.services.evidence.pending().length === 1, 0);
    assert.deepEqual(
      judged(y.net).map((v) => v.verdict),
      ['reject', 'reject', 'reject', 'ignore', 'accept', 'ignore'],
    );
    assert.deepEqual(
      judged(z.net).map((v) => v.verdict),
      ['accept'],
      'only the good evidence went on, once',
    );
    assert.deepEqual(y.services.evidence.pending()[0]!.a.header.producer, TWIN.publicKey);
    assert.deepEqual(y.services.ledger.status().production, { state: 'off', reason: null }, 'a node without --mine reports nothing');
    assert.equal(y.mempool.size, 0);
  } finally {
    await y.stop();
    await z.stop();
  }
});

test('slashing protection: a producer restarted at a height it signed does not sign again there', async () => {
  const clock = testScheduler();
  const prefix = await bondedPrefix();
  const store = new MemoryStore();
  const chain = await chainWith(prefix);
  // Before the restart, the producer signed block `at` and recorded it; the block never reached its chain.
  const at = prefix.length + 1;
  const signedBefore = await buildBlock(chain, null, TWIN, clock.now() - 50);
  await new SlashingProtection(store, params.network).record(signedBefore);
  const published: Block[] = [];
  const log: string[] = [];
  const start = (c: Chain): BlockProducer =>
    new BlockProducer({
      chain: c,
      mempool: { select: () => [] },
      key: TWIN,
      publish: async (block) => void published.push(block),
      behind: () => false,
      protection: new SlashingProtection(store, params.network),
      clock,
      log: (line) => log.push(line),
    });

  // On the same tip: it publishes the very block it recorded, and signs no other at that height.
  const producer = start(chain);
  producer.start();
  await clock.advance(params.blockIntervalMs);
  await producer.stop();
  assert.equal(toHex(published[0]!.hash), toHex(signedBefore.hash));
  assert.equal(published.filter((b) => b.header.height === at).length, 1);
  assert.isAbove(chain.tip.height, at, 'then it went on above');

  // On another tip at the same height (its block lost out meanwhile): it waits for someone else's.
  published.length = 0;
  const elsewhere = await chainWith(prefix);
  const restarted = start(elsewhere);
  restarted.start();
  await clock.advance(5 * params.blockIntervalMs);
  assert.deepEqual(published, [], 'nothing signed at or below the heights it signed');
  assert.isTrue(log.some((line) => line.includes('slashing protection')));
  const signedUpTo = (await new SlashingProtection(store, params.network).last(TWIN.publicKey))!.height;
  await mine(elsewhere, PAYER, signedUpTo - prefix.length);
  await clock.until('it signs above them', () => published.length > 0, 10 * params.blockIntervalMs);
  await restarted.stop();
  assert.equal(published[0]!.header.height, signedUpTo + 1);
});

test('doppelganger: a producer that sees its key sign a block it did not make stops, and says why', async () => {
  const clock = testScheduler();
  const prefix = await bondedPrefix();
  const chain = await chainWith(prefix);
  const log: string[] = [];
  const producer = new BlockProducer({
    chain,
    mempool: { select: () => [] },
    key: TWIN,
    publish: async () => undefined,
    behind: () => true,
    clock,
    log: (line) => log.push(line),
  });
  producer.start();
  try {
    // Another machine with the same key makes the next block; this one was syncing meanwhile.
    await clock.advance(params.blockIntervalMs);
    const theirs = await buildBlock(chain, null, TWIN, clock.now());
    await chain.addBlock(theirs, clock.now());
    assert.match(producer.halted?.reason ?? '', /is signed with this node's key, but this node did not make it/);
    assert.equal(log.filter((line) => line.startsWith('producer: STOPPED.')).length, 1);
  } finally {
    await producer.stop();
  }
});

test('evidence: a producing node reports evidence it heard, and the slash is in its next block', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const prefix = await bondedPrefix();
  const log: string[] = [];
  const m = await machine(bus, clock, await chainWith(prefix), X1, X1, { mine: true, log });
  const peer = bus.join(key(9).publicKey, { linked: false });
  bus.link(peer, m.net);
  const chain = await chainWith(prefix);
  const signed = (block: Block) => ({ header: block.header, signature: block.signature });
  const one = await nextBlock(chain, TWIN);
  const two = await nextBlock(chain, TWIN, null, 1);
  try {
    await clock.advance(params.blockIntervalMs);
    const heard = m.chain.tip.height;
    await peer.publish(TOPICS.evidence, encodeEvidence(evidenceOf(signed(one), signed(two))));
    await clock.until('the bond is burned', () => m.chain.state.account(TWIN.publicKey).bond === 0n, 50 * params.blockIntervalMs);
    assert.isAtMost(m.chain.tip.height, heard + 1, 'in the next block');
    assert.equal(m.chain.state.slashed(TWIN.publicKey, one.header.height), m.chain.tip.height);
    assert.deepEqual(m.services.evidence.pending(), [], 'resolved once punished');
    assert.isTrue(log.some((line) => line.startsWith('evidence: reported producer')));
    // Heard again, it is of no use any more: dropped without blame.
    await peer.publish(TOPICS.evidence, encodeEvidence(evidenceOf(signed(one), signed(two))));
    await clock.until('judged', () => bus.verdicts.filter((v) => v.topic === TOPICS.evidence).length === 2, 0);
    assert.equal(bus.verdicts.filter((v) => v.topic === TOPICS.evidence)[1]!.verdict, 'ignore');
  } finally {
    await m.stop();
  }
});

test('doppelganger: evidence against its key stops a producer, unless both blocks are from before it started', async () => {
  const clock = testScheduler();
  const prefix = await bondedPrefix();
  const chain = await chainWith(prefix);
  const signed = (block: Block) => ({ header: block.header, signature: block.signature });
  // Two blocks of its key from before this run: an old incident.
  const old = evidenceOf(signed(await buildBlock(chain, null, TWIN, clock.now() - 20)), signed(await buildBlock(chain, null, TWIN, clock.now() - 10)));
  const listeners: ((evidence: Evidence) => void)[] = [];
  const log: string[] = [];
  const producer = new BlockProducer({
    chain,
    mempool: { select: () => [] },
    key: TWIN,
    publish: async () => undefined,
    behind: () => true,
    evidence: {
      onEvidence: (listener) => {
        listeners.push(listener);
        return () => undefined;
      },
    },
    clock,
    log: (line) => log.push(line),
  });
  producer.start();
  try {
    const halted = (): string | undefined => producer.halted?.reason;
    for (const listener of listeners) listener(old);
    assert.isUndefined(halted());
    await clock.advance(params.blockIntervalMs);
    const fresh = evidenceOf(signed(await buildBlock(chain, null, TWIN, clock.now())), signed(await buildBlock(chain, null, TWIN, clock.now() + 1)));
    for (const listener of listeners) listener(fresh);
    assert.match(halted() ?? '', /two blocks at height \d+ are signed with this node's key/);
    assert.equal(log.filter((line) => line.startsWith('producer: STOPPED.')).length, 1);
  } finally {
    await producer.stop();
  }
});

/** TWIN's producer on `chain`, watching `waitMs` after it starts, with the blocks it published. */
function watchingTwin(chain: Chain, clock: Scheduler, waitMs: number, unheard?: () => boolean): { producer: BlockProducer; published: Block[] } {
  const published: Block[] = [];
  const producer = new BlockProducer({
    chain,
    mempool: { select: () => [] },
    key: TWIN,
    publish: async (block) => void published.push(block),
    behind: () => false,
    doppelgangerWaitMs: waitMs,
    ...(unheard === undefined ? {} : { unheard }),
    clock,
  });
  producer.start();
  return { producer, published };
}

test('doppelganger: a producer that watches first stops before it signs anything when its key is already at work', async () => {
  const clock = testScheduler();
  const prefix = await bondedPrefix();
  const waitMs = 3 * params.blockIntervalMs;
  const start = (chain: Chain) => watchingTwin(chain, clock, waitMs);
  // Alone, it signs its first block once the wait is over.
  const alone = await chainWith(prefix);
  const startedAt = clock.now();
  const quiet = start(alone);
  await clock.until('it produces', () => quiet.published.length > 0, 2 * waitMs);
  await quiet.producer.stop();
  assert.isAtLeast(quiet.published[0]!.header.timestamp_ms, startedAt + waitMs);

  // The key's other machine signs meanwhile: this one stops, having signed nothing.
  const chain = await chainWith(prefix);
  const watching = start(chain);
  await clock.advance(params.blockIntervalMs);
  await chain.addBlock(await buildBlock(chain, null, TWIN, clock.now()), clock.now());
  await clock.advance(2 * waitMs);
  await watching.producer.stop();
  assert.isNotNull(watching.producer.halted);
  assert.deepEqual(watching.published, []);
});

test('doppelganger: with peers and no tip heard, the watch goes on until one is heard, or a minute more; once it produced, silent peers change nothing', async () => {
  const clock = testScheduler();
  const prefix = await bondedPrefix();
  const waitMs = 3 * params.blockIntervalMs;
  let unheard = true;
  const start = (chain: Chain) => watchingTwin(chain, clock, waitMs, () => unheard);
  // Its peers' gossip does not reach it: it signs nothing past its watch, until a tip is heard.
  const heardLater = start(await chainWith(prefix));
  await clock.advance(waitMs + 10 * params.blockIntervalMs);
  assert.deepEqual(heardLater.published, [], 'it watches on while it has heard no peer');
  unheard = false;
  await clock.until('it produces once a tip is heard', () => heardLater.published.length > 0, 2 * params.blockIntervalMs);
  // Once it produced, a peer set that says nothing does not stop it.
  unheard = true;
  const before = heardLater.published.length;
  await clock.until('it goes on producing', () => heardLater.published.length > before, 2 * params.blockIntervalMs);
  await heardLater.producer.stop();

  // Never heard: it waits UNHEARD_WATCH_MS past its watch at most, then produces.
  const startedAt = clock.now();
  const neverHeard = start(await chainWith(prefix));
  await clock.until('it produces in the end', () => neverHeard.published.length > 0, waitMs + UNHEARD_WATCH_MS + 2 * params.blockIntervalMs);
  await neverHeard.producer.stop();
  assert.isAtLeast(neverHeard.published[0]!.header.timestamp_ms, startedAt + waitMs + UNHEARD_WATCH_MS);
});
