import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { sha256 } from '../crypto/sha256.ts';
import { toHex } from '../encoding/hex.ts';
import type { TxEffect } from '../ledger/apply.ts';
import { ALICE, BOB, credits, type Fields, NETWORK, TestLedger } from '../ledger/fixtures.test-util.ts';
import { NAME_COST } from '../ledger/params.ts';
import { BILLING_HEARTBEAT, BILLING_SETTLE, channelReceiptBytes, settlementBytes, type Tx } from '../ledger/tx.ts';
import { type Burn, burnOfTx, heartbeatRate } from './burn.ts';

const SPEC = sha256(Uint8Array.of(9));

function bid(billing: number, amount: bigint, durationSecs: number): Fields<'JobBid'> {
  return {
    kind: 'JobBid',
    spec_hash: SPEC,
    bid: amount,
    duration_secs: durationSecs,
    cpu_cores: 1,
    mem_mb: 64,
    billing,
    host: billing === BILLING_HEARTBEAT ? BOB.publicKey : null,
  };
}

function hexBurn(burn: Burn | null): { burner: string; burned: bigint } | null {
  return burn === null ? null : { burner: toHex(burn.burner), burned: burn.burned };
}

// The burn the ledger applied, as burnOfTx should name it: paid by the one account that lost it.
function appliedBurn(effect: TxEffect): { burner: string; burned: bigint } | null {
  if (effect.burned === 0n) return null;
  const payer = effect.involved.find((i) => i.direction === 'out' || i.direction === 'self');
  return { burner: toHex(payer!.node), burned: effect.burned };
}

/** A ledger where ALICE pays for every burning kind once; the applied transactions and effects. */
async function scenario(): Promise<{ l: TestLedger; applied: { tx: Tx; effect: TxEffect; rate?: bigint }[] }> {
  const l = new TestLedger();
  await l.fund(ALICE, 5);
  const applied: { tx: Tx; effect: TxEffect; rate?: bigint }[] = [];
  const run = async (key: typeof ALICE, fields: Fields, rate?: bigint): Promise<Tx> => {
    const tx = await l.tx(key, fields);
    applied.push({ tx, effect: l.apply(tx), ...(rate === undefined ? {} : { rate }) });
    return tx;
  };

  await run(ALICE, { kind: 'NameClaim', name: 'alice' });

  const settleBid = await run(ALICE, bid(BILLING_SETTLE, credits(10), 60));
  const cost = credits(7);
  const payerSig = await ALICE.sign(settlementBytes(NETWORK, settleBid.id, BOB.publicKey, cost));
  await run(BOB, { kind: 'JobSettle', job_id: settleBid.id, payer: ALICE.publicKey, cost, payer_sig: payerSig });

  const beatBid = await run(ALICE, bid(BILLING_HEARTBEAT, credits(90) + 2n, 95));
  l.height++;
  if (beatBid.body.kind !== 'JobBid') throw new Error('not a bid');
  const rate = heartbeatRate(beatBid.body);
  await run(BOB, { kind: 'Heartbeat', job_id: beatBid.id, cell: ALICE.publicKey, epoch: 1 }, rate);

  const open = await run(ALICE, { kind: 'ChannelOpen', host: BOB.publicKey, capacity: credits(50), expiry_height: l.height + 10 });
  const cumulative = credits(20) + 99n;
  const receipt = await ALICE.sign(channelReceiptBytes(NETWORK, open.id, BOB.publicKey, cumulative));
  await run(BOB, { kind: 'ChannelClose', channel_id: open.id, payer: ALICE.publicKey, cumulative, payer_sig: receipt });

  await run(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: credits(1) });
  await run(ALICE, { kind: 'HostBond', amount: credits(5) });
  return { l, applied };
}

test('burns: burnOfTx names exactly the burns the ledger applies, and who paid them', async () => {
  const { applied } = await scenario();
  const kinds: string[] = [];
  for (const { tx, effect, rate } of applied) {
    assert.deepEqual(hexBurn(burnOfTx(tx, rate)), appliedBurn(effect), tx.body.kind);
    if (effect.burned > 0n) kinds.push(tx.body.kind);
  }
  assert.deepEqual(kinds, ['NameClaim', 'JobSettle', 'Heartbeat', 'ChannelClose']);
  const [claim] = applied;
  assert.deepEqual(hexBurn(burnOfTx(claim!.tx)), { burner: toHex(ALICE.publicKey), burned: NAME_COST });
});

test("burns: a heartbeat pays its bid's rate, and names no burn without it", async () => {
  const { applied } = await scenario();
  const beat = applied.find((a) => a.tx.body.kind === 'Heartbeat')!;
  assert.equal(beat.effect.amount, beat.rate, 'heartbeatRate is the amount the ledger charged');
  assert.equal(beat.rate, (credits(90) + 2n) / 3n, 'bid / ⌊95 / 30⌋');
  assert.isNull(burnOfTx(beat.tx));
  const settle = applied.find((a) => a.tx.body.kind === 'JobSettle')!;
  assert.equal(burnOfTx(settle.tx)!.burned, credits(7) / 100n);
});

test('burns: a burn that rounds down to nothing backs nothing', async () => {
  const l = new TestLedger();
  await l.fund(ALICE, 1);
  const job = await l.tx(ALICE, bid(BILLING_SETTLE, 500n, 60));
  l.apply(job);
  const payerSig = await ALICE.sign(settlementBytes(NETWORK, job.id, BOB.publicKey, 99n));
  const settle = await l.tx(BOB, { kind: 'JobSettle', job_id: job.id, payer: ALICE.publicKey, cost: 99n, payer_sig: payerSig });
  assert.equal(l.apply(settle).burned, 0n);
  assert.isNull(burnOfTx(settle));
});
