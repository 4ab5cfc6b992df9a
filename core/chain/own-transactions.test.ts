import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { key, mine, openChain } from '../chain/testnet.test-util.ts';
import { LedgerRuleError } from '../ledger/apply.ts';
import type { Tx } from '../ledger/tx.ts';
import type { Chain } from './chain.ts';
import { Mempool } from './mempool.ts';
import { OwnTransactions } from './own-transactions.ts';

const A = key(1);
const B = key(2);
const CREDIT = 10n ** 18n;

async function setup(): Promise<{ own: OwnTransactions; pool: Mempool; streamed: [Tx, bigint][]; published: Tx[]; chain: Chain }> {
  const chain = await openChain();
  await mine(chain, A, 1);
  const pool = new Mempool(chain);
  const streamed: [Tx, bigint][] = [];
  const published: Tx[] = [];
  const own = new OwnTransactions({
    key: A,
    chain,
    mempool: pool,
    stream: (tx, amount) => streamed.push([tx, amount]),
    publish: async (tx) => {
      published.push(tx);
    },
  });
  return { own, pool, streamed, published, chain };
}

test('own transactions: any kind is signed by the node with the next nonce, pooled, streamed and gossiped', async () => {
  const { own, pool, streamed, published } = await setup();
  // Sent together: each still takes its own nonce.
  const [bond, transfer] = await Promise.all([
    own.submit({ kind: 'HostBond', amount: 10n * CREDIT }),
    own.submit({ kind: 'Transfer', to: B.publicKey, amount: 5n * CREDIT }),
  ]);
  assert.equal(bond.body.kind, 'HostBond');
  assert.deepEqual([bond.body.nonce, transfer.body.nonce], [1, 2]);
  assert.deepEqual(bond.body.sender, A.publicKey);
  assert.isTrue(pool.has(bond.id) && pool.has(transfer.id));
  assert.deepEqual(
    streamed.map(([tx, amount]) => [tx.id, amount]),
    [
      [bond.id, 10n * CREDIT],
      [transfer.id, 5n * CREDIT],
    ],
  );
  assert.deepEqual(
    published.map((tx) => tx.id),
    [bond.id, transfer.id],
  );
});

test('own transactions: one that breaks a rule is neither pooled nor sent, and takes no nonce', async () => {
  const { own, pool, streamed, published } = await setup();
  await rejectsAsync(() => own.submit({ kind: 'Transfer', to: B.publicKey, amount: 10n ** 30n }), LedgerRuleError, 'insufficient-free-balance');
  assert.equal(pool.size, 0);
  assert.deepEqual([streamed.length, published.length], [0, 0]);
  const claim = await own.submit({ kind: 'NameClaim', name: 'own-test' });
  assert.equal(claim.body.nonce, 1);
});

test('own transactions: idle waits for every submission in progress, one that fails too', async () => {
  const { own, published } = await setup();
  const outcomes: string[] = [];
  void own.submit({ kind: 'Transfer', to: B.publicKey, amount: 5n * CREDIT }).then(() => outcomes.push('sent'));
  void own.submit({ kind: 'Transfer', to: B.publicKey, amount: 10n ** 30n }).catch(() => outcomes.push('refused'));
  await own.idle();
  assert.deepEqual(outcomes, ['sent', 'refused']);
  assert.equal(published.length, 1);
});

test('own transactions: one still pooled two blocks after it was sent is gossiped again, one mined is not', async () => {
  const { own, published, chain } = await setup();
  const transfer = await own.submit({ kind: 'Transfer', to: B.publicKey, amount: 5n * CREDIT });
  own.regossip();
  assert.lengthOf(published, 1, 'not again in the same block');
  await mine(chain, B, 1);
  own.regossip();
  assert.lengthOf(published, 1, 'one block later');
  await mine(chain, B, 1);
  own.regossip();
  assert.deepEqual(
    published.map((tx) => tx.id),
    [transfer.id, transfer.id],
  );
  await mine(chain, A, 1, [transfer]);
  await mine(chain, B, 2);
  own.regossip();
  assert.lengthOf(published, 2, 'mined: never again');
});
