import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { Chain, ForkChoiceError } from '../chain/chain.ts';
import { key, mine, openChain, tx } from '../chain/testnet.test-util.ts';
import type { TxStreamEvent } from '../chain/tx-feed.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { CREDIT } from '../encoding/amount.ts';
import { encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { PACE_NODES, PEER_RELAY_SHARE, RELAY_BUDGET_FACTOR } from '../net/broadcast-pace.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { TOPICS } from '../net/network.ts';
import { ANY_SIGNAL } from '../signal/book.ts';
import { SignalError } from '../signal/errors.ts';
import { MemoryStore } from '../store/kv.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import { type FullNode, startNode } from './node.test-util.ts';
import { MeshNode } from './node.ts';
import { SEGMENTS_PROTOCOL, Segments } from './segments.ts';
import { lightNodeServices } from './services.ts';
import { heightCodec, SYNC_PROTOCOL, syncResponseCodec } from './wire.ts';

const A = key(1);
const B = key(2);
const M = key(9);
const node = (bus: MemoryBus, clock: Scheduler, chain: Chain, k: SigningKey, mine = false): Promise<FullNode> => startNode(bus, chain, k, clock, { mine });

test('sync: a new node catches up more than one response (500 blocks) from a peer', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 1_100);
  let ranges = 0;
  const serve = chainA.blockBytesFrom.bind(chainA);
  chainA.blockBytesFrom = (from, count, maxBytes) => {
    ranges++;
    return serve(from, count, maxBytes);
  };
  const a = await node(bus, clock, chainA, A);
  const b = await node(bus, clock, await openChain(), B);
  try {
    // Announcements and answers alone drive it: no time passes.
    await clock.until('b reaches a', () => b.chain.tip.height === 1_100, 0);
    assert.equal(toHex(b.chain.tip.hash), toHex(chainA.tip.hash));
    assert.equal(toHex(b.chain.state.stateRoot()), toHex(chainA.state.stateRoot()));
    assert.isAtLeast(ranges, 3, 'three ranges of at most 500 blocks');
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('sync: a node on a shorter fork reorganises to the longer chain of its peer', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  const chainB = await openChain();
  await chainB.addBranch(await mine(chainA, A, 5));
  await mine(chainA, A, 3);
  await mine(chainB, B, 6);
  const a = await node(bus, clock, chainA, A);
  const b = await node(bus, clock, chainB, B);
  try {
    await clock.until('a adopts b', () => toHex(a.chain.tip.hash) === toHex(chainB.tip.hash), 0);
    assert.equal(a.chain.tip.height, 11);
    assert.equal(chainA.state.account(B.publicKey).balance, 6_000n * CREDIT);
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('sync: a peer that answers with invalid blocks is penalised and nothing is adopted', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const honest = await openChain();
  const blocks = await mine(honest, A, 4);
  const b = await node(bus, clock, await openChain(), B);
  // A hostile peer claims a higher tip and answers with blocks whose signatures were altered.
  const hostile = bus.join(M.publicKey);
  hostile.serve(SYNC_PROTOCOL, async () => {
    const forged = blocks.map((blk) => {
      const bytes = blk.bytes.slice();
      bytes[bytes.length - 1]! ^= 1;
      return bytes;
    });
    return encode(syncResponseCodec, { tip_height: 4, matched: 0, blocks: forged });
  });
  hostile.handle(TOPICS.heights, async () => 'ignore');
  try {
    await hostile.publish(TOPICS.heights, encode(heightCodec, { height: 4, hash: blocks[3]!.hash }));
    const network = bus.members.get(toHex(B.publicKey))!;
    await clock.until('b blames the hostile peer', () => network.penalties.some((p) => p.node === toHex(M.publicKey)), 0);
    assert.equal(b.chain.tip.height, 0);
  } finally {
    await b.stop();
  }
});

test("node: a transfer reaches the other node's stream, is mined, and shows in both balances", async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 2);
  const chainB = await openChain();
  await chainB.addBranch(await chainA.blocksFrom(1, 2));
  const a = await node(bus, clock, chainA, A, true);
  const b = await node(bus, clock, chainB, B);
  const seen: TxStreamEvent[] = [];
  b.services.ledger.followTransactions(null, (item) => void (item.kind === 'tx' && seen.push(item.event)));
  try {
    const id = await a.services.ledger.transfer(B.publicKey, 7n * CREDIT);
    await clock.until('b streams the transfer', () => seen.some((e) => e.id === id), 0);
    const event = seen.find((e) => e.id === id)!;
    assert.deepEqual(event, { id, origin: toHex(A.publicKey), kind: 'Transfer', amount: (7n * CREDIT).toString() });
    await clock.until('both confirm it', () => a.services.ledger.status().height >= 3 && chainB.state.account(B.publicKey).balance === 7n * CREDIT, 10_000);
    assert.equal(b.services.ledger.status().balance, (7n * CREDIT).toString());
    const listed = await b.services.ledger.transactions(B.publicKey, {});
    assert.isTrue(listed.some((t) => t.tx_id === id && t.direction === 'in'));
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('node: /transactions/stream emits a gossiped transaction once the pool takes it, signature and rules both', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 2);
  const a = await node(bus, clock, chainA, A);
  const seen: TxStreamEvent[] = [];
  a.services.ledger.followTransactions(null, (item) => void (item.kind === 'tx' && seen.push(item.event)));
  const peer = bus.join(M.publicKey);
  try {
    // Signed by M, who holds nothing: the signature verifies, the ledger's rules refuse it.
    const broke = await tx(M, { kind: 'Transfer', nonce: 1, to: B.publicKey, amount: CREDIT });
    // Signed by A, who has mined two blocks' rewards: the pool takes it.
    const paid = await tx(A, { kind: 'Transfer', nonce: 1, to: B.publicKey, amount: CREDIT });
    await peer.publish(TOPICS.transactions, broke.bytes);
    await peer.publish(TOPICS.transactions, paid.bytes);
    await peer.publish(TOPICS.transactions, paid.bytes);
    await clock.until('both judged', () => bus.verdicts.filter((v) => v.from === toHex(M.publicKey) && v.topic === TOPICS.transactions).length >= 2, 0);
    assert.deepEqual(
      seen.map((e) => e.id),
      [toHex(paid.id)],
    );
  } finally {
    await a.stop();
  }
});

test("node: a capability-only signal reaches the peer, and the atlas shows the sender's capacity", async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const a = await node(bus, clock, await openChain(), A, true);
  const b = await node(bus, clock, await openChain(), B);
  try {
    const sent = await a.services.signals.sendSignal({
      to: 'broadcast',
      payload: new Uint8Array(0),
      capabilities: [{ name: 'chat', version: 1 }],
      burnTxId: null,
    });
    await clock.until('b keeps the signal', () => b.services.signals.signals().some((s) => s.id === sent.id), 0);
    // The first capacity broadcast goes out 2 s after start.
    await clock.until("b maps a's capacity", () => b.services.signals.atlas().some((e) => e.node_id === toHex(A.publicKey)), 5_000);
    const entry = b.services.signals.atlas().find((e) => e.node_id === toHex(A.publicKey))!;
    assert.equal(entry.cpu_cores, 2);
    assert.deepEqual(entry.tags, ['linux'], 'self-tags while mining');
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('node: free broadcasts are kept by a peer, and passed on within its relay budget', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const a = await node(bus, clock, await openChain(), A);
  const b = await node(bus, clock, await openChain(), B);
  try {
    const count = 3 * RELAY_BUDGET_FACTOR * PACE_NODES;
    const verdicts = () => bus.verdicts.filter((v) => v.topic === TOPICS.signals && v.to === toHex(B.publicKey));
    // One at a time, as gossip need not keep their order and one below a nonce kept would be stale; no time passes.
    for (let i = 0; i < count; i++) {
      await a.services.signals.sendSignal({ to: 'broadcast', payload: new Uint8Array(0), capabilities: [{ name: 'chat', version: i }], burnTxId: null });
      await clock.until('b judged it', () => verdicts().length === i + 1, 0);
    }
    assert.equal(b.services.signals.signals().filter((s) => s.from === toHex(A.publicKey)).length, count, 'b keeps them all');
    assert.equal(verdicts().filter((v) => v.verdict === 'accept').length, PEER_RELAY_SHARE, "and relays the peer's share of its budget");
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('node: /signals/stream shows what GET /signals lists: broadcasts and signals to this node, not those passing through', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const C = key(3);
  const [a, b, c] = await Promise.all([node(bus, clock, await openChain(), A), node(bus, clock, await openChain(), B), node(bus, clock, await openChain(), C)]);
  const streamed = new Map<FullNode, string[]>([
    [a, []],
    [b, []],
    [c, []],
  ]);
  const unsubscribe = [a, b, c].map((n) => n.services.signals.followSignals(null, ANY_SIGNAL, (kept) => streamed.get(n)!.push(kept.signal.id)));
  try {
    const direct = await a.services.signals.sendSignal({
      to: C.publicKey,
      payload: new Uint8Array(0),
      capabilities: [{ name: 'hello', version: 1 }],
      burnTxId: null,
    });
    // Gossip need not keep a sender's order, and a signal below a nonce already kept is stale: the
    // next one goes out once b and c have the first.
    const accepted = (): number => bus.verdicts.filter((v) => v.topic === TOPICS.signals && v.verdict === 'accept').length;
    await clock.until('b and c have the first', () => accepted() >= 2, 0);
    const broadcast = await a.services.signals.sendSignal({
      to: 'broadcast',
      payload: new Uint8Array(0),
      capabilities: [{ name: 'all', version: 1 }],
      burnTxId: null,
    });
    await clock.until('b and c have both', () => accepted() >= 4, 0);
    await clock.until('c streams the signal to it', () => streamed.get(c)!.includes(direct.id), 0);
    // b validated and relayed the signal to c, but it is neither listed nor streamed there.
    assert.isTrue(bus.verdicts.some((v) => v.topic === TOPICS.signals && v.to === toHex(B.publicKey) && v.verdict === 'accept'));
    for (const n of [a, b, c]) {
      assert.deepEqual(
        streamed.get(n),
        n.services.signals
          .signals()
          .map((s) => s.id)
          .filter((id) => id === direct.id || id === broadcast.id),
      );
    }
    assert.deepEqual(streamed.get(b), [broadcast.id]);
    assert.deepEqual(streamed.get(c), [direct.id, broadcast.id]);
  } finally {
    for (const stop of unsubscribe) stop();
    await Promise.all([a.stop(), b.stop(), c.stop()]);
  }
});

test("node: a signal with a payload is sent on the sender's own confirmed burn, once; another node's burn is refused", async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 2);
  const claim = await tx(A, { kind: 'NameClaim', nonce: 1, name: 'alice' });
  await mine(chainA, A, 1, [claim]);
  const a = await node(bus, clock, chainA, A);
  const b = await node(bus, clock, await openChain(), B);
  try {
    await clock.until('b syncs the burn', () => b.chain.tip.height === chainA.tip.height, 0);
    const payload = Uint8Array.of(1, 2, 3);
    await rejectsAsync(() => a.services.signals.sendSignal({ to: 'broadcast', payload, capabilities: [], burnTxId: null }), SignalError, 'burn-proof-required');
    await rejectsAsync(() => b.services.signals.sendSignal({ to: 'broadcast', payload, capabilities: [], burnTxId: claim.id }), SignalError, 'burn-not-sender');
    const sent = await a.services.signals.sendSignal({ to: 'broadcast', payload, capabilities: [], burnTxId: claim.id });
    await clock.until('b keeps it', () => b.services.signals.signals().some((s) => s.id === sent.id), 0);
    const kept = b.services.signals.signals().find((s) => s.id === sent.id)!;
    assert.equal(kept.payload_hex, '010203');
    assert.equal(kept.burn_proof?.tx_id, toHex(claim.id));
    await rejectsAsync(() => a.services.signals.sendSignal({ to: 'broadcast', payload, capabilities: [], burnTxId: claim.id }), SignalError, 'burn-used');
    const next = await a.services.signals.sendSignal({ to: 'broadcast', payload: new Uint8Array(0), capabilities: [], burnTxId: null });
    assert.isAbove(next.nonce, sent.nonce, 'nonces rise per sender');
  } finally {
    await a.stop();
    await b.stop();
  }
});

test("segments: a light node starts from a full node's state at a trusted checkpoint, in segments, then syncs", async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 3);
  const transfers = await Promise.all([1, 2, 3, 4, 5].map((n) => tx(A, { kind: 'Transfer', nonce: n, to: key(20 + n).publicKey, amount: BigInt(n) })));
  await mine(chainA, A, 1, transfers);
  await mine(chainA, A, 20);
  // Small segments, so the state comes in several pieces.
  const a = await startNode(bus, chainA, A, clock, { segmentBytes: 200 });
  const light = bus.join(B.publicKey);
  const fetcher = new Segments(light, chainA.params, null, { clock });
  let segments = 0;
  const request = light.request.bind(light);
  light.request = (peer, protocol, data, options) => {
    if (protocol === SEGMENTS_PROTOCOL) segments++;
    return request(peer, protocol, data, options);
  };
  try {
    const checkpoint = (await chainA.hashAt(10))!;
    const snapshot = await fetcher.fetch(A.publicKey, checkpoint);
    assert.isAtLeast(segments, 3);
    const lightChain = await Chain.openFromSnapshot({ store: new MemoryStore(), params: chainA.params, mode: 'light' }, snapshot, checkpoint);
    assert.equal(lightChain.tip.height, 10);
    assert.equal(lightChain.state.account(key(23).publicKey).balance, 3n);

    // A state that does not hash to the checkpoint is refused.
    const forged = { block: snapshot.block, entries: snapshot.entries.slice(1) };
    await rejectsAsync(() => Chain.openFromSnapshot({ store: new MemoryStore(), params: chainA.params }, forged, checkpoint), ForkChoiceError, 'snapshot-root');

    const b = await MeshNode.create({ chain: lightChain, network: light, key: B, clock, services: lightNodeServices({ syncTimeoutMs: 2_000 }) });
    await b.start();
    try {
      await clock.until('light node syncs to the tip', () => lightChain.tip.height === chainA.tip.height, 0);
      assert.equal(toHex(lightChain.tip.hash), toHex(chainA.tip.hash));
    } finally {
      await b.stop();
    }
  } finally {
    await a.stop();
  }
});

test('gossip: undecodable messages on every topic are rejected, and change nothing', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 2);
  const a = await node(bus, clock, chainA, A);
  const hostile = bus.join(M.publicKey);
  try {
    const topics = Object.values(TOPICS);
    for (const topic of topics) await hostile.publish(topic, Uint8Array.of(0xff, 0x00, 0x13));
    await clock.until('every topic judged', () => bus.verdicts.filter((v) => v.from === toHex(M.publicKey)).length === topics.length, 0);
    for (const v of bus.verdicts.filter((x) => x.from === toHex(M.publicKey))) assert.equal(v.verdict, 'reject', v.topic);
    assert.equal(a.chain.tip.height, 2);
    assert.equal(a.mempool.size, 0);
    assert.deepEqual(a.services.signals.signals(), []);
  } finally {
    await a.stop();
  }
});
