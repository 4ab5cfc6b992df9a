import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { LedgerRuleError } from '../ledger/apply.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { Mempool, MempoolError } from './mempool.ts';
import { key, mine, nextBlock, openChain, SlowStore, tx } from './testnet.test-util.ts';

const A = key(1);
const B = key(2);
const C = key(3);

const transfer = (signer = A, nonce = 1, amount = 1n, to = C) => tx(signer, { kind: 'Transfer', nonce, to: to.publicKey, amount });

test('mempool: accepts a valid transaction and rejects its duplicate', async () => {
  const chain = await openChain();
  await mine(chain, A, 1);
  const pool = new Mempool(chain);
  const t = await transfer();
  const effect = await pool.add(t);
  assert.equal(effect.kind, 'Transfer');
  assert.equal(effect.amount, (t.body as { amount: bigint }).amount, 'add tells what the transaction does');
  assert.isTrue(pool.has(t.id));
  await rejectsAsync(() => pool.add(t), MempoolError, 'duplicate');
  assert.equal(pool.size, 1);
});

test('mempool: validates against the tip state and names the broken rule', async () => {
  const chain = await openChain();
  await mine(chain, A, 1);
  const pool = new Mempool(chain);
  await rejectsAsync(() => transfer(A, 1, 0n).then((t) => pool.add(t)), LedgerRuleError, 'transfer-zero');
  await rejectsAsync(() => transfer(B, 1, 1n).then((t) => pool.add(t)), LedgerRuleError, 'insufficient-free-balance');
  await rejectsAsync(() => transfer(A, 2).then((t) => pool.add(t)), LedgerRuleError, 'nonce-gap');
  const reward = await tx(A, { kind: 'UptimeReward', nonce: 2, amount: 1n });
  await rejectsAsync(() => pool.add(reward), MempoolError, 'reward-not-poolable');
  assert.equal(pool.size, 0);
});

test('mempool: rejects a bad signature', async () => {
  const chain = await openChain();
  await mine(chain, A, 1);
  const pool = new Mempool(chain);
  const t = await transfer();
  const forged = { ...t, signature: t.signature.map((x, i) => (i === 5 ? x ^ 1 : x)) };
  await rejectsAsync(() => pool.add(forged), MempoolError, 'bad-signature');
});

test('mempool: orders each sender by nonce and checks the sequence as a whole', async () => {
  const chain = await openChain();
  await mine(chain, A, 1);
  const pool = new Mempool(chain);
  const second = await transfer(A, 2, 5n);
  const first = await transfer(A, 1, 5n);
  await rejectsAsync(() => pool.add(second), LedgerRuleError, 'nonce-gap');
  await pool.add(first);
  await pool.add(second);
  assert.deepEqual(
    pool.select(10).map((t) => t.body.nonce),
    [1, 2],
  );
  // A second transaction with a pooled nonce replaces the first.
  const replacement = await transfer(A, 2, 6n);
  await pool.add(replacement);
  assert.isFalse(pool.has(second.id));
  assert.deepEqual(
    pool.select(10).map((t) => toHex(t.id)),
    [toHex(first.id), toHex(replacement.id)],
  );
  // The third spend exceeds what is left after the first two: refused against the sequence.
  const all = 1_000n * 10n ** 18n;
  await rejectsAsync(() => transfer(A, 3, all).then((t) => pool.add(t)), LedgerRuleError, 'insufficient-free-balance');
  assert.equal(pool.size, 2);
  assert.isTrue(pool.has(replacement.id));
});

test('mempool: is bounded in total and per sender', async () => {
  const chain = await openChain();
  await mine(chain, A, 1);
  await mine(chain, B, 1);
  const pool = new Mempool(chain, { maxSize: 3, maxPerSender: 2 });
  await pool.add(await transfer(A, 1));
  await pool.add(await transfer(A, 2));
  await rejectsAsync(() => transfer(A, 3).then((t) => pool.add(t)), MempoolError, 'sender-full');
  await pool.add(await transfer(B, 1));
  await rejectsAsync(() => transfer(B, 2).then((t) => pool.add(t)), MempoolError, 'full');
  assert.equal(pool.size, 3);
});

test('mempool: a full pool of keys with nothing free makes room for a sender with credits, never the reverse', async () => {
  const chain = await openChain();
  await mine(chain, A, 2);
  await mine(chain, B, 1);
  const pool = new Mempool(chain, { maxSize: 4, maxPerSender: 2 });
  // Fresh keys fill the pool with transactions that cost nothing.
  const spam = [key(10), key(11)];
  const revoke = (signer = spam[0]!, nonce = 1) => tx(signer, { kind: 'RevokeCapability', nonce, token_id: new Uint8Array(32).fill(nonce) });
  for (const signer of spam) for (const nonce of [1, 2]) await pool.add(await revoke(signer, nonce));
  await rejectsAsync(() => revoke(key(12), 1).then((t) => pool.add(t)), MempoolError, 'full');
  // A sender with credits takes the place of the last transaction of one of them.
  const paid = await transfer(B, 1);
  await pool.add(paid);
  assert.equal(pool.size, 4);
  assert.isTrue(pool.has(paid.id));
  assert.equal(pool.queueOf(spam[0]!.publicKey).length + pool.queueOf(spam[1]!.publicKey).length, 3, 'one spam transaction made room');
  // Blocks take the richest senders first, whatever the arrival order.
  assert.equal(toHex(pool.select(1)[0]!.id), toHex(paid.id));
  // A richer sender displaces a poorer one once only keys with credits are left.
  await pool.add(await transfer(A, 1));
  await pool.add(await transfer(A, 2));
  await pool.add(await transfer(B, 2));
  assert.deepEqual(
    pool
      .pending()
      .map((t) => toHex(t.body.sender))
      .sort(),
    [A, A, B, B].map((k) => toHex(k.publicKey)).sort(),
  );
  assert.deepEqual(
    pool.select(4).map((t) => toHex(t.body.sender)),
    [A, A, B, B].map((k) => toHex(k.publicKey)),
    'A holds more than B: its queue comes first',
  );
  await rejectsAsync(() => transfer(B, 3).then((t) => pool.add(t)), MempoolError, 'sender-full');
});

test('mempool: drops what a block included and what it made invalid', async () => {
  const chain = await openChain();
  await mine(chain, A, 1);
  const pool = new Mempool(chain);
  const mined = await transfer(A, 1, 2n);
  const rival = await transfer(A, 1, 3n); // same nonce, submitted elsewhere
  const after = await transfer(A, 2, 4n);
  await pool.add(rival);
  await pool.add(after);
  await mine(chain, B, 1, [mined]);
  // The rival's nonce is used now; the follower stays valid after the mined one.
  assert.isFalse(pool.has(rival.id));
  assert.isTrue(pool.has(after.id));
  await mine(chain, B, 1, pool);
  assert.equal(pool.size, 0);
  assert.equal(chain.state.account(C.publicKey).balance, 6n);
});

test("mempool: a transaction that another account's block made invalid leaves the pool and frees its nonce", async () => {
  const chain = await openChain();
  await mine(chain, A, 1);
  await mine(chain, B, 1);
  const pool = new Mempool(chain);
  const mine_ = await tx(A, { kind: 'NameClaim', nonce: 1, name: 'acme' });
  await pool.add(mine_);
  // B claims the name first, in a block built elsewhere.
  await mine(chain, B, 1, [await tx(B, { kind: 'NameClaim', nonce: 1, name: 'acme' })]);
  assert.isFalse(pool.has(mine_.id), 'the claim that can no longer apply is gone');
  const other = await tx(A, { kind: 'NameClaim', nonce: 1, name: 'acme-2' });
  await pool.add(other);
  assert.isTrue(pool.has(other.id));
});

test("mempool: a reorganisation returns a sender's transactions from several blocks, in nonce order", async () => {
  const local = await openChain();
  await mine(local, A, 1);
  const other = await openChain();
  await other.addBranch(await local.blocksFrom(1, 1));
  const pool = new Mempool(local);
  const first = await transfer(A, 1, 1n);
  const second = await transfer(A, 2, 2n);
  await mine(local, A, 1, [first]);
  await mine(local, A, 1, [second]);
  assert.equal(pool.size, 0);
  await local.addBranch(await mine(other, B, 3));
  assert.isTrue(pool.has(first.id));
  assert.isTrue(pool.has(second.id));
  assert.deepEqual(
    pool.select(10).map((t) => t.body.nonce),
    [1, 2],
  );
});

test('mempool: a branch of many blocks re-checks the pool once, not once per block', async () => {
  // A 500-block sync answer with a few thousand pooled transactions took seconds, with the event
  // loop blocked, when every connected block re-checked every pooled queue.
  const source = await openChain();
  await mine(source, A, 3);
  const senders = Array.from({ length: 20 }, (_, i) => key(60 + i));
  const funding = [];
  for (let i = 0; i < senders.length; i++) funding.push(await transfer(A, i + 1, 10n, senders[i]!));
  await mine(source, A, 1, funding);
  const start = source.tip.height;
  await mine(source, B, 100);

  const chain = await openChain();
  await chain.addBranch(await source.blocksFrom(1, start));
  const pool = new Mempool(chain);
  for (const s of senders) for (let n = 1; n <= 5; n++) await pool.add(await transfer(s, n, 1n));
  assert.equal(pool.size, 100);
  // Count the pool's reads of the tip state while the branch connects.
  const state = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(chain), 'state')!.get!;
  let reads = 0;
  Object.defineProperty(chain, 'state', {
    get: () => {
      reads++;
      return state.call(chain);
    },
  });
  await chain.addBranch(await source.blocksFrom(start + 1, 100));
  await Promise.resolve();
  assert.isAtMost(reads, 10 * senders.length, `${reads} reads of the state for 100 blocks and ${senders.length} senders`);
  assert.equal(pool.size, 100, 'the pooled transactions still apply');
  assert.equal(pool.select(1_000).length, 100);
});

test("mempool: while a block is being written, the pool and the state agree, and a sender's next transaction is taken", async () => {
  // The chain shows a block's state only once its batch is stored, and the pool hears of it then.
  // In between, the sender's next nonce follows its pooled transaction (POST /transfer must not
  // see nonce-gap or nonce-used while a block is written).
  const clock = testScheduler();
  const store = new SlowStore(clock);
  const chain = await openChain({ store });
  await mine(chain, A, 2);
  const pool = new Mempool(chain);
  const first = await transfer(A, 1);
  await pool.add(first);
  store.delayMs = 50;
  const writing = chain.addBlock(await nextBlock(chain, A, pool));
  await clock.advance(10);
  assert.equal(chain.tip.height, 2, 'the block is not shown before it is stored');
  assert.equal(chain.state.account(A.publicKey).nonce, 0, 'nor is its state');
  assert.deepEqual(
    pool.queueOf(A.publicKey).map((t) => toHex(t.id)),
    [toHex(first.id)],
  );
  const second = await transfer(A, 2);
  await pool.add(second);
  await clock.advance(40);
  assert.equal(await writing, 'extended');
  assert.equal(chain.state.account(A.publicKey).nonce, 1);
  assert.deepEqual(
    pool.pending().map((t) => toHex(t.id)),
    [toHex(second.id)],
  );
});
