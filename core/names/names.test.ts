// Names on MeshNodes over the memory network, on a devnet whose claims last 20 blocks so that
// expiry is reached in a test (ChainParams.nameBlocks; the main network's claims last 210,000):
// claim, resolve on another node, refusal of a live name, renewal, lapse and a new holder, names
// as the `to` of transfers and messages. Runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { Chain } from '../chain/chain.ts';
import { key } from '../chain/testnet.test-util.ts';
import { CREDIT } from '../encoding/amount.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { LedgerRuleError } from '../ledger/apply.ts';
import { devnet, NAME_COST } from '../ledger/params.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import type { FullNode } from '../node/node.test-util.ts';
import { startNode } from '../node/node.test-util.ts';
import { MemoryStore } from '../store/kv.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import { NameError } from './errors.ts';
import { isName } from './names.ts';

const A = key(1); // mines, so it has credits
const B = key(2); // is paid by A
const C = key(3); // has nothing
const NAME_BLOCKS = 20;
const PARAMS = devnet(100, { nameBlocks: NAME_BLOCKS });

interface Mesh {
  readonly clock: Scheduler;
  readonly a: FullNode;
  readonly b: FullNode;
  readonly c: FullNode;
  readonly stop: () => Promise<void>;
}

async function mesh(): Promise<Mesh> {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const open = (): Promise<Chain> => Chain.open({ store: new MemoryStore(), params: PARAMS });
  const a = await startNode(bus, await open(), A, clock, { mine: true });
  const b = await startNode(bus, await open(), B, clock);
  const c = await startNode(bus, await open(), C, clock);
  return {
    clock,
    a,
    b,
    c,
    stop: async () => {
      for (const n of [a, b, c]) await n.stop();
    },
  };
}

/**
 * Waits until the transaction `txId` has left every pool (its submitter's holds it until a block
 * takes it) and every node is on the miner's tip.
 */
async function mined(m: Mesh, txId: string, what: string): Promise<void> {
  const id = fromHex(txId, 32);
  const nodes = [m.a, m.b, m.c];
  await m.clock.until(what, () => nodes.every((n) => !n.mempool.has(id) && toHex(n.chain.tip.hash) === toHex(m.a.chain.tip.hash)), 60_000);
}

test('names: the rule is a-z, 0-9 and hyphen, 1 to 32 characters', () => {
  for (const good of ['a', 'node-1', '0', '-', 'x'.repeat(32)]) assert.isTrue(isName(good), good);
  for (const bad of ['', 'Alice', 'x'.repeat(33), 'a_b', 'a.b', 'é', ' a']) assert.isFalse(isName(bad), bad);
});

test('names: a claim resolves on another node; a live name is refused to others; renewal extends it; once lapsed anyone claims it', async () => {
  const m = await mesh();
  try {
    const { a, b, c, clock } = m;
    await clock.until('a has mined 3,000 credits', () => a.chain.state.account(A.publicKey).balance >= 3_000n * CREDIT, 60_000);
    await mined(m, await a.services.ledger.transfer(B.publicKey, 2_000n * CREDIT), 'b is paid');

    const claim = await a.services.names.claimName('alpha');
    assert.equal(claim.name, 'alpha');
    assert.match(claim.tx_id, /^[0-9a-f]{64}$/);
    await mined(m, claim.tx_id, 'the claim is mined');
    const found = b.services.names.resolveName('alpha')!;
    assert.equal(found.node_id, toHex(A.publicKey));
    const claimedAt = (await b.chain.txHeight(fromHex(claim.tx_id, 32)))!;
    assert.equal(found.expires_at_height, claimedAt + NAME_BLOCKS);
    assert.deepEqual(c.services.names.resolveName('alpha'), found, 'any node resolves it');
    assert.deepEqual(b.services.names.listNames(A.publicKey), [found]);
    assert.deepEqual(a.services.names.listNames(null), [found], "without an owner: this node's names");

    const taken = await rejectsAsync(() => b.services.names.claimName('alpha'), NameError, 'taken');
    assert.equal((taken as NameError).status, 409);
    const poor = await rejectsAsync(() => c.services.names.claimName('gamma'), LedgerRuleError, 'insufficient-free-balance');
    assert.equal((poor as LedgerRuleError).status, 402);

    // The holder renews while it holds the name: the new term runs from the old expiry.
    const burnedBefore = a.chain.state.supply().burned;
    await mined(m, (await a.services.names.claimName('alpha')).tx_id, 'the renewal is mined');
    const renewed = b.services.names.resolveName('alpha')!;
    assert.equal(renewed.expires_at_height, found.expires_at_height + NAME_BLOCKS);
    assert.equal(a.chain.state.supply().burned - burnedBefore, NAME_COST, 'each claim burns 1,000 credits');

    // The name is live while a claim by another would fail in the next block.
    const expires = renewed.expires_at_height;
    await clock.until('two blocks before the lapse', () => b.chain.tip.height === expires - 2, 60_000);
    assert.isDefined(b.services.names.resolveName('alpha'));
    await clock.until('one block before the lapse', () => b.chain.tip.height === expires - 1, 60_000);
    assert.isUndefined(b.services.names.resolveName('alpha'));
    assert.deepEqual(b.services.names.listNames(A.publicKey), []);
    const again = await b.services.names.claimName('alpha');
    await mined(m, again.tx_id, "b's claim of the lapsed name is mined");
    assert.equal(a.services.names.resolveName('alpha')!.node_id, toHex(B.publicKey));
    assert.deepEqual(a.services.names.listNames(null), []);
    assert.deepEqual(
      a.services.names.listNames(B.publicKey).map((r) => r.name),
      ['alpha'],
    );
  } finally {
    await m.stop();
  }
});

test('names: a transfer or a message addressed to a name reaches its holder; an unknown name is a 404', async () => {
  const m = await mesh();
  try {
    const { a, b, clock } = m;
    await clock.until('a has mined 3,000 credits', () => a.chain.state.account(A.publicKey).balance >= 3_000n * CREDIT, 60_000);
    await mined(m, await a.services.ledger.transfer(B.publicKey, 1_500n * CREDIT), 'b is paid');
    await mined(m, (await b.services.names.claimName('beta')).tx_id, 'b claims beta');
    const before = b.chain.state.account(B.publicKey).balance;
    await mined(m, await a.services.ledger.transfer('beta', 7n * CREDIT), 'the transfer to beta');
    assert.equal(b.chain.state.account(B.publicKey).balance - before, 7n * CREDIT);
    const ack = await a.services.messaging.sendMessage('beta', 'chat', new TextEncoder().encode('to a name'));
    assert.equal(ack.to, toHex(B.publicKey));
    assert.equal(b.services.messaging.inboxSnapshot(0, null).messages[0]!.from, toHex(A.publicKey));
    for (const call of [() => a.services.ledger.transfer('nobody', 1n), () => a.services.messaging.sendMessage('nobody', 'chat', new Uint8Array(0))]) {
      const unknown = await rejectsAsync(call, NameError, 'unknown');
      assert.equal((unknown as NameError).status, 404);
    }
  } finally {
    await m.stop();
  }
});
