import { assert } from 'chai';
import { rejects, rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { sha256 } from '../crypto/sha256.ts';
import { concatBytes } from '../encoding/bytes.ts';
import { encode, uint53 } from '../encoding/codec.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { type Block, blockEvent, decodeBlock, InvalidBlockError, signBlock, txRoot } from './block.ts';
import {
  ALICE,
  BOB,
  buildBlock,
  CAROL,
  credits,
  GENESIS,
  keyOf,
  NETWORK,
  PARAMS,
  parentOf,
  rejectBlock,
  rewardTx,
  sign as signTxFrom,
  snapshot,
  TestLedger,
} from './fixtures.test-util.ts';
import { HEADER_VERSION, type Header, headerCodec } from './header.ts';
import { EMPTY_ROOT } from './merkle.ts';
import { devnet, MAX_RANKED_PRODUCERS, MAX_TXS_PER_BLOCK, NAME_BLOCKS } from './params.ts';
import { ProducerSchedule, rankProducers, scheduleAfter } from './producer.ts';
import { LedgerState } from './state.ts';
import { BILLING_SETTLE, settlementBytes, type Tx } from './tx.ts';
import { applyBlock, checkContents, checkHeader, findInvalidSignatures, type ParentInfo } from './validate.ts';

const INTERVAL = PARAMS.blockIntervalMs;

/** A block 1 on a fresh state: the reward and a transfer, valid in every respect. */
async function firstBlock(): Promise<{ state: LedgerState; block: Block; txs: Tx[] }> {
  const state = new LedgerState();
  const txs = [
    await rewardTx(state, ALICE, 1),
    await signTxFrom(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: credits(5) }, 1),
    await signTxFrom(ALICE, { kind: 'TrustGrant', subject: BOB.publicKey, trusted: true }, 2),
  ];
  return { state, block: await buildBlock(state, GENESIS, ALICE, txs), txs };
}

/** `block` with header fields replaced (not re-signed: for the checks that come before signatures). */
function withHeader(block: Block, fields: Partial<Header>, txs: readonly Tx[] = block.txs): Block {
  return { ...block, header: { ...block.header, ...fields }, txs };
}

// ---------------------------------------------------------------------------------------------
// Encoding

test('block: encode and decode round-trip every field and transaction', async () => {
  const { block } = await firstBlock();
  const decoded = decodeBlock(NETWORK, block.bytes);
  assert.deepEqual(decoded.header, block.header);
  assert.equal(toHex(decoded.hash), toHex(block.hash));
  assert.equal(toHex(decoded.signature), toHex(block.signature));
  assert.deepEqual(
    decoded.txs.map((t) => toHex(t.id)),
    block.txs.map((t) => toHex(t.id)),
  );
  assert.deepEqual(
    decoded.txs.map((t) => t.body.kind),
    ['UptimeReward', 'Transfer', 'TrustGrant'],
  );
  assert.equal(toHex(decoded.bytes), toHex(block.bytes));
  assert.equal(block.header.tx_count, 3);
  assert.equal(block.header.version, HEADER_VERSION);
});

test('block: a header declaring 1,025 transactions is refused before any transaction is read', async () => {
  const { block } = await firstBlock();
  const garbage = new Uint8Array(500).fill(0xff);
  const declare = (count: number): Uint8Array => concatBytes(encode(headerCodec, { ...block.header, tx_count: count }), block.signature, garbage);
  rejects(() => decodeBlock(NETWORK, declare(MAX_TXS_PER_BLOCK + 1)), InvalidBlockError, 'too-many-txs');
  rejects(() => decodeBlock(NETWORK, declare(0xffff)), InvalidBlockError, 'too-many-txs');
  const headerOnly = encode(headerCodec, { ...block.header, tx_count: MAX_TXS_PER_BLOCK + 1 });
  rejects(() => decodeBlock(NETWORK, headerOnly), InvalidBlockError, 'too-many-txs');
  // At the limit the same garbage is read, and refused as such.
  rejects(() => decodeBlock(NETWORK, declare(MAX_TXS_PER_BLOCK)), InvalidBlockError, 'bad-tx-encoding');
});

test('block: an oversized block is refused by signBlock and before signatures by applyBlock', async () => {
  const { state, block, txs } = await firstBlock();
  const many = Array.from({ length: MAX_TXS_PER_BLOCK + 1 }, () => txs[1]!);
  await rejectsAsync(() => signBlock(NETWORK, { ...block.header }, many, ALICE), InvalidBlockError, 'too-many-txs');
  // The signature is wrong too, but the count is what is reported: it is checked first.
  const forged = { ...withHeader(block, { tx_count: MAX_TXS_PER_BLOCK + 1 }, many), signature: new Uint8Array(64) };
  await rejectBlock(state, forged, GENESIS, 'too-many-txs');
  rejects(() => checkHeader(forged, GENESIS, PARAMS), InvalidBlockError, 'too-many-txs');
});

test('block: malformed bytes are refused with the part that is wrong', async () => {
  const { block } = await firstBlock();
  rejects(() => decodeBlock(NETWORK, block.bytes.subarray(0, 20)), InvalidBlockError, 'bad-header');
  const headerLength = encode(headerCodec, block.header).length;
  rejects(() => decodeBlock(NETWORK, block.bytes.subarray(0, headerLength + 10)), InvalidBlockError, 'truncated-signature');
  rejects(() => decodeBlock(NETWORK, block.bytes.subarray(0, block.bytes.length - 1)), InvalidBlockError, 'bad-tx-encoding');
  rejects(() => decodeBlock(NETWORK, concatBytes(block.bytes, Uint8Array.of(0))), InvalidBlockError, 'trailing-bytes');
  const v2 = concatBytes(encode(headerCodec, { ...block.header, version: 2 }), block.bytes.subarray(headerLength));
  rejects(() => decodeBlock(NETWORK, v2), InvalidBlockError, 'bad-version');
});

test('block: tx_root is a binary Merkle tree of the ids, an odd last node moving up unchanged', () => {
  const ids = [1, 2, 3, 4, 5].map((n) => sha256(Uint8Array.of(n)));
  const [a, b, c, d, e] = ids as [Uint8Array, Uint8Array, Uint8Array, Uint8Array, Uint8Array];
  const node = (l: Uint8Array, r: Uint8Array): Uint8Array => sha256(concatBytes(Uint8Array.of(1), l, r));
  assert.equal(toHex(txRoot([])), toHex(EMPTY_ROOT));
  assert.equal(toHex(txRoot([a])), toHex(a));
  assert.equal(toHex(txRoot([a, b])), toHex(node(a, b)));
  assert.equal(toHex(txRoot([a, b, c])), toHex(node(node(a, b), c)));
  assert.equal(toHex(txRoot(ids)), toHex(node(node(node(a, b), node(c, d)), e)));
  assert.notEqual(toHex(txRoot([b, a])), toHex(txRoot([a, b])), 'order matters');
});

test('block: the stream event reports seconds, the producer as miner and a vestigial nonce', async () => {
  const { block } = await firstBlock();
  assert.deepEqual(blockEvent(block), {
    index: 1,
    hash: toHex(block.hash),
    prev_hash: toHex(GENESIS.hash),
    timestamp: Math.floor(block.header.timestamp_ms / 1000),
    miner: toHex(ALICE.publicKey),
    tx_count: 3,
    nonce: 0,
  });
});

// ---------------------------------------------------------------------------------------------
// Header rules

test('block: checkHeader accepts a block that follows its parent, and refuses each broken link', async () => {
  const { block } = await firstBlock();
  const t = block.header.timestamp_ms;
  checkHeader(block, GENESIS, PARAMS);
  checkHeader(block, GENESIS, PARAMS, t - PARAMS.maxClockDriftMs);
  const cases: [Block, ParentInfo, string, number?][] = [
    [withHeader(block, { version: 2 }), GENESIS, 'bad-version'],
    [withHeader(block, { height: 2 }), GENESIS, 'bad-height'],
    [block, { ...GENESIS, height: 1 }, 'bad-height'],
    [withHeader(block, { prev_hash: sha256(Uint8Array.of(1)) }), GENESIS, 'bad-prev-hash'],
    [block, { ...GENESIS, timestampMs: t }, 'timestamp-not-increasing'],
    [block, { ...GENESIS, timestampMs: t + 1 }, 'timestamp-not-increasing'],
    [block, GENESIS, 'timestamp-in-future', t - PARAMS.maxClockDriftMs - 1],
  ];
  for (const [b, parent, code, now] of cases) {
    rejects(() => checkHeader(b, parent, PARAMS, now), InvalidBlockError, code);
  }
});

test('block: checkContents accepts a block whose transactions match its header, and refuses a wrong count or root', async () => {
  const { block } = await firstBlock();
  checkContents(block);
  const cases: [Block, string][] = [
    [withHeader(block, { tx_count: 2 }), 'bad-tx-count'],
    [withHeader(block, {}, block.txs.slice(0, 2)), 'bad-tx-count'],
    [withHeader(block, { tx_root: sha256(Uint8Array.of(1)) }), 'bad-tx-root'],
    [withHeader(block, {}, [block.txs[1]!, block.txs[0]!, block.txs[2]!]), 'bad-tx-root'],
  ];
  for (const [b, code] of cases) rejects(() => checkContents(b), InvalidBlockError, code);
});

test('block: while applyBlock awaits the signatures, callers see the parent state; the block stands only once they pass', async () => {
  for (const read of [false, true]) {
    const { state, block } = await firstBlock();
    const before = snapshot(state);
    const applying = applyBlock(state, block, GENESIS, PARAMS);
    if (read) {
      assert.equal(state.account(BOB.publicKey).balance, 0n);
      assert.deepEqual(snapshot(state), before);
    }
    await applying;
    assert.equal(state.account(BOB.publicKey).balance, credits(5), read ? 'redone after a read' : 'never undone');
    assert.equal(toHex(state.stateRoot()), toHex(block.header.state_root));

    // A bad producer signature: every rule holds, so the block was applied, and is dropped.
    const fresh = await firstBlock();
    const forged = { ...fresh.block, signature: fresh.block.signature.map((b, i) => (i === 40 ? b ^ 1 : b)) };
    const refused = applyBlock(fresh.state, forged, GENESIS, PARAMS);
    if (read) assert.equal(fresh.state.account(BOB.publicKey).balance, 0n);
    await rejectsAsync(() => refused, InvalidBlockError, 'bad-block-signature');
    assert.deepEqual(snapshot(fresh.state), before);
    // The state takes the same block, well signed, afterwards.
    await applyBlock(fresh.state, fresh.block, GENESIS, PARAMS);
    assert.equal(toHex(fresh.state.stateRoot()), toHex(block.header.state_root));
  }
});

test('block: applyBlock refuses a properly signed block that breaks a header rule, state untouched', async () => {
  const { state, block, txs } = await firstBlock();
  // Every signature good, the transactions reordered under the signed header: checkContents' refusal.
  await rejectBlock(state, withHeader(block, {}, [txs[0]!, txs[2]!, txs[1]!]), GENESIS, 'bad-tx-root');
  const wrongHeight = await signBlock(
    NETWORK,
    { height: 2, prev_hash: GENESIS.hash, timestamp_ms: GENESIS.timestampMs + 2 * INTERVAL, producer: ALICE.publicKey, state_root: EMPTY_ROOT },
    txs,
    ALICE,
  );
  await rejectBlock(state, wrongHeight, GENESIS, 'bad-height');
  const future = await buildBlock(state, GENESIS, ALICE, txs, { timestampMs: GENESIS.timestampMs + 60_000 });
  await rejectBlock(state, future, GENESIS, 'timestamp-in-future', GENESIS.timestampMs + 60_000 - PARAMS.maxClockDriftMs - 1);
  await applyBlock(state, future, GENESIS, PARAMS, GENESIS.timestampMs + 60_000 - PARAMS.maxClockDriftMs);
});

// ---------------------------------------------------------------------------------------------
// Signatures, transactions and the state root

test('block: a block applies with its reward and transactions, and its changes undo it exactly', async () => {
  const { state, block } = await firstBlock();
  const before = snapshot(state);
  const applied = await applyBlock(state, block, GENESIS, PARAMS);
  assert.deepEqual(
    applied.effects.map((e) => e.kind),
    ['UptimeReward', 'Transfer', 'TrustGrant'],
  );
  assert.equal(toHex(state.stateRoot()), toHex(block.header.state_root));
  assert.equal(state.account(BOB.publicKey).balance, credits(5));
  const after = snapshot(state);
  state.applyChanges(applied.changes, 'undo');
  assert.deepEqual(snapshot(state), before);
  state.applyChanges(applied.changes, 'redo');
  assert.deepEqual(snapshot(state), after);

  const next = await buildBlock(state, parentOf(block), BOB, [await rewardTx(state, BOB, 2)]);
  await applyBlock(state, next, parentOf(block), PARAMS);
  assert.equal(state.account(BOB.publicKey).balance, credits(1_005));
});

test('block: a wrong state_root, a failing transaction or a bad signature leaves the state exactly as before', async () => {
  const { state, block, txs } = await firstBlock();
  const wrongRoot = await buildBlock(state, GENESIS, ALICE, txs, { stateRoot: sha256(Uint8Array.of(1)) });
  await rejectBlock(state, wrongRoot, GENESIS, 'bad-state-root');

  const overspend = await signTxFrom(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: credits(1_001) }, 1);
  const failing = await buildBlock(state, GENESIS, ALICE, [txs[0]!, overspend], { stateRoot: EMPTY_ROOT });
  const error = await rejectBlock(state, failing, GENESIS, 'tx-rule');
  assert.match(error.message, /transaction 1 \(Transfer [0-9a-f]{64}\) breaks rule insufficient-free-balance/);

  const badSig = { ...block, signature: block.signature.map((x, i) => (i === 0 ? x ^ 1 : x)) };
  await rejectBlock(state, badSig, GENESIS, 'bad-block-signature');
  const otherSigner = await signBlock(NETWORK, { ...block.header }, block.txs, BOB);
  await rejectBlock(state, otherSigner, GENESIS, 'bad-block-signature');
  const forPeer = await buildBlock(state, GENESIS, ALICE, [txs[0]!, { ...txs[1]!, signature: txs[2]!.signature }]);
  await rejectBlock(state, forPeer, GENESIS, 'bad-tx-signature');

  await applyBlock(state, block, GENESIS, PARAMS);
});

test('block: findInvalidSignatures names the first block with a bad signature, wherever its window falls', async () => {
  // Three blocks of 90 transfers: 273 messages with the headers, enough for a small first window
  // of 128, so block 1's signatures fall on both sides of its end.
  const state = new LedgerState();
  const transfers: Tx[] = [];
  for (let n = 1; n <= 270; n++) transfers.push(await signTxFrom(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 1n }, n));
  const range = async (txsOf: (b: number) => Tx[]): Promise<Block[]> => {
    const blocks: Block[] = [];
    let parent = GENESIS;
    for (let b = 0; b < 3; b++) {
      const block = await buildBlock(state, parent, ALICE, txsOf(b), { stateRoot: EMPTY_ROOT, timestampMs: parent.timestampMs + INTERVAL });
      blocks.push(block);
      parent = parentOf(block);
    }
    return blocks;
  };
  const good = (b: number): Tx[] => transfers.slice(90 * b, 90 * b + 90);
  // Transaction `i` of block `at` carries another transaction's signature.
  const forged =
    (at: number, i: number) =>
    (b: number): Tx[] =>
      good(b).map((tx, j) => (b === at && j === i ? { ...tx, signature: transfers[0]!.signature } : tx));

  assert.isNull(await findInvalidSignatures(await range(good), PARAMS));
  for (const i of [5, 60]) {
    const found = await findInvalidSignatures(await range(forged(1, i)), PARAMS);
    assert.equal(found?.index, 1);
    assert.equal(found?.verified, 1, 'block 0 had every signature verified');
    assert.equal(found?.error.code, 'bad-tx-signature');
    assert.match(found!.error.message, new RegExp(`^transaction ${i} \\(Transfer`));
  }

  const blocks = await range(good);
  const unsigned = [blocks[0]!, blocks[1]!, { ...blocks[2]!, signature: blocks[1]!.signature }];
  const found = await findInvalidSignatures(unsigned, PARAMS);
  assert.deepEqual([found?.index, found?.verified, found?.error.code], [2, 2, 'bad-block-signature']);
  assert.isNull(await findInvalidSignatures(unsigned, PARAMS, true), 'headers verified already are not checked again');

  // A block malformed without its signatures is found before any signature is checked, however
  // late in the range: no block is vouched for.
  const early = await range(forged(0, 3));
  const repeated = { ...early[2]!, txs: [...early[2]!.txs.slice(0, 89), early[2]!.txs[0]!] };
  const malformed = await findInvalidSignatures([early[0]!, early[1]!, repeated], PARAMS);
  assert.deepEqual([malformed?.index, malformed?.verified, malformed?.error.code], [2, 0, 'duplicate-tx']);
});

test("block: findInvalidSignatures maps a bad signature on either side of a full window's end", async () => {
  // Nine blocks of 1,000 copies of one signed transfer (each given its own id, so none repeats):
  // 9,000 messages with the headers taken as verified, in windows of 128, 8,192 and 680.
  const transfer = await signTxFrom(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 1n }, 1);
  const shell = await buildBlock(new LedgerState(), GENESIS, ALICE, [transfer], { stateRoot: EMPTY_ROOT });
  const forgedAt = (at: number): Block[] =>
    Array.from({ length: 9 }, (_, b) => ({
      ...shell,
      txs: Array.from({ length: 1_000 }, (_, i) => ({
        ...transfer,
        id: sha256(encode(uint53, 1_000 * b + i)),
        signature: 1_000 * b + i === at ? new Uint8Array(transfer.signature).reverse() : transfer.signature,
      })),
    }));
  // The last message of the first full window, then the first of the next.
  for (const at of [128 + 8_192 - 1, 128 + 8_192]) {
    const found = await findInvalidSignatures(forgedAt(at), PARAMS, true);
    assert.deepEqual([found?.index, found?.verified, found?.error.code], [8, 8, 'bad-tx-signature']);
    assert.match(found!.error.message, new RegExp(`^transaction ${at - 8_000} \\(Transfer`));
  }
});

// ---------------------------------------------------------------------------------------------
// Producer schedule

const ids = (n: number): string[] => Array.from({ length: n }, (_, i) => toHex(keyOf(i + 10).publicKey)).sort();
const hashOf = (n: number): Uint8Array => sha256(encode(uint53, n));

test('producer: ranking is deterministic per parent, ranks only weighted producers, each once, at most 64', () => {
  const weights = ids(5).map((id, i) => [id, BigInt(i * 10)] as const);
  const ranked = rankProducers(hashOf(1), weights);
  assert.deepEqual(rankProducers(hashOf(1), weights), ranked);
  assert.sameMembers(
    ranked,
    weights.slice(1).map(([id]) => id),
    'zero weight is never ranked',
  );
  const orders = new Set(Array.from({ length: 20 }, (_, n) => rankProducers(hashOf(n), weights).join()));
  assert.isAbove(orders.size, 1, 'the order changes with the parent');

  const crowd = ids(MAX_RANKED_PRODUCERS + 6).map((id) => [id, 1n] as const);
  const top = rankProducers(hashOf(2), crowd);
  assert.lengthOf(top, MAX_RANKED_PRODUCERS);
  assert.lengthOf(new Set(top), MAX_RANKED_PRODUCERS);
  assert.deepEqual(rankProducers(hashOf(2), []), []);
});

test('producer: the first rank is drawn in proportion to weight', () => {
  const [light, heavy] = ids(2) as [string, string];
  const weights = [
    [light, 1n],
    [heavy, 3n],
  ] as const;
  let first = 0;
  const draws = 2_000;
  for (let n = 0; n < draws; n++) if (rankProducers(hashOf(n), weights)[0] === heavy) first++;
  assert.approximately(first / draws, 0.75, 0.04);
});

test('producer: rank r signs from parent + interval × (1 + r); the unranked after every rank, staggered within one interval', () => {
  const parent = hashOf(7);
  const weighted = ids(3).map((id, i) => [id, BigInt(i + 1)] as const);
  const schedule = new ProducerSchedule(parent, 1_000_000, INTERVAL, weighted);
  schedule.ranked.forEach((id, r) => {
    assert.equal(schedule.rankOf(fromHex(id, 32)), r);
    assert.equal(schedule.earliest(fromHex(id, 32)), 1_000_000 + INTERVAL * (1 + r));
  });
  const outsiders = [ALICE, BOB, CAROL].map((k) => k.publicKey);
  const slots = outsiders.map((id) => schedule.earliest(id));
  for (const [i, id] of outsiders.entries()) {
    assert.isNull(schedule.rankOf(id));
    assert.isAtLeast(slots[i]!, 1_000_000 + INTERVAL * 4);
    assert.isBelow(slots[i]!, 1_000_000 + INTERVAL * 5);
    assert.equal(new ProducerSchedule(parent, 1_000_000, INTERVAL, weighted).earliest(id), slots[i], 'deterministic');
  }
  assert.equal(new Set(slots).size, 3, 'unweighted producers are spread apart');

  const empty = new ProducerSchedule(parent, 1_000_000, INTERVAL, []);
  assert.deepEqual(empty.ranked, []);
  const slot = empty.earliest(ALICE.publicKey);
  assert.isAtLeast(slot, 1_000_000 + INTERVAL);
  assert.isBelow(slot, 1_000_000 + 2 * INTERVAL);
});

/** A ledger where Bob has weight (bond and earned work) and Alice has none. */
async function weightedLedger(): Promise<TestLedger> {
  const l = new TestLedger();
  await l.fund(ALICE);
  await l.fund(BOB);
  await l.submit(BOB, { kind: 'HostBond', amount: credits(100) });
  const bid = await l.tx(ALICE, {
    kind: 'JobBid',
    spec_hash: hashOf(0),
    bid: credits(100),
    duration_secs: 60,
    cpu_cores: 1,
    mem_mb: 64,
    billing: BILLING_SETTLE,
    host: null,
  });
  l.apply(bid);
  const payerSig = await ALICE.sign(settlementBytes(NETWORK, bid.id, BOB.publicKey, credits(100)));
  await l.submit(BOB, { kind: 'JobSettle', job_id: bid.id, payer: ALICE.publicKey, cost: credits(100), payer_sig: payerSig });
  assert.deepEqual(
    l.state.weights().map(([id]) => id),
    [toHex(BOB.publicKey)],
  );
  return l;
}

test("producer: a block signed before the producer's slot is refused; at its slot it is accepted", async () => {
  const l = await weightedLedger();
  const parent = l.parent();
  const rank0 = parent.timestampMs + INTERVAL;
  const schedule = scheduleAfter(l.state, parent, INTERVAL);
  const aliceSlot = schedule.earliest(ALICE.publicKey);
  assert.isAtLeast(aliceSlot, parent.timestampMs + 2 * INTERVAL, 'the unweighted wait for the ranked');

  const early = async (key: typeof ALICE, at: number): Promise<Block> =>
    buildBlock(l.state, parent, key, [await rewardTx(l.state, key, l.height)], { timestampMs: at });
  await rejectBlock(l.state, await early(ALICE, rank0), parent, 'producer-too-early');
  await rejectBlock(l.state, await early(ALICE, aliceSlot - 1), parent, 'producer-too-early');
  await rejectBlock(l.state, await early(BOB, rank0 - 1), parent, 'producer-too-early');
  await applyBlock(LedgerState.fromEntries(l.state.entries()), await early(ALICE, aliceSlot), parent, PARAMS);
  await l.applyBlock(await early(BOB, rank0));
});

test('producer: the next ranking depends on who produced, not on the timestamp or contents the producer chose', async () => {
  const l = await weightedLedger();
  const parent = l.parent();
  const rank0 = parent.timestampMs + INTERVAL;
  const after = async (key: typeof ALICE, at: number): Promise<LedgerState> => {
    const copy = LedgerState.fromEntries(l.state.entries());
    await applyBlock(copy, await buildBlock(l.state, parent, key, [await rewardTx(l.state, key, l.height)], { timestampMs: at }), parent, PARAMS);
    return copy;
  };
  const first = await after(BOB, rank0);
  const later = await after(BOB, rank0 + 7);
  assert.equal(toHex(first.producerSeed()), toHex(later.producerSeed()), 'grinding the timestamp changes nothing');
  const other = await after(ALICE, scheduleAfter(l.state, parent, INTERVAL).earliest(ALICE.publicKey));
  assert.notEqual(toHex(other.producerSeed()), toHex(first.producerSeed()), 'another producer moves the seed elsewhere');
  assert.notEqual(toHex(first.producerSeed()), toHex(l.state.producerSeed()));
});

test('devnet: the block interval is an integer from 10 ms to an hour', () => {
  assert.equal(devnet(10).blockIntervalMs, 10);
  assert.equal(devnet(3_600_000).blockIntervalMs, 3_600_000);
  for (const bad of [9, 3_600_001, 1.5, Number.NaN, 2 ** 60]) assert.throws(() => devnet(bad), RangeError, 'from 10 ms to one hour');
});

test('devnet: a name claim lasts NAME_BLOCKS unless the devnet is made for testing expiry (1 to NAME_BLOCKS)', () => {
  assert.equal(devnet(10).nameBlocks, NAME_BLOCKS);
  assert.equal(devnet(10, { nameBlocks: 5 }).nameBlocks, 5);
  for (const bad of [0, NAME_BLOCKS + 1, 1.5]) assert.throws(() => devnet(10, { nameBlocks: bad }), RangeError, 'name claims must last');
});
