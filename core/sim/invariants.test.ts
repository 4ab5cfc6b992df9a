/** The invariants' record, and the ledger checks on a real chain's state. */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import type { Chain } from '../chain/chain.ts';
import { evidenceOf } from '../chain/evidence.ts';
import { key, mine, nextBlock, openChain, tx } from '../chain/testnet.test-util.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { equivocationPunished, Invariants } from './invariants.ts';
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

/** Two blocks `producer` signs at the chain's next height, as evidence. */
async function equivocate(chain: Chain, producer: SigningKey) {
  const [x, y] = [await nextBlock(chain, producer, null, 0), await nextBlock(chain, producer, null, 1)];
  return evidenceOf({ header: x.header, signature: x.signature }, { header: y.header, signature: y.signature });
}

test('invariants: an equivocation is punished by its own slash, or by another that left no bond to take', async () => {
  const [A, B] = [key(1), key(2)];
  const chain = await openChain();
  await mine(chain, B, 1);
  await mine(chain, B, 1, [await tx(B, { kind: 'Transfer', nonce: 1, to: A.publicKey, amount: 30n })]);
  await mine(chain, B, 1, [await tx(A, { kind: 'HostBond', nonce: 1, amount: 10n })]);
  const first = await equivocate(chain, A);
  await mine(chain, B, 1);
  const second = await equivocate(chain, A);
  const [h1, h2] = [first.a.header.height, second.a.header.height];
  const punished = (height: number, others: number[]): boolean => equivocationPunished(chain.state, chain.tip.height, A.publicKey, height, others);
  assert.isFalse(punished(h1, [h2]), 'neither slashed: the bond is still there');

  await mine(chain, B, 1, [await tx(B, { kind: 'SlashEquivocation', nonce: 2, a: first.a, b: first.b })]);
  assert.isTrue(punished(h1, [h2]));
  // The second offence has nothing left to take: nodes neither relay nor report it.
  assert.isTrue(punished(h2, [h1]), 'covered by the slash that took the bond');
  assert.isFalse(punished(h2, []), 'no other slash of it: unpunished');

  // Bonded anew, the producer has something to take again for the offence not yet slashed.
  await mine(chain, B, 1, [await tx(A, { kind: 'HostBond', nonce: 2, amount: 10n })]);
  assert.isFalse(punished(h2, [h1]), 'a new bond is in reach');
  await mine(chain, B, 1, [await tx(B, { kind: 'SlashEquivocation', nonce: 3, a: second.a, b: second.b })]);
  assert.isTrue(punished(h2, [h1]));
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
