import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { type Block, InvalidBlockError, signBlock } from '../ledger/block.ts';
import { type BatchOp, type KeyValueStore, MemoryStore } from '../store/kv.ts';
import { Chain, type ChainEvent } from './chain.ts';
import { nextSlot } from './miner.ts';
import { key, mine, openChain, params, tx } from './testnet.test-util.ts';

const A = key(1);
const B = key(2);
const C = key(3);

// Counts the blocks read from the store; its next batch fails when told to.
class CountingStore extends MemoryStore {
  blockReads = 0;
  failNext = false;

  override get(k: Uint8Array): Promise<Uint8Array | undefined> {
    if (k[0] === 0x42) this.blockReads++;
    return super.get(k);
  }

  override async batch(ops: readonly BatchOp[]): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk full');
    }
    return super.batch(ops);
  }
}

async function dump(store: KeyValueStore): Promise<string[]> {
  const out: string[] = [];
  for await (const [k, v] of store.entries()) out.push(`${toHex(k)}=${toHex(v)}`);
  return out;
}

// A node's chain of 8 blocks (A paying B and C) and a peer's of 9 parting from it after block 1
// (B paying C and A): the peer's branch is what sync holds while it fetches it.
async function partition(): Promise<{ local: Chain; store: CountingStore; theirs: Block[] }> {
  const store = new CountingStore();
  const local = await Chain.open({ store, params });
  const other = await openChain();
  await other.addBranch(await mine(local, A, 1));
  for (let n = 1; n <= 7; n++) await mine(local, A, 1, [await tx(A, { kind: 'Transfer', nonce: n, to: (n % 2 ? B : C).publicKey, amount: BigInt(n) })]);
  const theirs = await mine(other, B, 2);
  for (let n = 1; n <= 6; n++)
    theirs.push(...(await mine(other, B, 1, [await tx(B, { kind: 'Transfer', nonce: n, to: (n % 2 ? C : A).publicKey, amount: BigInt(n) })])));
  return { local, store, theirs };
}

// Holds `theirs` as sync does, a few blocks at a time, preparing the switch or not.
async function hold(local: Chain, theirs: readonly Block[], prepare: boolean): Promise<void> {
  for (const held of [3, 6, 8]) {
    local.readRewindAhead(1, 1 + 2 * held);
    await local.blockEventsFrom(0, 1); // after the read ahead, which runs between changes
    if (prepare) await local.prepareBranch(theirs.slice(0, held), Date.now());
  }
}

async function reorganise(prepare: boolean): Promise<{ store: string[]; root: string; tip: string; events: string[]; blockReads: number }> {
  const { local, store, theirs } = await partition();
  await hold(local, theirs, prepare);
  const events: string[] = [];
  local.subscribe((event: ChainEvent) => {
    if (event.type !== 'equivocation') events.push(`${event.type} ${event.block.header.height} ${event.type === 'connected' ? event.effects.length : ''}`);
  });
  store.blockReads = 0;
  assert.equal(await local.addBranch(theirs), 'reorganized');
  return { store: await dump(store), root: toHex(local.state.stateRoot()), tip: toHex(local.tip.hash), events, blockReads: store.blockReads };
}

test('fork choice: a branch prepared while held is switched to without being applied again, to the same store, state and events', async () => {
  const plain = await reorganise(false);
  const prepared = await reorganise(true);
  assert.equal(plain.blockReads, 1, 'the fork point is read to apply the branch on');
  assert.equal(prepared.blockReads, 0, 'the prepared branch needs nothing from the store');
  assert.equal(prepared.tip, plain.tip);
  assert.equal(prepared.root, plain.root);
  assert.deepEqual(prepared.events, plain.events);
  assert.deepEqual(prepared.store, plain.store, 'blocks, undo records, state and read models alike');
});

test('fork choice: a prepared branch whose chain moved on meanwhile is applied afresh, all the same', async () => {
  const { local, store, theirs } = await partition();
  await hold(local, theirs.slice(0, 8), true);
  await mine(local, A, 1); // height 9: the preparation was against height 8
  const other = await openChain();
  await other.addBranch([(await local.blockAt(1))!, ...theirs]);
  const longer = [...theirs, ...(await mine(other, B, 1))];
  assert.equal(await local.addBranch(longer), 'reorganized');
  assert.equal(toHex(local.tip.hash), toHex(other.tip.hash));
  assert.equal(toHex(local.state.stateRoot()), toHex(other.state.stateRoot()));
  const reopened = await Chain.open({ store, params });
  assert.equal(toHex(reopened.state.stateRoot()), toHex(other.state.stateRoot()));
});

test('fork choice: a prepared branch with an invalid block is refused as an unprepared one, leaving all as it was', async () => {
  const { local, store, theirs } = await partition();
  const other = await openChain();
  await other.addBranch([(await local.blockAt(1))!, ...theirs.slice(0, 7)]);
  // A properly signed block whose state_root lies, after 7 good ones.
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
  const branch = [...theirs.slice(0, 7), bad];
  await hold(local, branch, true);
  const before = await dump(store);
  const tip = toHex(local.tip.hash);
  const root = toHex(local.state.stateRoot());
  await rejectsAsync(() => local.addBranch(branch), InvalidBlockError, 'bad-state-root');
  assert.equal(toHex(local.tip.hash), tip);
  assert.equal(toHex(local.state.stateRoot()), root);
  assert.deepEqual(await dump(store), before);
  await rejectsAsync(() => local.addBlock(bad), InvalidBlockError, 'known-invalid');
});

test('fork choice: a failed write of a prepared switch leaves chain, state and store as they were, and the branch is adopted next time', async () => {
  const { local, store, theirs } = await partition();
  await hold(local, theirs, true);
  const before = await dump(store);
  const tip = toHex(local.tip.hash);
  const root = toHex(local.state.stateRoot());
  store.failNext = true;
  let failed = false;
  try {
    await local.addBranch(theirs);
  } catch (error) {
    failed = (error as Error).message === 'disk full';
  }
  assert.isTrue(failed);
  assert.equal(toHex(local.tip.hash), tip);
  assert.equal(toHex(local.state.stateRoot()), root);
  assert.deepEqual(await dump(store), before);
  assert.equal((await Chain.open({ store, params })).tip.height, 8);
  assert.equal(await local.addBranch(theirs), 'reorganized');
  assert.equal(toHex(local.tip.hash), toHex(theirs[theirs.length - 1]!.hash));
  assert.equal(toHex((await Chain.open({ store, params })).state.stateRoot()), toHex(local.state.stateRoot()));
});

test('fork choice: a preparation dropped because the chain moved is made again only once the branch has doubled', async () => {
  // Prepared at 6 blocks, dropped by a block on the tip: not again at 8 blocks, again at 12.
  const switchReads = async (heldAgain: number): Promise<number> => {
    const { local, store, theirs } = await partition();
    const other = await openChain();
    await other.addBranch([(await local.blockAt(1))!, ...theirs]);
    theirs.push(...(await mine(other, B, 6)));
    local.readRewindAhead(1, 13);
    await local.prepareBranch(theirs.slice(0, 6), Date.now());
    await mine(local, A, 1);
    local.readRewindAhead(1, 1 + 2 * heldAgain);
    await local.prepareBranch(theirs.slice(0, heldAgain), Date.now());
    store.blockReads = 0;
    assert.equal(await local.addBranch(theirs.slice(0, 12)), 'reorganized');
    assert.equal(toHex(local.tip.hash), toHex(theirs[11]!.hash));
    return store.blockReads;
  };
  assert.equal(await switchReads(8), 1, 'applied at the switch, from the fork point read then');
  assert.equal(await switchReads(12), 0, 'prepared again');
});

test('fork choice: a branch level with the tip is a tie only once every block of it applied', async () => {
  const prepared = async (branch: (theirs: Block[], local: Chain) => Promise<Block[]>) => {
    const { local, theirs } = await partition();
    const tip = toHex(local.tip.hash);
    local.readRewindAhead(1, local.tip.height);
    const blocks = await branch(theirs, local);
    await local.checkSignatures(blocks);
    await local.prepareBranch(blocks, Date.now());
    assert.equal(toHex(local.tip.hash), tip, 'preparing changes nothing');
    const tie = local.levelBranch();
    return tie && { hash: tie.hash, forkHeight: tie.forkHeight };
  };
  const level = (theirs: Block[]) => Promise.resolve(theirs.slice(0, 7));
  const { theirs } = await partition();
  assert.deepEqual(await prepared(level), { hash: theirs[6]!.hash, forkHeight: 1 }, 'level with the tip (8), forking at 1');
  // The same height, but its last block lies about its state.
  const lying = async (blocks: Block[], local: Chain) => {
    const other = await openChain();
    await other.addBranch([(await local.blockAt(1))!, ...blocks.slice(0, 6)]);
    const header = { height: other.tip.height + 1, prev_hash: other.tip.hash, timestamp_ms: nextSlot(other, B.publicKey), producer: B.publicKey };
    return [...blocks.slice(0, 6), await signBlock(params.network, { ...header, state_root: new Uint8Array(32).fill(7) }, [], B)];
  };
  assert.isNull(await prepared(lying), 'a level branch with an invalid block is no tie');
  assert.isNull(await prepared((blocks) => Promise.resolve(blocks)), 'a higher branch is no tie: fork choice takes it');
  assert.isNull(await prepared((blocks) => Promise.resolve(blocks.slice(0, 6))), 'a lower one neither');
  // Applying checks no signature: a level branch whose signatures were not checked is no tie.
  const { local, theirs: unchecked } = await partition();
  local.readRewindAhead(1, local.tip.height);
  await local.prepareBranch(unchecked.slice(0, 7), Date.now());
  assert.isNull(local.levelBranch(), 'signatures unchecked');
});
