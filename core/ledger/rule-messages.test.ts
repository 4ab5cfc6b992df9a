/**
 * The ledger's refusals are read by people (the API's problem details, `mesh send`): every amount
 * in them is in credits as a decimal, never in base units.
 */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { applyTx } from './apply.ts';
import { ALICE, BOB, credits, type Fields, TestLedger } from './fixtures.test-util.ts';

/** The message of the rule `fields` from `ALICE` breaks. */
async function refusal(l: TestLedger, fields: Fields): Promise<string> {
  const tx = await l.tx(ALICE, fields);
  try {
    applyTx(l.state, tx, l.ctx);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('applied');
}

test('ledger rules: amounts in refusals are credits as decimals', async () => {
  const l = new TestLedger();
  await l.fund(ALICE);
  assert.equal(
    await refusal(l, { kind: 'Transfer', to: BOB.publicKey, amount: 99_999_999n * 10n ** 18n }),
    'transfer of 99999999 credits exceeds the free balance of 1000 credits',
  );
  assert.equal(
    await refusal(l, { kind: 'ChannelOpen', host: BOB.publicKey, capacity: credits(1_000) + 5n * 10n ** 17n, expiry_height: 1_000 }),
    'capacity of 1000.5 credits exceeds the free balance of 1000 credits',
  );
  await l.submit(ALICE, { kind: 'HostBond', amount: credits(300) });
  assert.equal(await refusal(l, { kind: 'HostUnbond', amount: credits(300) + 1n }), 'unbond of 300.000000000000000001 credits exceeds the bond of 300 credits');
});
