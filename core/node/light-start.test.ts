import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import type { Chain } from '../chain/chain.ts';
import { key, mine, openChain } from '../chain/testnet.test-util.ts';
import { CREDIT } from '../encoding/amount.ts';
import { encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { MemoryStore } from '../store/kv.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { CheckpointRefusedError, openLightChain } from './light-start.ts';
import { startNode } from './node.test-util.ts';
import { SEGMENTS_PROTOCOL, SegmentError, segmentCodec } from './segments.ts';

const A = key(1);
const LIGHT = key(2);
const M = key(9);

test('openLightChain: starts from the state at a trusted checkpoint, then reopens what the store holds', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 12);
  const a = await startNode(bus, chainA, A, clock);
  try {
    const store = new MemoryStore();
    const checkpoint = (await chainA.hashAt(8))!;
    const options = { network: bus.join(LIGHT.publicKey), store, params: chainA.params, checkpoint, clock };
    const light = await openLightChain(options);
    assert.equal(light.mode, 'light');
    assert.equal(light.tip.height, 8);
    assert.equal(light.base, 8);
    // The producer's eight rewards, and the state the full node's block 8 commits to.
    assert.equal(light.state.account(A.publicKey).balance, 8_000n * CREDIT);
    assert.equal(toHex(light.state.stateRoot()), toHex((await chainA.blockAt(8))!.header.state_root));
    // A second start finds the chain in the store and asks nobody.
    const again = await openLightChain({ ...options, network: bus.join(key(3).publicKey), checkpoint: (await chainA.hashAt(10))! });
    assert.equal(toHex(again.tip.hash), toHex(checkpoint));
  } finally {
    await a.stop();
  }
});

test("openLightChain: a state that does not hash to the checkpoint's state_root is refused and its peer penalised", async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 6);
  const truth = await chainA.snapshotAt(5);
  servingPeer(bus, M, truth, flipFirst);
  const light = bus.join(LIGHT.publicKey);
  const penalised: string[] = [];
  light.penalise = (node) => void penalised.push(toHex(node));
  const store = new MemoryStore();
  await rejectsAsync(
    () => openLightChain({ network: light, store, params: chainA.params, checkpoint: truth.block.hash, clock }),
    CheckpointRefusedError,
    'snapshot-root',
  );
  assert.deepEqual(penalised, [toHex(M.publicKey)]);
  assert.equal(store.size, 0, 'nothing of the refused state is kept');
});

// Forges a state: the first entry's last bit flipped.
const flipFirst = (v: Uint8Array, i: number): Uint8Array => (i === 0 ? Uint8Array.of(...v.slice(0, -1), v.at(-1)! ^ 1) : v);

// A peer on `bus` that answers segment requests addressed to it with `entries` of `snapshot` changed by `change`.
function servingPeer(bus: MemoryBus, self: typeof M, snapshot: Awaited<ReturnType<Chain['snapshotAt']>>, change: (value: Uint8Array, i: number) => Uint8Array) {
  const net = bus.join(self.publicKey);
  net.serve(SEGMENTS_PROTOCOL, async () => {
    const entries = snapshot.entries.map(([k, v], i) => ({ key: k, value: change(v, i) }));
    return encode(segmentCodec, { block: snapshot.block.bytes, total: entries.length, offset: 0, entries });
  });
  return net;
}

test('openLightChain: a forging peer is penalised and a confused one skipped; the start goes on to the next peer', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 6);
  const truth = await chainA.snapshotAt(5);
  // Asked first: one forges a value, one serves another block than the checkpoint.
  servingPeer(bus, M, truth, flipFirst);
  servingPeer(bus, key(7), await chainA.snapshotAt(4), (v) => v);
  const a = await startNode(bus, chainA, A, clock);
  try {
    const light = bus.join(LIGHT.publicKey);
    const penalised: string[] = [];
    light.penalise = (node) => void penalised.push(toHex(node));
    const chain = await openLightChain({ network: light, store: new MemoryStore(), params: chainA.params, checkpoint: truth.block.hash, clock });
    assert.equal(chain.tip.height, 5);
    assert.deepEqual(penalised, [toHex(M.publicKey)], 'only the forging peer is penalised');
  } finally {
    await a.stop();
  }
});

test('openLightChain: with no peer a first start reports itself waiting, and starts when a peer appears', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 6);
  const checkpoint = (await chainA.hashAt(5))!;
  const waits: boolean[] = [];
  const started = openLightChain({
    network: bus.join(LIGHT.publicKey),
    store: new MemoryStore(),
    params: chainA.params,
    checkpoint,
    clock,
    onWaiting: (w) => void waits.push(w),
  });
  await clock.settle();
  await clock.advance(2_000);
  assert.deepEqual(waits, []);
  await clock.advance(2_000);
  assert.deepEqual(waits, [true], 'no peer for 3 s: waiting');
  const a = await startNode(bus, chainA, A, clock);
  try {
    await clock.advance(200);
    assert.equal((await started).tip.height, 5);
    assert.deepEqual(waits, [true, false]);
  } finally {
    await a.stop();
  }
});

test('openLightChain: a host that does not hold the checkpoint says so at once, rather than leaving the start to time out', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chainA = await openChain();
  await mine(chainA, A, 6);
  const a = await startNode(bus, chainA, A, clock);
  try {
    const started = clock.now();
    const opening = openLightChain({
      network: bus.join(LIGHT.publicKey),
      store: new MemoryStore(),
      params: chainA.params,
      checkpoint: new Uint8Array(32).fill(0xcd),
      clock,
    });
    await rejectsAsync(() => opening, SegmentError, 'not-served');
    assert.isBelow(clock.now() - started, 1_000, 'no timeout waited for');
  } finally {
    await a.stop();
  }
});
