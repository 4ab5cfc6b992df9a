/** The invariants' record, and the ledger checks on a real chain's state. */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { key, mine, openChain } from '../chain/testnet.test-util.ts';
import { Invariants } from './invariants.ts';
import { Prng } from './prng.ts';

test('invariants: each is counted when checked, and only its first break is kept, with time and seed', () => {
  const invariants = new Invariants('seed-7');
  invariants.record('no-job-settled-twice', 1_000, true, () => 'never asked');
  invariants.record('no-job-settled-twice', 2_000, false, () => 'job a settled again');
  invariants.record('no-job-settled-twice', 3_000, false, () => 'job b settled again');
  const result = invariants.results().find((r) => r.name === 'no-job-settled-twice')!;
  assert.deepEqual(result, { name: 'no-job-settled-twice', checks: 3, held: false, broke: { atMs: 2_000, seed: 'seed-7', detail: 'job a settled again' } });
  const untouched = invariants.results().find((r) => r.name === 'supply-conservation')!;
  assert.deepEqual(untouched, { name: 'supply-conservation', checks: 0, held: true, broke: null });
});

test('invariants: a mined chain conserves supply and adds up, checked once per tip', async () => {
  const chain = await openChain();
  await mine(chain, key(1), 3);
  const invariants = new Invariants('s');
  invariants.checkState(chain, 0);
  invariants.checkState(chain, 10);
  const byName = new Map(invariants.results().map((r) => [r.name, r]));
  for (const name of ['supply-conservation', 'no-negative-free-balance', 'status-identity'] as const) {
    assert.equal(byName.get(name)!.checks, 1, `${name} once for one tip`);
    assert.isTrue(byName.get(name)!.held, name);
  }
});

test('prng: a seed and a name give the same numbers; another name, others', () => {
  const draws = (p: Prng): number[] => Array.from({ length: 5 }, () => p.next());
  assert.deepEqual(draws(new Prng('a').fork('x')), draws(new Prng('a').fork('x')));
  assert.notDeepEqual(draws(new Prng('a').fork('x')), draws(new Prng('a').fork('y')));
  const p = new Prng('range');
  for (let i = 0; i < 1_000; i++) {
    const f = p.float();
    assert.isTrue(f >= 0 && f < 1);
    assert.isTrue(p.int(7) < 7);
  }
  assert.sameMembers(new Prng('s').sample([1, 2, 3, 4], 4), [1, 2, 3, 4]);
});
