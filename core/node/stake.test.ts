/**
 * Stake end to end on full nodes over the in-memory network and the manual clock: a node bonds and
 * unbonds through its ledger service (what POST /bond and /unbond call), and a bonded producer
 * holds the chain against 20 mining identities without weight (docs/ledger.md "Block production").
 */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { key, mineWork, openChain } from '../chain/testnet.test-util.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { CREDIT } from '../encoding/amount.ts';
import { toHex } from '../encoding/hex.ts';
import { LedgerRuleError } from '../ledger/apply.ts';
import { UNBOND_DELAY_BLOCKS } from '../ledger/params.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { type FullNode, startNode } from './node.test-util.ts';

const PAYER = key(1);
const BONDED = key(2);
const SYBILS: SigningKey[] = Array.from({ length: 20 }, (_, i) => key(100 + i));

/** What the node's status says of its stake, in whole credits where it is an amount. */
function stakeOf(node: FullNode): { bond: bigint; weight: bigint; work: bigint; unbonding: bigint; release: number | null } {
  const s = node.services.ledger.status();
  return {
    bond: BigInt(s.bond) / CREDIT,
    weight: BigInt(s.weight) / CREDIT,
    work: BigInt(s.work_earned) / CREDIT,
    unbonding: BigInt(s.unbonding) / CREDIT,
    release: s.unbond_release_height,
  };
}

test('stake: a node bonds and unbonds through its service; status shows bond, weight, work and the unbonding until its height', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chain = await openChain();
  // BONDED earns 99 credits of work (100 paid, 1 % burned); it holds those 99 credits, nothing more.
  await mineWork(chain, PAYER, [[BONDED, 100n * CREDIT]]);
  const node = await startNode(bus, chain, BONDED, clock, { mine: true });
  try {
    assert.deepInclude(stakeOf(node), { bond: 0n, weight: 0n, work: 99n, unbonding: 0n, release: null });
    const refused = await node.services.ledger.bond(100n * CREDIT).catch((error: unknown) => error);
    assert.instanceOf(refused, LedgerRuleError);
    assert.equal((refused as LedgerRuleError).code, 'insufficient-free-balance');
    await node.services.ledger.bond(60n * CREDIT);
    await clock.until('the bond is in a block', () => stakeOf(node).bond === 60n, 10_000);
    assert.deepInclude(stakeOf(node), { weight: 60n, work: 99n });
    const over = await node.services.ledger.unbond(61n * CREDIT).catch((error: unknown) => error);
    assert.equal((over as LedgerRuleError).code, 'unbond-exceeds-bond');
    assert.equal((over as LedgerRuleError).status, 409);
    await node.services.ledger.unbond(20n * CREDIT);
    await clock.until('the unbond is in a block', () => stakeOf(node).bond === 40n, 10_000);
    const status = node.services.ledger.status();
    const height = chain.tip.height;
    assert.deepInclude(stakeOf(node), { weight: 40n, unbonding: 20n });
    assert.isAtMost(status.unbond_release_height!, height + UNBOND_DELAY_BLOCKS);
    assert.isAbove(status.unbond_release_height!, height + UNBOND_DELAY_BLOCKS - 5);
    const blocksLeft = status.unbond_release_height! - status.height;
    const expected = (chain.tip.timestampMs + blocksLeft * chain.params.blockIntervalMs) / 1000;
    assert.equal(status.unbond_release_secs, Math.floor(expected));
  } finally {
    await node.stop();
  }
});

test('stake: one bonded producer makes at least 95 % of blocks against 20 identities without weight, and the chain grows on without it', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const prefix = await openChain();
  await mineWork(prefix, PAYER, [[BONDED, 100n * CREDIT]]);
  const blocks = await prefix.blocksFrom(1, prefix.tip.height);
  const nodes: FullNode[] = [];
  for (const k of [BONDED, ...SYBILS]) {
    const chain = await openChain();
    await chain.addBranch(blocks);
    nodes.push(await startNode(bus, chain, k, clock, { mine: true }));
  }
  const bonded = nodes[0]!;
  const sybil = nodes[1]!;
  const interval = bonded.chain.params.blockIntervalMs;
  try {
    // Everyone mines on equal terms until the bond is in a block; from then on it carries weight.
    await bonded.services.ledger.bond(50n * CREDIT);
    await clock.until('the bond gives weight', () => stakeOf(bonded).weight === 50n, 20 * interval);
    const weighted = bonded.chain.tip.height;
    await clock.until('100 blocks more', () => bonded.chain.tip.height >= weighted + 100, 400 * interval);
    const made = await bonded.chain.blocksFrom(weighted + 1, weighted + 100);
    const byBonded = made.filter((b) => toHex(b.header.producer) === toHex(BONDED.publicKey)).length;
    assert.isAtLeast(byBonded, 95, `the bonded producer made ${byBonded} of 100 blocks`);
    await clock.until('every node on one tip', () => nodes.every((n) => n.chain.tip.height >= weighted + 100), 20 * interval);
    assert.equal(toHex(sybil.chain.tip.hash), toHex((await bonded.chain.blocksFrom(sybil.chain.tip.height, sybil.chain.tip.height))[0]!.hash));

    // The bonded node goes away: the identities without weight carry the chain on.
    await bonded.stop();
    bus.leave(bus.members.get(toHex(BONDED.publicKey))!);
    const stopped = sybil.chain.tip.height;
    await clock.until('the chain grows without it', () => sybil.chain.tip.height >= stopped + 20, 200 * interval);
    const after = await sybil.chain.blocksFrom(stopped + 1, stopped + 20);
    assert.isTrue(after.every((b) => toHex(b.header.producer) !== toHex(BONDED.publicKey)));
  } finally {
    for (const node of nodes.slice(1)) await node.stop();
    if (bus.members.has(toHex(BONDED.publicKey))) await bonded.stop();
  }
});
