import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { CREDIT } from '../encoding/amount.ts';
import { concatBytes } from '../encoding/bytes.ts';
import { encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { decodeBlock, InvalidBlockError, signBlock } from '../ledger/block.ts';
import { headerCodec } from '../ledger/header.ts';
import { devnet } from '../ledger/params.ts';
import { LedgerState } from '../ledger/state.ts';
import { decodeTx } from '../ledger/tx.ts';
import { type KeyValueStore, MemoryStore } from '../store/kv.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { Chain, type ChainEvent, ForkChoiceError } from './chain.ts';
import { Mempool } from './mempool.ts';
import { nextSlot } from './miner.ts';
import { copyChain, key, mine, nextBlock, openChain, params, SlowStore, tx } from './testnet.test-util.ts';

const A = key(1);
const B = key(2);
const C = key(3);

async function dump(store: KeyValueStore): Promise<string[]> {
  const out: string[] = [];
  for await (const [k, v] of store.entries()) out.push(`${toHex(k)}=${toHex(v)}`);
  return out;
}

/** Two chains sharing the first `common` blocks (mined by A), then each on its own. */
async function forked(common: number): Promise<{ local: Chain; other: Chain; localStore: MemoryStore }> {
  const localStore = new MemoryStore();
  const local = await Chain.open({ store: localStore, params });
  const other = await openChain();
  const shared = await mine(local, A, common);
  await other.addBranch(shared);
  return { local, other, localStore };
}

test('chain: a new store starts at the fixed genesis of its network', async () => {
  const one = await openChain();
  const two = await openChain();
  assert.equal(one.tip.height, 0);
  assert.equal(toHex(one.tip.hash), toHex(two.tip.hash));
  const dev2 = await Chain.open({ store: new MemoryStore(), params: devnet(500) });
  assert.equal(toHex(dev2.genesis.hash), toHex(one.genesis.hash), 'the devnet genesis does not depend on the interval');
  const main = await Chain.open({ store: new MemoryStore(), params: { ...params, network: 'mesh' } });
  assert.notEqual(toHex(main.genesis.hash), toHex(one.genesis.hash));
});

test('chain: blocks extend the tip, and a reopened store has the same tip and state', async () => {
  const store = new MemoryStore();
  const chain = await Chain.open({ store, params });
  const blocks = await mine(chain, A, 5);
  assert.equal(chain.tip.height, 5);
  assert.deepEqual(chain.beacon(), { height: 5, hash: toHex(blocks[4]!.hash) });
  assert.equal(chain.state.account(A.publicKey).balance, 5_000n * CREDIT);
  const again = await Chain.open({ store, params });
  assert.equal(again.tip.height, 5);
  assert.equal(toHex(again.state.stateRoot()), toHex(chain.state.stateRoot()));
  assert.equal(toHex((await again.blockAt(3))!.hash), toHex(blocks[2]!.hash));
  assert.equal((await again.blocksFrom(1, 500)).length, 5);
});

test('fork choice: a longer valid fork replaces the local chain', async () => {
  const { local, other } = await forked(2);
  await mine(local, A, 2);
  const theirs = await mine(other, B, 3);
  const outcome = await local.addBranch(theirs);
  assert.equal(outcome, 'reorganized');
  assert.equal(toHex(local.tip.hash), toHex(other.tip.hash));
  assert.equal(toHex(local.state.stateRoot()), toHex(other.state.stateRoot()));
  assert.equal(local.state.account(B.publicKey).balance, 3_000n * CREDIT);
  assert.equal(local.state.account(A.publicKey).balance, 2_000n * CREDIT);
});

test('fork choice: an equal-length fork does not replace the local chain', async () => {
  const { local, other } = await forked(1);
  const ours = await mine(local, A, 2);
  const theirs = await mine(other, B, 2);
  const root = toHex(local.state.stateRoot());
  assert.equal(await local.addBranch(theirs), 'side');
  assert.equal(toHex(local.tip.hash), toHex(ours[1]!.hash));
  assert.equal(toHex(local.state.stateRoot()), root);
  // One more block on their side makes it longer: the kept side blocks let a single block switch.
  const next = await nextBlock(other, B);
  await other.addBlock(next);
  assert.equal(await local.addBlock(next), 'reorganized');
  assert.equal(toHex(local.tip.hash), toHex(next.hash));
});

test('fork choice: a fork with an invalid block aborts and leaves chain, state and store exactly as they were', async () => {
  const { local, other, localStore } = await forked(1);
  await mine(local, A, 1);
  const good = await mine(other, B, 1);
  // A properly signed block whose state_root lies.
  const parent = other.tip;
  const bad = await signBlock(
    params.network,
    {
      height: parent.height + 1,
      prev_hash: parent.hash,
      timestamp_ms: nextSlot(other, B.publicKey),
      producer: B.publicKey,
      state_root: new Uint8Array(32).fill(7),
    },
    [],
    B,
  );
  const before = await dump(localStore);
  const tip = toHex(local.tip.hash);
  const root = toHex(local.state.stateRoot());
  await rejectsAsync(() => local.addBranch([...good, bad]), InvalidBlockError, 'bad-state-root');
  assert.equal(toHex(local.tip.hash), tip);
  assert.equal(toHex(local.state.stateRoot()), root);
  assert.deepEqual(await dump(localStore), before);
  // The invalid block and anything built on it are refused at once from now on.
  await rejectsAsync(() => local.addBlock(bad), InvalidBlockError, 'known-invalid');
});

test('fork choice: blocks with no common ancestor are rejected', async () => {
  const local = await openChain();
  await mine(local, A, 2);
  const stranger = await Chain.open({ store: new MemoryStore(), params: { ...params, network: 'elsewhere' } });
  const foreign = await mine(stranger, B, 3);
  await rejectsAsync(() => local.addBranch(foreign), ForkChoiceError, 'no-common-ancestor');
  assert.equal(local.tip.height, 2);
  // A single block whose parent is unknown is reported as such (the caller syncs).
  await rejectsAsync(() => local.addBlock(foreign[2]!), ForkChoiceError, 'unknown-parent');
});

test('fork choice: reorganising away and back gives the identical state root', async () => {
  const { local, other } = await forked(1);
  const pay = await tx(A, { kind: 'Transfer', nonce: 1, to: C.publicKey, amount: 5n });
  const ours = await mine(local, A, 2, [pay]);
  const rootA = toHex(local.state.stateRoot());
  const theirs = await mine(other, B, 3);
  assert.equal(await local.addBranch(theirs), 'reorganized');
  assert.equal(local.state.account(C.publicKey).balance, 0n);
  // Our side grows longer again: back to it.
  const replay = await openChain();
  await replay.addBranch([(await local.blockAt(1))!, ...ours]);
  const more = await mine(replay, A, 2);
  assert.equal(toHex(replay.state.stateRoot()) === rootA, false);
  assert.equal(await local.addBranch(more), 'reorganized');
  assert.equal(toHex(local.tip.hash), toHex(replay.tip.hash));
  assert.equal(toHex(local.state.stateRoot()), toHex(replay.state.stateRoot()));
  assert.equal(local.state.account(C.publicKey).balance, 5n);
});

test('fork choice: a reorganisation returns orphaned transactions to the mempool', async () => {
  const { local, other } = await forked(1);
  const pool = new Mempool(local);
  const pay = await tx(A, { kind: 'Transfer', nonce: 1, to: C.publicKey, amount: 9n });
  await pool.add(pay);
  await mine(local, A, 1, pool);
  assert.equal(pool.size, 0, 'the mined transaction left the pool');
  assert.equal(local.state.account(C.publicKey).balance, 9n);
  const events: ChainEvent['type'][] = [];
  local.subscribe((e) => events.push(e.type));
  await local.addBranch(await mine(other, B, 2));
  assert.deepEqual(events, ['disconnected', 'connected', 'connected']);
  assert.isTrue(pool.has(pay.id), 'the orphaned transfer is pooled again');
  assert.equal(local.state.account(C.publicKey).balance, 0n);
});

test('fork choice: a signed block on a parent this node lacks still counts as evidence of equivocation', async () => {
  const local = await openChain();
  await mine(local, A, 1);
  const other = await copyChain(local);
  await mine(local, A, 2);
  // A signs another block 2 and a block 3 on it, on another branch; only block 3 reaches this node.
  await other.addBlock(await nextBlock(other, A, null, 1));
  const orphan = await nextBlock(other, A);
  await other.addBlock(orphan);
  const evidence: ChainEvent[] = [];
  local.subscribe((e) => e.type === 'equivocation' && evidence.push(e));
  await rejectsAsync(() => local.addBlock(orphan), ForkChoiceError, 'unknown-parent');
  assert.equal(evidence.length, 1, 'A signed block 3 here and there');
  const e = evidence[0]!;
  assert(e.type === 'equivocation');
  assert.deepEqual([e.evidence[0].header.height, e.evidence[1].header.height], [3, 3]);
  // A forged orphan records nothing and is refused for its parent all the same.
  const forged = { ...orphan, signature: orphan.signature.map((x, i) => (i === 0 ? x ^ 1 : x)) };
  await rejectsAsync(() => local.addBlock(forged), ForkChoiceError, 'unknown-parent');
  assert.equal(evidence.length, 1);
});

test('fork choice: two blocks by one producer at one height yield equivocation evidence', async () => {
  const local = await openChain();
  await mine(local, A, 1);
  const first = await nextBlock(local, A);
  const second = await nextBlock(local, A, null, 1);
  assert.notEqual(toHex(first.hash), toHex(second.hash));
  const evidence: ChainEvent[] = [];
  local.subscribe((e) => e.type === 'equivocation' && evidence.push(e));
  await local.addBlock(first);
  assert.equal(await local.addBlock(second), 'side');
  assert.equal(evidence.length, 1);
  const e = evidence[0]!;
  assert(e.type === 'equivocation');
  assert.equal(e.evidence[0].header.height, 2);
  assert.equal(toHex(e.evidence[1].header.producer), toHex(A.publicKey));
  // The evidence is a valid SlashEquivocation transaction for anyone to submit.
  await mine(local, B, 1);
  const bond = await tx(A, { kind: 'HostBond', nonce: 1, amount: 100n });
  await mine(local, B, 1, [bond]);
  assert.equal(local.state.account(A.publicKey).bond, 100n);
  const slash = await tx(B, { kind: 'SlashEquivocation', nonce: 1, a: e.evidence[0], b: e.evidence[1] });
  await mine(local, B, 1, [slash]);
  assert.equal(local.state.account(A.publicKey).bond, 0n);
  assert.equal(local.state.supply().burned, 100n);
});

test('chain: a block from too far in the future is rejected; the producer schedule is enforced', async () => {
  const local = await openChain();
  const block = await nextBlock(local, A);
  await rejectsAsync(() => local.addBlock(block, block.header.timestamp_ms - params.maxClockDriftMs - 1), InvalidBlockError, 'timestamp-in-future');
  const early = await signBlock(
    params.network,
    { height: 1, prev_hash: local.tip.hash, timestamp_ms: local.tip.timestampMs + 1, producer: A.publicKey, state_root: block.header.state_root },
    block.txs,
    A,
  );
  await rejectsAsync(() => local.addBlock(early), InvalidBlockError, 'producer-too-early');
  assert.equal(await local.addBlock(block, block.header.timestamp_ms), 'extended');
});

test('light node: keeps the last blocks only, and cannot rewind below them', async () => {
  const light = await openChain({ mode: 'light', retainBlocks: 5 });
  await mine(light, A, 12);
  assert.equal(light.base, 8);
  assert.isUndefined(await light.blockAt(7));
  assert.isDefined(await light.blockAt(8));
  assert.equal((await light.blocksFrom(0, 500)).length, 5);
  const history = await light.history(A.publicKey);
  assert.isTrue(history.window_partial, 'a pruned node reports a partial window');
  await rejectsAsync(
    async () => {
      // A competing branch forking below the base cannot be adopted.
      await light.addBranch(await mine(await openChain(), B, 13));
    },
    ForkChoiceError,
    'too-deep',
  );
});

test('light node: starts from a snapshot checked against the checkpoint state_root', async () => {
  const full = await openChain();
  await mine(full, A, 6);
  await mine(full, A, 1, [await tx(A, { kind: 'Transfer', nonce: 1, to: B.publicKey, amount: 3n })]);
  const snapshot = await full.snapshotAt(4);
  assert.equal(snapshot.block.header.height, 4);
  const checkpoint = (await full.hashAt(4))!;
  const tampered = { ...snapshot, entries: snapshot.entries.map(([k, v], i) => [k, i === 0 ? v.map((b) => b ^ 1) : v] as const) };
  await rejectsAsync(() => Chain.openFromSnapshot({ store: new MemoryStore(), params }, tampered, checkpoint), ForkChoiceError, 'snapshot-root');
  // A peer cannot pick the block either: a self-signed block over a made-up state is refused.
  const forgedState = LedgerState.fromEntries(snapshot.entries);
  forgedState.setAccount(C.publicKey, { ...forgedState.account(C.publicKey), balance: 10n ** 30n });
  const forgedBlock = await signBlock(
    params.network,
    { height: 5_000, prev_hash: new Uint8Array(32), timestamp_ms: 1, producer: C.publicKey, state_root: forgedState.stateRoot() },
    [],
    C,
  );
  const forged = { block: forgedBlock, entries: forgedState.entries() };
  await rejectsAsync(() => Chain.openFromSnapshot({ store: new MemoryStore(), params }, forged, checkpoint), ForkChoiceError, 'snapshot-checkpoint');
  const light = await Chain.openFromSnapshot({ store: new MemoryStore(), params, retainBlocks: 5 }, snapshot, checkpoint);
  assert.equal(light.mode, 'light');
  assert.equal(light.tip.height, 4);
  assert.equal(await light.addBranch(await full.blocksFrom(5, 500)), 'extended');
  assert.equal(toHex(light.state.stateRoot()), toHex(full.state.stateRoot()));
  assert.equal(light.state.account(B.publicKey).balance, 3n);
});

test('fork choice: a tampered copy relayed first does not make the genuine block invalid', async () => {
  const { local, other } = await forked(1);
  const pay = await tx(B, { kind: 'Transfer', nonce: 1, to: C.publicKey, amount: 1n });
  await local.addBlock((await mine(other, B, 1))[0]!);
  const [genuine] = await mine(other, B, 1, [pay]);
  const child = await nextBlock(other, B);
  await other.addBlock(child);
  const stripped = { ...genuine!, signature: new Uint8Array(64) };
  await rejectsAsync(() => local.addBlock(stripped), InvalidBlockError, 'bad-block-signature');
  const flipped = await tx(B, { kind: 'Transfer', nonce: 1, to: C.publicKey, amount: 2n });
  const swapped = { ...genuine!, txs: [genuine!.txs[0]!, flipped] };
  await rejectsAsync(() => local.addBlock(swapped), InvalidBlockError, 'bad-tx-root');
  // The genuine chain is still accepted, block by block and as a branch.
  assert.equal(await local.addBlock(genuine!), 'extended');
  assert.equal(await local.addBranch([child]), 'extended');
  assert.equal(toHex(local.tip.hash), toHex(child.hash));
});

test('fork choice: a branch longer than a sync response is adopted at once, all of it', async () => {
  // Sync gathers a deep fork's branch from several answers and hands it over once it is longer.
  const local = await openChain();
  await mine(local, B, 300);
  const blocks = await mine(await openChain(), A, 501);
  assert.equal(await local.addBranch(blocks), 'reorganized');
  assert.equal(toHex(local.tip.hash), toHex(blocks[500]!.hash));
});

test('light node: a branch longer than the retention window leaves only the retained blocks', async () => {
  const light = await openChain({ mode: 'light', retainBlocks: 3 });
  const full = await openChain();
  await mine(full, A, 8);
  assert.equal(await light.addBranch(await full.blocksFrom(1, 500)), 'extended');
  assert.equal(light.base, 6);
  assert.isUndefined(await light.blockAt(5));
  assert.deepEqual(
    (await light.blocksFrom(0, 500)).map((b) => b.header.height),
    [6, 7, 8],
  );
  assert.deepEqual(
    (await light.transactions(A.publicKey)).map((t) => t.height),
    [8, 7, 6],
  );
});

// Counts the blocks read from the store.
class BlockReadCountingStore extends MemoryStore {
  blockReads = 0;

  override get(key: Uint8Array): Promise<Uint8Array | undefined> {
    if (key[0] === 0x42) this.blockReads++;
    return super.get(key);
  }
}

// A node's chain of 8 blocks (transfers to B and C among them) replaced by a peer's 9, with the
// blocks it rewinds read ahead up to height 7 (its tip then) or not at all.
async function reorganiseReadAhead(ahead: boolean): Promise<{ blockReads: number; store: string[]; tip: string }> {
  const store = new BlockReadCountingStore();
  const local = await Chain.open({ store, params });
  const other = await openChain();
  await other.addBranch(await mine(local, A, 1));
  await mine(local, A, 1);
  for (let n = 1; n <= 5; n++) await mine(local, A, 1, [await tx(A, { kind: 'Transfer', nonce: n, to: (n % 2 ? B : C).publicKey, amount: BigInt(n) })]);
  const theirs = await mine(other, B, 8);
  if (ahead) {
    local.readRewindAhead(1, 9);
    await local.blockEventsFrom(0, 1); // after the read, which runs between changes
  }
  await mine(local, A, 1); // height 8: after the read ahead
  store.blockReads = 0;
  assert.equal(await local.addBranch(theirs), 'reorganized');
  return { blockReads: store.blockReads, store: await dump(store), tip: toHex(local.tip.hash) };
}

test('fork choice: blocks read ahead of a reorganisation are rewound from memory, to the same store', async () => {
  const read = await reorganiseReadAhead(false);
  const ahead = await reorganiseReadAhead(true);
  // The fork point's block (height 1) is read either way.
  assert.equal(read.blockReads, 8, 'heights 1 to 8 read when the switch comes');
  assert.equal(ahead.blockReads, 2, 'only the fork point and the block mined after the read ahead');
  assert.equal(ahead.tip, read.tip);
  assert.deepEqual(ahead.store, read.store, 'blocks, undo records, state and read models alike');
});

test('read models: itemized transactions newest first with limit and before cursor', async () => {
  const chain = await openChain();
  await mine(chain, A, 1);
  for (let n = 1; n <= 4; n++) await mine(chain, A, 1, [await tx(A, { kind: 'Transfer', nonce: n, to: B.publicKey, amount: BigInt(n) })]);
  const all = await chain.transactions(B.publicKey, { limit: 100 });
  assert.deepEqual(
    all.map((t) => t.amount),
    ['4', '3', '2', '1'],
  );
  assert.isTrue(all.every((t) => t.direction === 'in' && t.kind === 'Transfer' && t.counterparty === toHex(A.publicKey)));
  const page = await chain.transactions(B.publicKey, { limit: 2 });
  assert.deepEqual(
    page.map((t) => t.amount),
    ['4', '3'],
  );
  const older = await chain.transactions(B.publicKey, { limit: 2, before: page[1]!.height });
  assert.deepEqual(
    older.map((t) => t.amount),
    ['2', '1'],
  );
  const mine_ = await chain.transactions(A.publicKey, { limit: 3 });
  assert.deepEqual(
    mine_.map((t) => [t.kind, t.direction]),
    [
      ['Transfer', 'out'],
      ['UptimeReward', 'in'],
      ['Transfer', 'out'],
    ],
  );
  assert.deepEqual(await chain.transactions(C.publicKey, { limit: 5 }), []);
});

test('read models: history counts settled jobs and heartbeats, post-burn earned, gross spent', async () => {
  const chain = await openChain();
  await mine(chain, A, 1);
  const bid = await tx(A, {
    kind: 'JobBid',
    nonce: 1,
    spec_hash: new Uint8Array(32),
    bid: 1_000n,
    duration_secs: 60,
    cpu_cores: 1,
    mem_mb: 64,
    billing: 1,
    host: B.publicKey,
  });
  await mine(chain, A, 1, [bid]);
  const beat = await tx(B, { kind: 'Heartbeat', nonce: 1, job_id: bid.id, cell: A.publicKey, epoch: 1 });
  await mine(chain, A, 1, [beat]);
  const host = await chain.history(B.publicKey);
  assert.equal(host.heartbeats_hosted, 1);
  assert.equal(host.earned, '495'); // 500 less the 1 % burn
  assert.equal(host.recent_earned, '495');
  assert.equal(host.first_height, 3);
  assert.equal(host.last_height, 3);
  const payer = await chain.history(A.publicKey);
  assert.equal(payer.heartbeats_paid, 1);
  assert.equal(payer.spent, '500');
  assert.equal(payer.recent_spent, '500');
  assert.isFalse(payer.window_partial);
  const nobody = await chain.history(C.publicKey);
  assert.equal(nobody.first_height, 0);
  assert.equal(nobody.earned, '0');
});

test('read models: a reorganisation takes the history of the blocks it removes back, and counts the new ones', async () => {
  const { local, other } = await forked(1);
  const bid = await tx(A, {
    kind: 'JobBid',
    nonce: 1,
    spec_hash: new Uint8Array(32),
    bid: 1_000n,
    duration_secs: 60,
    cpu_cores: 1,
    mem_mb: 64,
    billing: 1,
    host: B.publicKey,
  });
  await other.addBranch(await mine(local, A, 1, [bid]));
  const beat = await tx(B, { kind: 'Heartbeat', nonce: 1, job_id: bid.id, cell: A.publicKey, epoch: 1 });
  await mine(local, A, 1, [beat]);
  assert.equal((await local.history(B.publicKey)).earned, '495');
  // The peer's branch from height 2 carries the bid but no heartbeat, and a transfer to C.
  const pay = await tx(A, { kind: 'Transfer', nonce: 2, to: C.publicKey, amount: 7n });
  assert.equal(await local.addBranch([...(await mine(other, A, 1, [pay])), ...(await mine(other, A, 1))]), 'reorganized');
  const host = await local.history(B.publicKey);
  assert.equal(host.heartbeats_hosted, 0);
  assert.equal(host.earned, '0');
  assert.equal(host.recent_earned, '0');
  assert.equal(host.first_height, 0);
  const payer = await local.history(A.publicKey);
  assert.equal(payer.heartbeats_paid, 0);
  assert.equal(payer.spent, '0');
  assert.deepEqual(
    (await local.transactions(C.publicKey)).map((t) => [t.height, t.amount]),
    [[3, '7']],
  );
});

test('read models: a confirmed transaction is located by id, and forgotten when its block leaves', async () => {
  const { local, other } = await forked(1);
  const sent = await tx(A, { kind: 'Transfer', nonce: 1, to: B.publicKey, amount: 5n });
  const [block] = await mine(local, A, 1, [sent]);
  assert.equal(await local.txHeight(sent.id), 2);
  assert.equal(await local.txHeight(block!.txs[0]!.id), 2, 'the reward is indexed too');
  assert.isUndefined(await local.txHeight(new Uint8Array(32)));
  await local.addBranch(await mine(other, B, 2));
  assert.isUndefined(await local.txHeight(sent.id), 'a disconnected block takes its transactions with it');

  const light = await openChain({ mode: 'light', retainBlocks: 2 });
  const full = await openChain();
  const blocks = await mine(full, A, 4);
  await light.addBranch(blocks);
  assert.isUndefined(await light.txHeight(blocks[0]!.txs[0]!.id), 'pruned');
  assert.equal(await light.txHeight(blocks[3]!.txs[0]!.id), 4);
});

test('chain: blockBytesFrom never claims a tip whose blocks the store does not hold yet', async () => {
  // The tip moves with the state, before the block's batch is written. A sync answer read in that
  // moment used to claim the new tip and send nothing for it, which made an honest peer look like
  // one that claims heights it cannot serve.
  const clock = testScheduler();
  const store = new SlowStore(clock);
  const chain = await openChain({ store });
  await mine(chain, A, 3);
  store.delayMs = 50;
  const adding = chain.addBlock(await nextBlock(chain, A));
  await clock.advance(10);
  // The read waits for the block's batch, which the clock lets end.
  const reading = chain.blockBytesFrom(1, 500, 1 << 20);
  await clock.advance(40);
  const { blocks, tipHeight } = await reading;
  assert.equal(blocks.length, tipHeight, 'every block up to the claimed tip is sent');
  assert.equal(await adding, 'extended');
  assert.equal((await chain.blockBytesFrom(4, 500, 1 << 20)).blocks.length, 1);
});

test('chain: until the batch of a block is written, callers see the state before it; then the block, read meanwhile or not', async () => {
  for (const read of [false, true]) {
    const clock = testScheduler();
    const store = new SlowStore(clock);
    const chain = await openChain({ store });
    await mine(chain, A, 3);
    const before = chain.state.account(A.publicKey).balance;
    store.delayMs = 50;
    const block = await nextBlock(chain, A);
    const adding = chain.addBlock(block);
    await clock.advance(10);
    if (read) {
      assert.equal(chain.state.account(A.publicKey).balance, before);
      assert.equal(chain.tip.height, 3);
    }
    await clock.advance(40);
    assert.equal(await adding, 'extended');
    assert.equal(chain.state.account(A.publicKey).balance, before + 1_000n * CREDIT);
    assert.equal(toHex(chain.state.stateRoot()), toHex(block.header.state_root));
    const again = await Chain.open({ store, params });
    assert.equal(toHex(again.state.stateRoot()), toHex(block.header.state_root), 'the store holds what the state shows');
  }
});

test('sync: a range whose signatures were checked ahead is added; a stripped copy and a forged transaction are still refused', async () => {
  const { local, other } = await forked(1);
  const range = await mine(other, A, 3);
  await local.checkSignatures(range);
  const stripped = { ...range[0]!, signature: new Uint8Array(64) };
  await rejectsAsync(() => local.addBranch([stripped, ...range.slice(1)]), InvalidBlockError, 'bad-block-signature');
  assert.equal(local.tip.height, 1);
  assert.equal(await local.addBranch(range), 'extended');
  assert.equal(toHex(local.tip.hash), toHex(range[2]!.hash));

  const first = await tx(A, { kind: 'Transfer', nonce: 1, to: C.publicKey, amount: 1n });
  const second = await tx(A, { kind: 'Transfer', nonce: 2, to: C.publicKey, amount: 2n });
  const forged = await nextBlock(other, A, [{ ...first, signature: second.signature }]);
  const root = toHex(local.state.stateRoot());
  await local.checkSignatures([forged]);
  await rejectsAsync(() => local.addBlock(forged), InvalidBlockError, 'bad-tx-signature');
  assert.equal(toHex(local.tip.hash), toHex(range[2]!.hash));
  assert.equal(toHex(local.state.stateRoot()), root);
});

/** A block after `parent`, signed by C, that fails a check of its shape: the same transaction twice. */
async function duplicateTxBlock(parent: {
  hash: Uint8Array;
  header: { height: number; timestamp_ms: number };
}): Promise<Awaited<ReturnType<typeof signBlock>>> {
  const t = await tx(C, { kind: 'Transfer', nonce: 1, to: B.publicKey, amount: 1n });
  const header = {
    height: parent.header.height + 1,
    prev_hash: parent.hash,
    timestamp_ms: parent.header.timestamp_ms + 1,
    producer: C.publicKey,
    state_root: new Uint8Array(32),
  };
  return signBlock(params.network, header, [t, t], C);
}

test('sync: a range refused for its shape vouches for none of its blocks: a forged transaction signature before the bad block is still refused', async () => {
  const local = await openChain();
  await mine(local, A, 1);
  const balance = local.state.account(B.publicKey).balance;
  // A transfer from A that A never signed, in a block B signed; then a block with a duplicate transaction.
  const real = await tx(A, { kind: 'Transfer', nonce: 1, to: B.publicKey, amount: 500n * CREDIT });
  const forged = decodeTx(concatBytes(real.bodyBytes, new Uint8Array(64).fill(9)));
  const b1 = await nextBlock(local, B, [forged]);
  await local.checkSignatures([b1, await duplicateTxBlock(b1)]);
  await rejectsAsync(() => local.addBlock(b1), InvalidBlockError, 'bad-tx-signature');
  assert.equal(local.state.account(B.publicKey).balance, balance);
});

test('sync: a range refused for its shape vouches for none of its blocks: a forged producer signature is never adopted', async () => {
  const local = await openChain();
  const other = await openChain();
  await other.addBranch(await mine(local, A, 1));
  await mine(local, C, 2);
  const [genuine] = await mine(other, A, 1);
  const more = await mine(other, B, 2);
  // A's block with its signature bytes overwritten on the wire: the hash stays, the signature is not A's.
  const wire = genuine!.bytes.slice();
  const at = encode(headerCodec, genuine!.header).length;
  wire.fill(7, at, at + 64);
  const forged = decodeBlock(params.network, wire);
  await local.checkSignatures([forged, await duplicateTxBlock(forged)]);
  await rejectsAsync(() => local.addBranch([forged]), InvalidBlockError, 'bad-block-signature');
  // The genuine branch is adopted, with A's own signature.
  assert.equal(await local.addBranch([genuine!, ...more]), 'reorganized');
  assert.equal(toHex((await local.blockAt(2))!.signature), toHex(genuine!.signature));
});
