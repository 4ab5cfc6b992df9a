/**
 * Properties of fork choice over random forks: switching to a longer branch gives exactly the state
 * and store of a chain that only ever saw that branch, and switching back gives the original state root; a
 * store that fails mid-batch leaves the chain as it was.
 */
import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import type { Block } from '../ledger/block.ts';
import { type BatchOp, MemoryStore } from '../store/kv.ts';
import { Chain } from './chain.ts';
import { key, mine, openChain, params, tx } from './testnet.test-util.ts';

const PRODUCERS = [key(1), key(2), key(3)];

/** Mines `length` blocks on `chain`, each with a few transfers between the producers. */
async function grow(chain: Chain, producer: number, length: number, transfers: number[]): Promise<Block[]> {
  const out: Block[] = [];
  for (let i = 0; i < length; i++) {
    const p = PRODUCERS[producer]!;
    const txs = [];
    const balance = chain.state.account(p.publicKey).balance;
    let nonce = chain.state.account(p.publicKey).nonce;
    for (const amount of transfers.slice(i * 2, i * 2 + 2)) {
      if (BigInt(amount) > balance / 4n || amount === 0) continue;
      txs.push(await tx(p, { kind: 'Transfer', nonce: ++nonce, to: PRODUCERS[(producer + 1) % 3]!.publicKey, amount: BigInt(amount) }));
    }
    out.push(...(await mine(chain, p, 1, txs)));
  }
  return out;
}

async function replay(blocks: Block[], store = new MemoryStore()): Promise<Chain> {
  const chain = await openChain({ store });
  if (blocks.length > 0) await chain.addBranch(blocks);
  return chain;
}

// Every entry of `store` but the read models' per-node totals ('Y'), which a node whose counted
// entries were all taken back keeps at zero.
async function dump(store: MemoryStore): Promise<string[]> {
  const out: string[] = [];
  for await (const [k, v] of store.entries()) if (k[0] !== 0x59) out.push(`${toHex(k)}=${toHex(v)}`);
  return out;
}

test('property: reorganising to a longer fork and back gives the states of the branches themselves', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: 3 }),
      fc.integer({ min: 1, max: 3 }),
      fc.integer({ min: 1, max: 2 }),
      fc.array(fc.integer({ min: 0, max: 1_000_000 }), { minLength: 12, maxLength: 12 }),
      async (common, ours, extra, amounts) => {
        const localStore = new MemoryStore();
        const local = await openChain({ store: localStore });
        const shared = await grow(local, 0, common, amounts);
        const mineBranch = await grow(local, 0, ours, amounts.slice(4));
        const rootOurs = toHex(local.state.stateRoot());

        const other = await replay(shared);
        const theirs = await grow(other, 1, ours + extra, amounts.slice(2));
        assert.equal(await local.addBranch(theirs), 'reorganized');
        assert.equal(toHex(local.state.stateRoot()), toHex(other.state.stateRoot()));
        assert.equal(toHex(local.tip.hash), toHex(other.tip.hash));

        // Our branch, extended past theirs, wins again: the state is as if we had never left.
        const backStore = new MemoryStore();
        const back = await replay([...shared, ...mineBranch], backStore);
        assert.equal(toHex(back.state.stateRoot()), rootOurs);
        const more = await grow(back, 2, extra + 1, amounts.slice(6));
        assert.equal(await local.addBranch(more), 'reorganized');
        assert.equal(toHex(local.state.stateRoot()), toHex(back.state.stateRoot()));
        assert.deepEqual(
          (await local.blocksFrom(1, 500)).map((b) => toHex(b.hash)),
          (await back.blocksFrom(1, 500)).map((b) => toHex(b.hash)),
        );
        // Blocks, heights, undo records, state and read models: what the branch itself would hold.
        assert.deepEqual(await dump(localStore), await dump(backStore));
      },
    ),
    { numRuns: 12 },
  );
});

/** A store whose next batch fails, as a full disk or a killed process would make it. */
class FailingStore extends MemoryStore {
  failNext = false;
  override async batch(ops: readonly BatchOp[]): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk full');
    }
    return super.batch(ops);
  }
}

test('chain: a failed write leaves chain, state and store as they were, and the chain goes on', async () => {
  const store = new FailingStore();
  const chain = await Chain.open({ store, params });
  await mine(chain, PRODUCERS[0]!, 2);
  const other = await replay(await chain.blocksFrom(1, 1));
  const longer = await grow(other, 1, 3, []);
  const tip = toHex(chain.tip.hash);
  const root = toHex(chain.state.stateRoot());
  store.failNext = true;
  let failed = false;
  try {
    await chain.addBranch(longer);
  } catch (error) {
    failed = (error as Error).message === 'disk full';
  }
  assert.isTrue(failed);
  assert.equal(toHex(chain.tip.hash), tip);
  assert.equal(toHex(chain.state.stateRoot()), root);
  const reopened = await Chain.open({ store, params });
  assert.equal(toHex(reopened.tip.hash), tip);
  assert.equal(await chain.addBranch(longer), 'reorganized');
  assert.equal(toHex(chain.state.stateRoot()), toHex(other.state.stateRoot()));
});
