import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { ALICE, BOB, credits, TestLedger } from './fixtures.test-util.ts';
import { UNBOND_DELAY_BLOCKS } from './params.ts';
import { ledgerStatus } from './status.ts';

test('status: every /status figure comes from the state, and the locks add up to the balance', async () => {
  const l = new TestLedger();
  await l.fund(ALICE);
  await l.fund(ALICE);
  await l.submit(ALICE, {
    kind: 'JobBid',
    spec_hash: new Uint8Array(32),
    bid: credits(100),
    duration_secs: 60,
    cpu_cores: 1,
    mem_mb: 64,
    billing: 0,
    host: null,
  });
  await l.submit(ALICE, { kind: 'ChannelOpen', host: BOB.publicKey, capacity: credits(200), expiry_height: l.height + 50 });
  await l.submit(ALICE, { kind: 'HostBond', amount: credits(300) });
  await l.submit(ALICE, { kind: 'HostUnbond', amount: credits(50) });
  await l.submit(ALICE, { kind: 'NameClaim', name: 'alice' });
  const s = ledgerStatus(l.state, ALICE.publicKey, l.height);
  assert.deepEqual(s, {
    balance: String(credits(1_000)),
    free: String(credits(1_000 - 100 - 200 - 300)),
    locked_bids: String(credits(100)),
    locked_channels: String(credits(200)),
    locked_bond: String(credits(300)),
    bond: String(credits(250)),
    weight: '0',
    work_earned: '0',
    unbonding: String(credits(50)),
    unbond_release_height: l.height + UNBOND_DELAY_BLOCKS,
    circulating_supply: String(credits(1_000)),
    burned_total: String(credits(1_000)),
  });
  const sum = BigInt(s.free) + BigInt(s.locked_bids) + BigInt(s.locked_channels) + BigInt(s.locked_bond);
  assert.equal(sum, BigInt(s.balance));
  // Once the unbonding delay has passed, locked_bond is the bond again and the rest is free.
  const later = ledgerStatus(l.state, ALICE.publicKey, l.height + UNBOND_DELAY_BLOCKS);
  assert.equal(later.locked_bond, later.bond);
  assert.equal(later.unbonding, '0');
  assert.isNull(later.unbond_release_height);
  assert.equal(later.free, String(credits(1_000 - 100 - 200 - 250)));
  assert.deepEqual(ledgerStatus(l.state, BOB.publicKey, l.height).balance, '0');
});
