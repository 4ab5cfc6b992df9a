/**
 * `mesh bond`, `mesh unbond` and the stake lines of `mesh status`, in-process against the node's
 * real HTTP API over a fake node: what each sends, prints and exits with.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FakeNode, STATUS, TX_ID } from '../../core/api/fake-node.test-util.ts';
import { CREDIT } from '../../core/encoding/amount.ts';
import { LedgerRuleError } from '../../core/ledger/apply.ts';
import { bondCommand, unbondCommand } from './bond.ts';
import { type FakeApi, serveFakeApi } from './fake-api.test-util.ts';
import { statusCommand } from './status.ts';

let api: FakeApi;

before(async () => {
  api = await serveFakeApi();
});
after(() => api.close());

test('mesh bond and mesh unbond send base units, say credits as decimals and print the tx id', async () => {
  const node = new FakeNode();
  const bond = await api.run(bondCommand, 'mesh bond', ['2.5', ...api.common], node);
  assert.equal(bond.code, 0, bond.err);
  assert.equal(bond.out, `${TX_ID}\n`);
  assert.equal(bond.err, 'bonding 2.5 credits\n');
  const unbond = await api.run(unbondCommand, 'mesh unbond', ['0.000000000000000001', ...api.common], node);
  assert.equal(unbond.code, 0, unbond.err);
  assert.match(unbond.err, /^unbonding 0\.000000000000000001 credits: free 2,880 blocks after/);
  assert.deepEqual(node.ledger.stakes, [
    { kind: 'bond', amount: 5n * (CREDIT / 2n) },
    { kind: 'unbond', amount: 1n },
  ]);
});

test('mesh bond and mesh unbond refuse bad amounts with exit 2 before asking the node', async () => {
  const node = new FakeNode();
  for (const bad of ['0', '-1', '1e3', 'abc', '1.0000000000000000001', '']) {
    const r = await api.run(bondCommand, 'mesh bond', [bad, ...api.common], node);
    assert.equal(r.code, 2, `${bad}: ${r.err}`);
  }
  assert.equal((await api.run(unbondCommand, 'mesh unbond', [...api.common], node)).code, 2);
  assert.deepEqual(node.ledger.stakes, []);
});

test("mesh bond and mesh unbond say the node's refusal in credits: the free balance, the bond", async () => {
  const node = new FakeNode();
  node.ledger.statusAnswer = { ...STATUS, free: String(3n * CREDIT + CREDIT / 2n), bond: String(CREDIT) };
  node.ledger.stakeError = new LedgerRuleError('insufficient-free-balance', 'bond of 5000000000000000000 exceeds the free balance of 3500000000000000000');
  const bond = await api.run(bondCommand, 'mesh bond', ['5', ...api.common], node);
  assert.equal(bond.code, 1);
  assert.match(bond.err, /bond of 5 credits refused: the free balance is 3\.5 credits/);
  assert.doesNotMatch(bond.err, /5000000000000000000/);
  node.ledger.stakeError = new LedgerRuleError('unbond-exceeds-bond', 'unbond of 2000000000000000000 exceeds the bond of 1000000000000000000');
  const unbond = await api.run(unbondCommand, 'mesh unbond', ['2', ...api.common], node);
  assert.equal(unbond.code, 1);
  assert.match(unbond.err, /unbond of 2 credits refused: the bond is 1 credits/);
});

test('mesh status shows bond, weight, work earned, and what is unbonding until which height and roughly when', async () => {
  const node = new FakeNode();
  node.ledger.statusAnswer = {
    ...STATUS,
    bond: String(250n * CREDIT),
    weight: String(40n * CREDIT),
    work_earned: String(40n * CREDIT),
    unbonding: String(50n * CREDIT + CREDIT / 4n),
    unbond_release_height: 2_887,
    unbond_release_secs: Date.UTC(2026, 11, 6, 6, 0) / 1000,
  };
  const r = await api.run(statusCommand, 'mesh status', [...api.common], node);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^bond {10}250 credits$/m);
  assert.match(r.out, /^weight {8}40 credits$/m);
  assert.match(r.out, /^work earned {3}40 credits$/m);
  assert.match(r.out, /^unbonding {5}50\.25 credits, free at height 2887 \(about 2026-12-06 06:00 UTC\)$/m);
  const idle = await api.run(statusCommand, 'mesh status', [...api.common], new FakeNode());
  assert.match(idle.out, /^unbonding {5}0 credits$/m);
});
