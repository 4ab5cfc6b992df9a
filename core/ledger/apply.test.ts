// Every rule of the ledger state machine, each with a transaction it accepts and one it refuses.
// TestLedger checks the /status invariant and supply conservation after every accepted transaction,
// and that every refused one leaves the state exactly as it was.
import { assert } from 'chai';
import { rejects, rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { type SigningKey, verifyBatch } from '../crypto/ed25519.ts';
import { sha256 } from '../crypto/sha256.ts';
import { concatBytes } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { InvalidEncodingError } from '../errors.ts';
import { applyTx, signedMessages, type TxEffect } from './apply.ts';
import { ALICE, BOB, buildBlock, CAROL, credits, DAVE, type Fields, NETWORK, PARAMS, rejectBlock, rewardTx, sign, TestLedger } from './fixtures.test-util.ts';
import { blockSigningBytes, HEADER_VERSION, type Header, type SignedHeader } from './header.ts';
import { EMPTY_ROOT } from './merkle.ts';
import {
  burnOf,
  EVIDENCE_MAX_AGE_BLOCKS,
  EXPIRY_BLOCKS,
  emissionAt,
  HALVING_BLOCKS,
  INITIAL_EMISSION,
  NAME_BLOCKS,
  NAME_COST,
  SUPPLY_CAP,
  UNACCEPTED_EXPIRY_BLOCKS,
  UNBOND_DELAY_BLOCKS,
} from './params.ts';
import { LedgerState } from './state.ts';
import { BILLING_HEARTBEAT, BILLING_SETTLE, channelReceiptBytes, decodeTx, settlementBytes, type Tx } from './tx.ts';

const NOBODY = new Uint8Array(32).fill(0xab);

/** A ledger where each key has received the reward of one block (1,000 credits). */
async function funded(...keys: SigningKey[]): Promise<TestLedger> {
  const ledger = new TestLedger();
  for (const key of keys) await ledger.fund(key);
  return ledger;
}

// A heartbeat-billed bid names its host; BOB unless the test says otherwise.
function bid(amount: bigint, more: Partial<Fields<'JobBid'>> = {}): Fields<'JobBid'> {
  return {
    kind: 'JobBid',
    spec_hash: sha256(Uint8Array.of(7)),
    bid: amount,
    duration_secs: 60,
    cpu_cores: 1,
    mem_mb: 256,
    billing: BILLING_SETTLE,
    host: more.billing === BILLING_HEARTBEAT ? BOB.publicKey : null,
    ...more,
  };
}

/** A JobSettle by `host` for `jobId`, co-signed by `payer` over (job id, signed host, signed cost). */
async function settle(
  host: SigningKey,
  payer: SigningKey,
  jobId: Uint8Array,
  cost: bigint,
  signed: { job?: Uint8Array; host?: Uint8Array; cost?: bigint; payer?: Uint8Array } = {},
): Promise<Fields<'JobSettle'>> {
  const payerSig = await payer.sign(settlementBytes(NETWORK, signed.job ?? jobId, signed.host ?? host.publicKey, signed.cost ?? cost));
  return { kind: 'JobSettle', job_id: jobId, payer: signed.payer ?? payer.publicKey, cost, payer_sig: payerSig };
}

async function close(
  host: SigningKey,
  payer: SigningKey,
  channelId: Uint8Array,
  cumulative: bigint,
  signedCumulative = cumulative,
): Promise<Fields<'ChannelClose'>> {
  const payerSig = await payer.sign(channelReceiptBytes(NETWORK, channelId, host.publicKey, signedCumulative));
  return { kind: 'ChannelClose', channel_id: channelId, payer: payer.publicKey, cumulative, payer_sig: payerSig };
}

async function verdicts(tx: Tx): Promise<boolean[]> {
  return verifyBatch(signedMessages(tx, NETWORK));
}

function supplyDelta(ledger: TestLedger, before: { emitted: bigint; burned: bigint }): { emitted: bigint; burned: bigint } {
  const now = ledger.state.supply();
  return { emitted: now.emitted - before.emitted, burned: now.burned - before.burned };
}

// ---------------------------------------------------------------------------------------------
// Nonces and duplicates

test('apply: each sender nonce is used once and in order', async () => {
  const l = await funded(ALICE);
  const first = await l.tx(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 1n });
  assert.equal(first.body.nonce, 1);
  l.apply(first);
  assert.equal(l.account(ALICE).nonce, 1);
  l.reject(first, 'nonce-used');
  l.reject(await l.tx(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 2n }, 1), 'nonce-used');
  l.reject(await l.tx(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 2n }, 0), 'nonce-used');
  l.reject(await l.tx(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 2n }, 3), 'nonce-gap');
  l.apply(await l.tx(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 2n }, 2));
  assert.equal(l.account(BOB).balance, 3n);
});

test('apply: a refused transaction does not use up its nonce', async () => {
  const l = await funded(ALICE);
  const zero = await l.tx(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 0n });
  l.reject(zero, 'transfer-zero');
  assert.equal(l.account(ALICE).nonce, 0);
  l.apply(await l.tx(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 5n }, 1));
});

test('apply: the same transaction twice in one block is refused as duplicate-tx, in a later block as nonce-used', async () => {
  const l = await funded(ALICE);
  const transfer = await l.tx(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: credits(1) });
  const twice = await buildBlock(l.state, l.parent(), ALICE, [transfer, transfer], { stateRoot: EMPTY_ROOT });
  await rejectBlock(l.state, twice, l.parent(), 'duplicate-tx');

  await l.applyBlock(await buildBlock(l.state, l.parent(), ALICE, [transfer]));
  assert.equal(l.account(BOB).balance, credits(1));
  const again = await buildBlock(l.state, l.parent(), ALICE, [transfer], { stateRoot: EMPTY_ROOT });
  const error = await rejectBlock(l.state, again, l.parent(), 'tx-rule');
  assert.match(error.message, /rule nonce-used/);
});

// ---------------------------------------------------------------------------------------------
// UptimeReward and emission

test('apply: the UptimeReward mints the emission due to the block producer, without a nonce', async () => {
  const l = new TestLedger(new LedgerState(), 1);
  l.producer = ALICE.publicKey;
  const effect = l.apply(await rewardTx(l.state, ALICE, 1));
  assert.equal(effect.amount, INITIAL_EMISSION);
  assert.equal(l.account(ALICE).balance, credits(1_000));
  assert.equal(l.account(ALICE).nonce, 0, 'the reward uses the height, not the sender nonce');
  assert.deepEqual(l.state.supply(), { emitted: credits(1_000), burned: 0n });
  assert.equal(effect.involved[0]!.direction, 'in');
});

test('apply: an UptimeReward to anyone but the producer, at another height, or of another amount is refused', async () => {
  const l = new TestLedger(new LedgerState(), 5);
  l.producer = ALICE.publicKey;
  l.reject(await rewardTx(l.state, BOB, 5), 'reward-not-producer');
  l.reject(await sign(ALICE, { kind: 'UptimeReward', amount: INITIAL_EMISSION }, 4), 'reward-height');
  l.reject(await sign(ALICE, { kind: 'UptimeReward', amount: INITIAL_EMISSION + 1n }, 5), 'reward-amount');
  l.reject(await sign(ALICE, { kind: 'UptimeReward', amount: INITIAL_EMISSION - 1n }, 5), 'reward-amount');
  l.apply(await sign(ALICE, { kind: 'UptimeReward', amount: INITIAL_EMISSION }, 5));
});

test('apply: emission is 1,000 credits halving every 210,000 blocks, never past the supply cap', async () => {
  assert.equal(emissionAt(0, 0n), 0n, 'no reward for the genesis');
  assert.equal(emissionAt(1, 0n), credits(1_000));
  assert.equal(emissionAt(HALVING_BLOCKS, 0n), credits(1_000));
  assert.equal(emissionAt(HALVING_BLOCKS + 1, 0n), credits(500));
  assert.equal(emissionAt(2 * HALVING_BLOCKS + 1, 0n), credits(250));
  assert.equal(emissionAt(128 * HALVING_BLOCKS + 1, 0n), 0n, 'shifted to nothing');
  assert.equal(emissionAt(1, SUPPLY_CAP - 1n), 1n, 'the last reward is cut to the room left');
  assert.equal(emissionAt(1, SUPPLY_CAP), 0n);
  assert.equal(emissionAt(1, SUPPLY_CAP + 1n), 0n);

  const era1 = new TestLedger(new LedgerState(), HALVING_BLOCKS + 1);
  era1.reject(await rewardTx(new LedgerState(), ALICE, HALVING_BLOCKS), 'reward-height');
  era1.reject(await sign(ALICE, { kind: 'UptimeReward', amount: credits(1_000) }, HALVING_BLOCKS + 1), 'reward-amount');
  era1.apply(await sign(ALICE, { kind: 'UptimeReward', amount: credits(500) }, HALVING_BLOCKS + 1));

  // A state five base units short of the cap (all of it burned, so balances still add up).
  const nearCap = new LedgerState();
  nearCap.setSupply({ emitted: SUPPLY_CAP - 5n, burned: SUPPLY_CAP - 5n });
  const l = new TestLedger(nearCap, 10);
  l.reject(await sign(ALICE, { kind: 'UptimeReward', amount: credits(1_000) }, 10), 'reward-amount');
  l.apply(await sign(ALICE, { kind: 'UptimeReward', amount: 5n }, 10));
  assert.equal(l.state.supply().emitted, SUPPLY_CAP);
  l.height = 11;
  l.reject(await sign(ALICE, { kind: 'UptimeReward', amount: 1n }, 11), 'reward-amount');
  l.apply(await sign(ALICE, { kind: 'UptimeReward', amount: 0n }, 11));
  assert.equal(l.state.supply().emitted, SUPPLY_CAP, 'never past the cap');
});

test('apply: one UptimeReward per block, and only as its first transaction', async () => {
  const l = await funded(BOB);
  const reward = await rewardTx(l.state, ALICE, l.height);
  const transfer = await l.tx(BOB, { kind: 'Transfer', to: CAROL.publicKey, amount: 1n });
  const second = await buildBlock(l.state, l.parent(), ALICE, [transfer, reward], { stateRoot: EMPTY_ROOT });
  await rejectBlock(l.state, second, l.parent(), 'reward-not-first');
  const otherReward = await rewardTx(l.state, BOB, l.height);
  const two = await buildBlock(l.state, l.parent(), ALICE, [reward, otherReward], { stateRoot: EMPTY_ROOT });
  await rejectBlock(l.state, two, l.parent(), 'reward-not-first');
  const applied = await l.applyBlock(await buildBlock(l.state, l.parent(), ALICE, [reward, transfer]));
  assert.deepEqual(
    applied.effects.map((e) => e.kind),
    ['UptimeReward', 'Transfer'],
  );
});

// ---------------------------------------------------------------------------------------------
// Transfer and the free balance

test('apply: a Transfer moves the amount; of 0 it is refused', async () => {
  const l = await funded(ALICE);
  await l.refuse(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 0n }, 'transfer-zero');
  const effect = await l.submit(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: credits(7) + 3n });
  assert.equal(l.account(ALICE).balance, credits(993) - 3n);
  assert.equal(l.account(BOB).balance, credits(7) + 3n);
  assert.deepEqual(
    effect.involved.map((i) => [toHex(i.node), i.direction, i.counterparty && toHex(i.counterparty)]),
    [
      [toHex(ALICE.publicKey), 'out', toHex(BOB.publicKey)],
      [toHex(BOB.publicKey), 'in', toHex(ALICE.publicKey)],
    ],
  );
  const self = await l.submit(ALICE, { kind: 'Transfer', to: ALICE.publicKey, amount: 1n });
  assert.equal(l.account(ALICE).balance, credits(993) - 3n, 'a transfer to oneself changes nothing');
  assert.deepEqual(
    self.involved.map((i) => i.direction),
    ['self'],
  );
});

test('apply: free balance = balance − bid locks − channel locks − bond, and spending stops at it', async () => {
  const l = await funded(ALICE);
  await l.submit(ALICE, bid(credits(100)));
  await l.submit(ALICE, { kind: 'ChannelOpen', host: BOB.publicKey, capacity: credits(200), expiry_height: 1_000 });
  await l.submit(ALICE, { kind: 'HostBond', amount: credits(300) });
  const a = l.account(ALICE);
  assert.equal(a.balance, credits(1_000));
  assert.equal(l.free(ALICE), credits(400));
  await l.refuse(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: credits(400) + 1n }, 'insufficient-free-balance');
  await l.submit(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: credits(400) });
  assert.equal(l.free(ALICE), 0n);
  await l.refuse(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 1n }, 'insufficient-free-balance');
});

test('apply: a bid must be covered net of transfers from the same payer earlier in the same block', async () => {
  const l = await funded(ALICE);
  const transfer = await l.tx(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: credits(600) });
  const tooBig = await l.tx(ALICE, bid(credits(401)), 2);
  const fits = await l.tx(ALICE, bid(credits(400)), 2);
  // Alone, the larger bid is covered by the balance before the transfer.
  applyTx(LedgerState.fromEntries(l.state.entries()), await l.tx(ALICE, bid(credits(401))), l.ctx);

  l.apply(transfer);
  l.reject(tooBig, 'insufficient-free-balance');
  l.apply(fits);
  assert.equal(l.free(ALICE), 0n);

  // The same through whole blocks: the bid after the transfer breaks the block.
  const b = await funded(ALICE);
  const t2 = await b.tx(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: credits(600) });
  const bid2 = await b.tx(ALICE, bid(credits(401)), 2);
  const block = await buildBlock(b.state, b.parent(), ALICE, [t2, bid2], { stateRoot: EMPTY_ROOT });
  const error = await rejectBlock(b.state, block, b.parent(), 'tx-rule');
  assert.match(error.message, /transaction 1 .*insufficient-free-balance/);
});

// ---------------------------------------------------------------------------------------------
// JobBid

test('apply: a JobBid locks the bid and opens a job named by its transaction id', async () => {
  const l = await funded(ALICE);
  const tx = await l.tx(ALICE, bid(credits(120), { duration_secs: 3_600, billing: BILLING_HEARTBEAT, host: BOB.publicKey }));
  const effect = l.apply(tx);
  assert.equal(l.account(ALICE).locked_bids, credits(120));
  assert.equal(l.account(ALICE).balance, credits(1_000), 'a lock is not a debit');
  assert.equal(l.free(ALICE), credits(880));
  const job = l.state.job(tx.id)!;
  assert.deepEqual(
    { ...job, payer: toHex(job.payer), host: job.host && toHex(job.host) },
    {
      payer: toHex(ALICE.publicKey),
      host: toHex(BOB.publicKey),
      bid: credits(120),
      locked: credits(120),
      rate: credits(1),
      billing: BILLING_HEARTBEAT,
      bid_height: l.height,
      active_height: l.height,
      accepted: false,
    },
  );
  assert.equal(effect.amount, credits(120));
});

test('apply: a JobBid of 0, of no duration, cores or memory, unknown billing, to itself or beyond the free balance is refused', async () => {
  const l = await funded(ALICE);
  await l.refuse(ALICE, bid(0n), 'bid-zero');
  await l.refuse(ALICE, bid(1n, { duration_secs: 0 }), 'duration-zero');
  await l.refuse(ALICE, bid(1n, { cpu_cores: 0 }), 'cpu-zero');
  await l.refuse(ALICE, bid(1n, { mem_mb: 0 }), 'mem-zero');
  await l.refuse(ALICE, bid(1n, { billing: 2 }), 'bad-billing');
  await l.refuse(ALICE, bid(1n, { host: ALICE.publicKey }), 'host-is-payer');
  await l.refuse(ALICE, bid(credits(1_000) + 1n), 'insufficient-free-balance');
  await l.submit(ALICE, bid(credits(1_000)));
  await l.refuse(ALICE, bid(1n), 'insufficient-free-balance');
});

// ---------------------------------------------------------------------------------------------
// JobSettle

async function openJob(l: TestLedger, amount: bigint, more: Partial<Fields<'JobBid'>> = {}): Promise<Uint8Array> {
  const tx = await l.tx(ALICE, bid(amount, more));
  l.apply(tx);
  return tx.id;
}

test('apply: a JobSettle debits the payer the cost, credits the host cost − burn and destroys the burn', async () => {
  const l = await funded(ALICE);
  const job = await openJob(l, credits(100), { host: BOB.publicKey });
  const cost = credits(40) + 12_345n;
  const burn = burnOf(cost);
  assert.equal(burn, (cost * 100n) / 10_000n);
  const supply = l.state.supply();
  const effect = await l.submit(BOB, await settle(BOB, ALICE, job, cost));
  assert.equal(l.account(ALICE).balance, credits(1_000) - cost);
  assert.equal(l.account(ALICE).locked_bids, 0n, 'the whole bid is released');
  assert.equal(l.account(BOB).balance, cost - burn);
  assert.equal(l.account(BOB).work_earned, cost - burn, 'earned work is post-burn');
  assert.deepEqual(supplyDelta(l, supply), { emitted: 0n, burned: burn });
  assert.isUndefined(l.state.job(job));
  assert.equal(effect.burned, burn);
  assert.deepEqual(
    effect.involved.map((i) => [toHex(i.node), i.direction, i.earned, i.spent, i.interaction]),
    [
      [toHex(BOB.publicKey), 'in', cost - burn, 0n, 'job-hosted'],
      [toHex(ALICE.publicKey), 'out', 0n, cost, 'job-paid'],
    ],
  );
  await l.refuse(BOB, await settle(BOB, ALICE, job, cost), 'unknown-job');
});

test('apply: a JobSettle may charge the whole bid, and any host may settle an undirected job', async () => {
  const l = await funded(ALICE);
  const job = await openJob(l, credits(10));
  await l.submit(CAROL, await settle(CAROL, ALICE, job, credits(10)));
  assert.equal(l.account(CAROL).balance, credits(10) - burnOf(credits(10)));
});

test('apply: a JobSettle above the bid, for another payer, by the payer or by another host is refused', async () => {
  const l = await funded(ALICE, CAROL);
  const job = await openJob(l, credits(100), { host: BOB.publicKey });
  await l.refuse(BOB, await settle(BOB, ALICE, NOBODY, 1n), 'unknown-job');
  await l.refuse(BOB, await settle(BOB, ALICE, job, credits(100) + 1n), 'cost-exceeds-bid');
  await l.refuse(BOB, await settle(BOB, CAROL, job, 1n), 'wrong-payer');
  await l.refuse(ALICE, await settle(ALICE, ALICE, job, 1n), 'host-is-payer');
  await l.refuse(CAROL, await settle(CAROL, ALICE, job, 1n), 'wrong-host');
  await l.submit(BOB, await settle(BOB, ALICE, job, credits(100)));
});

test('apply: the payer co-signs the settlement (v2: job id, host id, cost); a bad co-signature fails verification and its block', async () => {
  const l = await funded(ALICE);
  const job = await openJob(l, credits(100), { host: BOB.publicKey });
  const good = await l.tx(BOB, await settle(BOB, ALICE, job, credits(30)));
  assert.deepEqual(await verdicts(good), [true, true]);
  const forgeries = [
    await l.tx(BOB, await settle(BOB, ALICE, job, credits(30), { cost: credits(20) })),
    await l.tx(BOB, await settle(BOB, ALICE, job, credits(30), { host: CAROL.publicKey })),
    await l.tx(BOB, await settle(BOB, CAROL, job, credits(30), { payer: ALICE.publicKey })),
    await l.tx(BOB, await settle(BOB, ALICE, job, credits(30), { job: NOBODY })),
  ];
  for (const forged of forgeries) {
    assert.deepEqual(await verdicts(forged), [true, false]);
    const block = await buildBlock(l.state, l.parent(), BOB, [forged]);
    await rejectBlock(l.state, block, l.parent(), 'bad-tx-signature');
  }
  await l.applyBlock(await buildBlock(l.state, l.parent(), BOB, [good]));
  assert.equal(l.account(ALICE).balance, credits(970));
});

// ---------------------------------------------------------------------------------------------
// JobExpire

test('apply: only the payer expires a bid no host accepted, and only once 10 blocks passed', async () => {
  const l = await funded(ALICE);
  const bidHeight = l.height;
  const job = await openJob(l, credits(100));
  await l.refuse(ALICE, { kind: 'JobExpire', job_id: NOBODY }, 'unknown-job');
  l.height = bidHeight + UNACCEPTED_EXPIRY_BLOCKS - 1;
  await l.refuse(ALICE, { kind: 'JobExpire', job_id: job }, 'not-expired');
  l.height = bidHeight + UNACCEPTED_EXPIRY_BLOCKS;
  await l.refuse(BOB, { kind: 'JobExpire', job_id: job }, 'not-payer');
  const effect = await l.submit(ALICE, { kind: 'JobExpire', job_id: job });
  assert.equal(effect.amount, credits(100));
  assert.equal(effect.involved[0]!.interaction, 'expiry');
  assert.equal(l.account(ALICE).locked_bids, 0n);
  assert.equal(l.account(ALICE).balance, credits(1_000), 'an expiry releases, it does not charge');
  assert.isUndefined(l.state.job(job));
  await l.refuse(BOB, await settle(BOB, ALICE, job, 1n), 'unknown-job');
  await l.refuse(BOB, { kind: 'JobAccept', job_id: job }, 'unknown-job');
});

test("apply: a host's JobAccept makes the job its own and keeps the bid locked 1,440 blocks from then", async () => {
  const l = await funded(ALICE);
  const bidHeight = l.height;
  const job = await openJob(l, credits(100));
  l.height = bidHeight + 5;
  const acceptHeight = l.height;
  const effect = await l.submit(BOB, { kind: 'JobAccept', job_id: job });
  assert.equal(effect.amount, 0n);
  assert.deepEqual(
    effect.involved.map((i) => [toHex(i.node), i.direction]),
    [
      [toHex(BOB.publicKey), 'out'],
      [toHex(ALICE.publicKey), 'in'],
    ],
  );
  const accepted = l.state.job(job)!;
  assert.equal(toHex(accepted.host!), toHex(BOB.publicKey));
  assert.isTrue(accepted.accepted);
  assert.equal(accepted.active_height, acceptHeight);
  assert.equal(l.account(ALICE).locked_bids, credits(100), 'an acceptance moves no credits');
  l.height = bidHeight + UNACCEPTED_EXPIRY_BLOCKS;
  await l.refuse(ALICE, { kind: 'JobExpire', job_id: job }, 'not-expired');
  l.height = acceptHeight + EXPIRY_BLOCKS - 1;
  await l.refuse(ALICE, { kind: 'JobExpire', job_id: job }, 'not-expired');
  // Only the host that accepted it settles it.
  await l.refuse(CAROL, await settle(CAROL, ALICE, job, 1n), 'wrong-host');
  l.height = acceptHeight + EXPIRY_BLOCKS;
  await l.submit(ALICE, { kind: 'JobExpire', job_id: job });
});

test('apply: a job is accepted once, by a host that is not its payer, and a directed one only by its host', async () => {
  const l = await funded(ALICE);
  const open = await openJob(l, credits(10));
  await l.refuse(ALICE, { kind: 'JobAccept', job_id: open }, 'host-is-payer');
  await l.refuse(BOB, { kind: 'JobAccept', job_id: NOBODY }, 'unknown-job');
  await l.submit(BOB, { kind: 'JobAccept', job_id: open });
  await l.refuse(CAROL, { kind: 'JobAccept', job_id: open }, 'already-accepted');
  await l.refuse(BOB, { kind: 'JobAccept', job_id: open }, 'already-accepted');
  const directed = await openJob(l, credits(10), { host: BOB.publicKey });
  await l.refuse(CAROL, { kind: 'JobAccept', job_id: directed }, 'wrong-host');
  await l.submit(BOB, { kind: 'JobAccept', job_id: directed });
  await l.submit(BOB, await settle(BOB, ALICE, open, 0n));
  assert.equal(l.account(ALICE).locked_bids, credits(10), 'a settlement of 0 releases the bid at once');
});

test('apply: a heartbeat accepts the job for its named host and restarts the expiry clock of a bid', async () => {
  const l = await funded(ALICE);
  const job = await openJob(l, credits(100), { billing: BILLING_HEARTBEAT, duration_secs: 3_000 });
  assert.isFalse(l.state.job(job)!.accepted);
  l.height += 5;
  const beatHeight = l.height;
  await l.submit(BOB, { kind: 'Heartbeat', job_id: job, cell: ALICE.publicKey, epoch: 1 });
  assert.isTrue(l.state.job(job)!.accepted);
  await l.refuse(BOB, { kind: 'JobAccept', job_id: job }, 'already-accepted');
  l.height = beatHeight + EXPIRY_BLOCKS - 1;
  await l.refuse(ALICE, { kind: 'JobExpire', job_id: job }, 'not-expired');
  l.height++;
  await l.submit(ALICE, { kind: 'JobExpire', job_id: job });
  assert.equal(l.account(ALICE).balance, credits(999), 'the heartbeat paid stays paid');
});

// ---------------------------------------------------------------------------------------------
// Heartbeat

test('apply: a heartbeat pays bid / max(1, duration_secs / 30) from the cell to the host, less the burn', async () => {
  for (const [duration, amount, rate] of [
    [3_600, credits(120), credits(1)],
    [90, 100n, 33n],
    [45, 100n, 100n],
    [10, 100n, 100n],
  ] as const) {
    const l = await funded(ALICE);
    const job = await openJob(l, amount, { billing: BILLING_HEARTBEAT, duration_secs: duration });
    assert.equal(l.state.job(job)!.rate, rate, `rate for ${duration} s`);
    l.height++;
    const supply = l.state.supply();
    const effect = await l.submit(BOB, { kind: 'Heartbeat', job_id: job, cell: ALICE.publicKey, epoch: 1 });
    const burn = burnOf(rate);
    assert.equal(effect.amount, rate);
    assert.equal(l.account(ALICE).balance, credits(1_000) - rate);
    assert.equal(l.account(BOB).balance, rate - burn);
    assert.deepEqual(supplyDelta(l, supply), { emitted: 0n, burned: burn });
    assert.equal(l.account(ALICE).locked_bids, amount - rate);
    assert.deepEqual(
      effect.involved.map((i) => [i.interaction, i.earned, i.spent]),
      [
        ['heartbeat-hosted', rate - burn, 0n],
        ['heartbeat-paid', 0n, rate],
      ],
    );
  }
});

test('apply: heartbeats from the named host run until the bid cannot cover the next one, one per block', async () => {
  const l = await funded(ALICE);
  await l.refuse(ALICE, bid(100n, { billing: BILLING_HEARTBEAT, host: null }), 'heartbeat-needs-host');
  const job = await openJob(l, 100n, { billing: BILLING_HEARTBEAT, duration_secs: 90 });
  const beat = (epoch: number): Fields<'Heartbeat'> => ({ kind: 'Heartbeat', job_id: job, cell: ALICE.publicKey, epoch });
  await l.refuse(BOB, beat(1), 'heartbeat-too-soon');
  l.height++;
  await l.submit(BOB, beat(1));
  assert.equal(toHex(l.state.job(job)!.host!), toHex(BOB.publicKey));
  await l.refuse(CAROL, beat(1), 'wrong-host');
  await l.refuse(BOB, beat(2), 'heartbeat-too-soon');
  l.height++;
  await l.submit(BOB, beat(2));
  l.height++;
  await l.submit(BOB, beat(3));
  assert.equal(l.state.job(job)!.locked, 1n);
  l.height++;
  await l.refuse(BOB, beat(4), 'cell-cannot-cover');

  const exact = await funded(ALICE);
  const even = await openJob(exact, 99n, { billing: BILLING_HEARTBEAT, duration_secs: 90 });
  for (let epoch = 1; epoch <= 3; epoch++) {
    exact.height++;
    await exact.submit(BOB, { kind: 'Heartbeat', job_id: even, cell: ALICE.publicKey, epoch });
  }
  assert.isUndefined(exact.state.job(even), 'a job billed to its last credit closes');
  assert.equal(exact.account(ALICE).locked_bids, 0n);
});

test('apply: a heartbeat from the cell itself, for no job, a settled-billing job, another cell or host is refused', async () => {
  const l = await funded(ALICE, CAROL);
  const hb = await openJob(l, credits(10), { billing: BILLING_HEARTBEAT, host: BOB.publicKey });
  const settled = await openJob(l, credits(10));
  const beat = (job: Uint8Array, cell: Uint8Array): Fields<'Heartbeat'> => ({ kind: 'Heartbeat', job_id: job, cell, epoch: 1 });
  await l.refuse(ALICE, beat(hb, ALICE.publicKey), 'cell-is-host');
  await l.refuse(BOB, beat(NOBODY, ALICE.publicKey), 'unknown-job');
  await l.refuse(BOB, beat(settled, ALICE.publicKey), 'not-heartbeat-billed');
  await l.refuse(BOB, beat(hb, CAROL.publicKey), 'wrong-cell');
  await l.refuse(DAVE, beat(hb, ALICE.publicKey), 'wrong-host');
  await l.refuse(BOB, beat(hb, ALICE.publicKey), 'heartbeat-too-soon');
  l.height++;
  await l.submit(BOB, beat(hb, ALICE.publicKey));
});

test('apply: heartbeat epochs strictly increase per (cell, host) pair', async () => {
  const l = await funded(ALICE, BOB);
  const job = await openJob(l, credits(100), { billing: BILLING_HEARTBEAT, duration_secs: 3_000, host: CAROL.publicKey });
  const beat = (epoch: number): Fields<'Heartbeat'> => ({ kind: 'Heartbeat', job_id: job, cell: ALICE.publicKey, epoch });
  l.height++;
  await l.submit(CAROL, beat(5));
  l.height++;
  await l.refuse(CAROL, beat(5), 'epoch-not-increasing');
  await l.refuse(CAROL, beat(4), 'epoch-not-increasing');
  await l.submit(CAROL, beat(9));
  assert.equal(l.state.epoch(ALICE.publicKey, CAROL.publicKey), 9);
  // Another pair keeps its own count: Bob's job, billed to Bob, hosted by Carol.
  const bobs = await l.tx(BOB, bid(credits(10), { billing: BILLING_HEARTBEAT, duration_secs: 300, host: CAROL.publicKey }));
  l.apply(bobs);
  l.height++;
  await l.submit(CAROL, { kind: 'Heartbeat', job_id: bobs.id, cell: BOB.publicKey, epoch: 1 });
});

test('apply: a heartbeat worth 0 is refused', async () => {
  const l = await funded(ALICE);
  const job = await openJob(l, 5n, { billing: BILLING_HEARTBEAT, duration_secs: 3_000 });
  l.height++;
  await l.refuse(BOB, { kind: 'Heartbeat', job_id: job, cell: ALICE.publicKey, epoch: 1 }, 'heartbeat-zero');
});

test('apply: a heartbeat the cell balance cannot cover is refused (a state where locks exceed the balance)', async () => {
  // Valid transactions never lock more than the balance; this state is built by hand to reach the check.
  const l = await funded(ALICE);
  const job = await openJob(l, credits(100), { billing: BILLING_HEARTBEAT, duration_secs: 30 });
  l.state.setAccount(ALICE.publicKey, { ...l.account(ALICE), balance: credits(99) });
  l.height++;
  l.reject(await l.tx(BOB, { kind: 'Heartbeat', job_id: job, cell: ALICE.publicKey, epoch: 1 }), 'cell-cannot-cover');
});

// ---------------------------------------------------------------------------------------------
// Payment channels

async function openChannel(l: TestLedger, capacity: bigint, expiry: number): Promise<Uint8Array> {
  const tx = await l.tx(ALICE, { kind: 'ChannelOpen', host: BOB.publicKey, capacity, expiry_height: expiry });
  l.apply(tx);
  return tx.id;
}

test('apply: a ChannelOpen locks its capacity under the id of its transaction', async () => {
  const l = await funded(ALICE);
  const expiry = l.height + 10;
  await l.refuse(ALICE, { kind: 'ChannelOpen', host: BOB.publicKey, capacity: 0n, expiry_height: expiry }, 'capacity-zero');
  await l.refuse(ALICE, { kind: 'ChannelOpen', host: ALICE.publicKey, capacity: 1n, expiry_height: expiry }, 'host-is-payer');
  await l.refuse(ALICE, { kind: 'ChannelOpen', host: BOB.publicKey, capacity: 1n, expiry_height: l.height }, 'expiry-passed');
  await l.refuse(ALICE, { kind: 'ChannelOpen', host: BOB.publicKey, capacity: credits(1_000) + 1n, expiry_height: expiry }, 'insufficient-free-balance');
  const id = await openChannel(l, credits(300), expiry);
  assert.equal(l.account(ALICE).locked_channels, credits(300));
  assert.equal(l.free(ALICE), credits(700));
  const channel = l.state.channel(id)!;
  assert.equal(channel.capacity, credits(300));
  assert.equal(channel.expiry_height, expiry);
  assert.equal(channel.open_height, l.height);
});

test('apply: a ChannelClose pays the cumulative to the host less the burn and unlocks the rest', async () => {
  const l = await funded(ALICE);
  const id = await openChannel(l, credits(300), l.height + 10);
  const cumulative = credits(30) + 3n;
  const burn = burnOf(cumulative);
  const supply = l.state.supply();
  const effect = await l.submit(BOB, await close(BOB, ALICE, id, cumulative));
  assert.equal(l.account(ALICE).balance, credits(1_000) - cumulative);
  assert.equal(l.account(ALICE).locked_channels, 0n);
  assert.equal(l.free(ALICE), credits(1_000) - cumulative);
  assert.equal(l.account(BOB).balance, cumulative - burn);
  assert.deepEqual(supplyDelta(l, supply), { emitted: 0n, burned: burn });
  assert.equal(effect.burned, burn);
  assert.isUndefined(l.state.channel(id));
  await l.refuse(BOB, await close(BOB, ALICE, id, 1n), 'unknown-channel');
});

test('apply: a ChannelClose by another than the host, for another payer or above capacity is refused', async () => {
  const l = await funded(ALICE);
  const id = await openChannel(l, credits(300), l.height + 10);
  await l.refuse(BOB, await close(BOB, ALICE, NOBODY, 1n), 'unknown-channel');
  await l.refuse(CAROL, await close(CAROL, ALICE, id, 1n), 'not-host');
  await l.refuse(BOB, await close(BOB, CAROL, id, 1n), 'wrong-payer');
  await l.refuse(BOB, await close(BOB, ALICE, id, credits(300) + 1n), 'cumulative-exceeds-capacity');
  await l.submit(BOB, await close(BOB, ALICE, id, credits(300)));
  assert.equal(l.account(ALICE).balance, credits(700));
});

test("apply: the channel receipt is the payer's signature over (channel id, host, cumulative)", async () => {
  const l = await funded(ALICE);
  const id = await openChannel(l, credits(300), l.height + 10);
  assert.deepEqual(await verdicts(await l.tx(BOB, await close(BOB, ALICE, id, credits(5)))), [true, true]);
  const inflated = await l.tx(BOB, await close(BOB, ALICE, id, credits(50), credits(5)));
  assert.deepEqual(await verdicts(inflated), [true, false]);
  await rejectBlock(l.state, await buildBlock(l.state, l.parent(), BOB, [inflated]), l.parent(), 'bad-tx-signature');
});

test('apply: a host closes up to the expiry height and not after it', async () => {
  const l = await funded(ALICE);
  const expiry = l.height + 10;
  const id = await openChannel(l, credits(300), expiry);
  l.height = expiry + 1;
  await l.refuse(BOB, await close(BOB, ALICE, id, credits(5)), 'channel-expired');
  l.height = expiry;
  await l.submit(BOB, await close(BOB, ALICE, id, credits(5)));
  assert.isUndefined(l.state.channel(id));
});

test('apply: only the payer expires a channel, and only after its expiry height; the capacity returns', async () => {
  const l = await funded(ALICE);
  const expiry = l.height + 10;
  const id = await openChannel(l, credits(300), expiry);
  await l.refuse(ALICE, { kind: 'ChannelExpire', channel_id: NOBODY }, 'unknown-channel');
  l.height = expiry;
  await l.refuse(ALICE, { kind: 'ChannelExpire', channel_id: id }, 'not-expired');
  l.height = expiry + 1;
  await l.refuse(BOB, { kind: 'ChannelExpire', channel_id: id }, 'not-payer');
  const effect = await l.submit(ALICE, { kind: 'ChannelExpire', channel_id: id });
  assert.equal(effect.amount, credits(300));
  assert.equal(l.account(ALICE).locked_channels, 0n);
  assert.equal(l.account(ALICE).balance, credits(1_000));
  assert.isUndefined(l.state.channel(id));
  await l.refuse(BOB, await close(BOB, ALICE, id, 1n), 'unknown-channel');
});

// ---------------------------------------------------------------------------------------------
// Names

test('apply: a name is 1–32 characters of a-z, 0-9 and hyphen', async () => {
  const l = await funded(ALICE, ALICE);
  for (const name of ['', 'Upper', 'under_score', 'with space', 'dot.', 'café', 'é']) {
    await l.refuse(ALICE, { kind: 'NameClaim', name }, 'bad-name');
  }
  await l.submit(ALICE, { kind: 'NameClaim', name: 'a'.repeat(32) });
  await l.submit(ALICE, { kind: 'NameClaim', name: 'node-7' });
  // 33 characters have no encoding at all: neither signed nor decoded.
  await rejectsAsync(() => l.tx(ALICE, { kind: 'NameClaim', name: 'b'.repeat(33) }), InvalidEncodingError, 'too-long');
  const ok = await l.tx(ALICE, { kind: 'NameClaim', name: 'b'.repeat(32) });
  const body = ok.bodyBytes.slice();
  new DataView(body.buffer).setUint32(body.length - 36, 33);
  const long = concatBytes(body, Uint8Array.of(0x62), ok.signature);
  rejects(() => decodeTx(long), InvalidEncodingError, 'too-long');
});

test('apply: a name claim burns 1,000 credits from the free balance; first claim wins', async () => {
  const l = await funded(ALICE, BOB);
  const claimed = l.height;
  const supply = l.state.supply();
  const effect = await l.submit(ALICE, { kind: 'NameClaim', name: 'alice' });
  assert.equal(effect.burned, NAME_COST);
  assert.equal(l.account(ALICE).balance, credits(1_000) - NAME_COST);
  assert.deepEqual(supplyDelta(l, supply), { emitted: 0n, burned: NAME_COST });
  const entry = l.state.name('alice')!;
  assert.equal(toHex(entry.owner), toHex(ALICE.publicKey));
  assert.equal(entry.expires, claimed + NAME_BLOCKS);
  await l.refuse(BOB, { kind: 'NameClaim', name: 'alice' }, 'name-taken');
  await l.refuse(ALICE, { kind: 'NameClaim', name: 'again' }, 'insufficient-free-balance');
});

test('apply: the holder renews from the current expiry; a lapsed name goes to whoever claims it', async () => {
  const l = await funded(ALICE, ALICE, BOB);
  const claimed = l.height;
  await l.submit(ALICE, { kind: 'NameClaim', name: 'shared' });
  l.height += 10;
  await l.submit(ALICE, { kind: 'NameClaim', name: 'shared' });
  const expires = claimed + 2 * NAME_BLOCKS;
  assert.equal(l.state.name('shared')!.expires, expires, 'renewing early never shortens the claim');
  l.height = expires - 1;
  await l.refuse(BOB, { kind: 'NameClaim', name: 'shared' }, 'name-taken');
  l.height = expires;
  await l.submit(BOB, { kind: 'NameClaim', name: 'shared' });
  assert.deepEqual(l.state.name('shared'), { owner: BOB.publicKey, expires: expires + NAME_BLOCKS });
  await l.refuse(ALICE, { kind: 'NameClaim', name: 'shared' }, 'name-taken');
});

// ---------------------------------------------------------------------------------------------
// Capabilities and trust

test('apply: a capability is revoked once per issuer', async () => {
  const l = await funded(ALICE);
  const token = sha256(Uint8Array.of(9));
  const effect = await l.submit(ALICE, { kind: 'RevokeCapability', token_id: token });
  assert.equal(effect.amount, 0n);
  assert.equal(l.state.revoked(ALICE.publicKey, token), l.height);
  await l.refuse(ALICE, { kind: 'RevokeCapability', token_id: token }, 'already-revoked');
  await l.submit(BOB, { kind: 'RevokeCapability', token_id: token });
});

test('apply: trust is granted once and withdrawn once, never to oneself', async () => {
  const l = await funded(ALICE);
  const grant = (trusted: boolean): Fields<'TrustGrant'> => ({ kind: 'TrustGrant', subject: BOB.publicKey, trusted });
  await l.refuse(ALICE, { kind: 'TrustGrant', subject: ALICE.publicKey, trusted: true }, 'trust-self');
  await l.refuse(ALICE, grant(false), 'trust-unchanged');
  const effect = await l.submit(ALICE, grant(true));
  assert.equal(effect.amount, 0n);
  assert.equal(l.state.trust(ALICE.publicKey, BOB.publicKey), l.height);
  await l.refuse(ALICE, grant(true), 'trust-unchanged');
  await l.submit(ALICE, grant(false));
  assert.isUndefined(l.state.trust(ALICE.publicKey, BOB.publicKey));
});

// ---------------------------------------------------------------------------------------------
// Bond, unbond and slashing

test('apply: a bond locks free credits and, with earned work, gives weight', async () => {
  const l = await funded(ALICE, BOB);
  await l.refuse(BOB, { kind: 'HostBond', amount: 0n }, 'bond-zero');
  await l.refuse(BOB, { kind: 'HostBond', amount: credits(1_000) + 1n }, 'insufficient-free-balance');
  await l.submit(BOB, { kind: 'HostBond', amount: credits(100) });
  assert.equal(l.account(BOB).bond, credits(100));
  assert.equal(l.free(BOB), credits(900));
  assert.deepEqual(l.state.weights(), [], 'no weight without earned work');
  const job = await openJob(l, credits(500));
  await l.submit(BOB, await settle(BOB, ALICE, job, credits(50)));
  assert.deepEqual(l.state.weights(), [[toHex(BOB.publicKey), credits(50) - burnOf(credits(50))]]);
  await l.submit(BOB, await settle(BOB, ALICE, await openJob(l, credits(400)), credits(400)));
  assert.deepEqual(l.state.weights(), [[toHex(BOB.publicKey), credits(100)]], 'weight is capped by the bond');
});

test('apply: an unbonded amount stays locked for the delay, then is free', async () => {
  const l = await funded(ALICE);
  await l.submit(ALICE, { kind: 'HostBond', amount: credits(300) });
  await l.refuse(ALICE, { kind: 'HostUnbond', amount: 0n }, 'unbond-zero');
  await l.refuse(ALICE, { kind: 'HostUnbond', amount: credits(300) + 1n }, 'unbond-exceeds-bond');
  const start = l.height;
  await l.submit(ALICE, { kind: 'HostUnbond', amount: credits(100) });
  const a = l.account(ALICE);
  assert.equal(a.bond, credits(200));
  assert.equal(a.unbonding, credits(100));
  assert.equal(a.unbond_release, start + UNBOND_DELAY_BLOCKS);
  assert.equal(l.free(ALICE), credits(700), 'still locked');
  l.height = start + UNBOND_DELAY_BLOCKS - 1;
  await l.refuse(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: credits(700) + 1n }, 'insufficient-free-balance');
  l.height = start + UNBOND_DELAY_BLOCKS;
  assert.equal(l.free(ALICE), credits(800), 'released');
  await l.submit(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: credits(800) });
  // A new unbond forgets the released amount; a second one while pending adds up and restarts the delay.
  await l.submit(ALICE, { kind: 'HostUnbond', amount: credits(50) });
  assert.equal(l.account(ALICE).unbonding, credits(50));
  l.height += 10;
  await l.submit(ALICE, { kind: 'HostUnbond', amount: credits(50) });
  assert.equal(l.account(ALICE).unbonding, credits(100));
  assert.equal(l.account(ALICE).unbond_release, l.height + UNBOND_DELAY_BLOCKS);
  assert.equal(l.account(ALICE).bond, credits(100));
});

async function header(key: SigningKey, height: number, salt: number, producer = key.publicKey): Promise<SignedHeader> {
  const h: Header = {
    version: HEADER_VERSION,
    height,
    prev_hash: new Uint8Array(32),
    timestamp_ms: PARAMS.genesisTimestampMs + salt,
    producer,
    tx_count: 0,
    tx_root: EMPTY_ROOT,
    state_root: sha256(Uint8Array.of(salt)),
  };
  return { header: h, signature: await key.sign(blockSigningBytes(NETWORK, h)) };
}

const slash = (a: SignedHeader, b: SignedHeader): Fields<'SlashEquivocation'> => ({ kind: 'SlashEquivocation', a, b });

test('apply: two headers by one producer at one height slash its locked bond, once', async () => {
  const l = await funded(ALICE);
  await l.submit(ALICE, { kind: 'HostBond', amount: credits(300) });
  await l.submit(ALICE, { kind: 'HostUnbond', amount: credits(100) });
  const at = l.height;
  l.height += 5;
  const evidence = slash(await header(ALICE, at, 1), await header(ALICE, at, 2));
  const supply = l.state.supply();
  const effect = await l.submit(CAROL, evidence);
  assert.equal(effect.amount, credits(300), 'the bond and the still-locked unbonding');
  const a = l.account(ALICE);
  assert.deepEqual([a.balance, a.bond, a.unbonding], [credits(700), 0n, 0n]);
  assert.equal(l.free(ALICE), credits(700));
  assert.deepEqual(supplyDelta(l, supply), { emitted: 0n, burned: credits(300) });
  assert.equal(l.state.slashed(ALICE.publicKey, at), l.height);
  assert.deepEqual(
    effect.involved.map((i) => [toHex(i.node), i.direction]),
    [
      [toHex(ALICE.publicKey), 'out'],
      [toHex(CAROL.publicKey), 'self'],
    ],
  );
  await l.refuse(CAROL, evidence, 'already-slashed');
  await l.refuse(DAVE, slash(await header(ALICE, at, 3), await header(ALICE, at, 4)), 'already-slashed');
});

test('apply: an unbonding is slashable until its release, not after', async () => {
  const l = await funded(ALICE);
  await l.submit(ALICE, { kind: 'HostBond', amount: credits(300) });
  await l.submit(ALICE, { kind: 'HostUnbond', amount: credits(100) });
  const release = l.account(ALICE).unbond_release;
  l.height = release - 1;
  const late = new TestLedger(LedgerState.fromEntries(l.state.entries()), release);
  const atRelease = await late.submit(CAROL, slash(await header(ALICE, release - 2, 1), await header(ALICE, release - 2, 2)));
  assert.equal(atRelease.amount, credits(200), 'released unbonding is no longer at stake');
  const before = await l.submit(CAROL, slash(await header(ALICE, release - 2, 1), await header(ALICE, release - 2, 2)));
  assert.equal(before.amount, credits(300));
});

test('apply: equivocation evidence must name one producer, one height, two blocks, within the chain and its age', async () => {
  const l = await funded(ALICE);
  l.height = 3_000;
  await l.refuse(CAROL, slash(await header(ALICE, 100, 1), await header(BOB, 100, 2)), 'evidence-producers-differ');
  await l.refuse(CAROL, slash(await header(ALICE, 100, 1), await header(ALICE, 101, 2)), 'evidence-heights-differ');
  const one = await header(ALICE, 200, 1);
  await l.refuse(CAROL, slash(one, one), 'evidence-same-block');
  await l.refuse(CAROL, slash(await header(ALICE, 3_001, 1), await header(ALICE, 3_001, 2)), 'evidence-from-future');
  const old = 3_000 - EVIDENCE_MAX_AGE_BLOCKS - 1;
  await l.refuse(CAROL, slash(await header(ALICE, old, 1), await header(ALICE, old, 2)), 'evidence-too-old');
  const effect = await l.submit(CAROL, slash(await header(ALICE, old + 1, 1), await header(ALICE, old + 1, 2)));
  assert.equal(effect.amount, 0n, 'nothing bonded, nothing burned; the offence is still recorded');
  assert.isDefined(l.state.slashed(ALICE.publicKey, old + 1));
  await l.submit(ALICE, slash(await header(ALICE, 3_000, 1), await header(ALICE, 3_000, 2)));
});

test('apply: equivocation evidence carries valid producer signatures, checked with the block', async () => {
  const l = await funded(ALICE, CAROL);
  const at = l.height - 1;
  const good = await l.tx(CAROL, slash(await header(ALICE, at, 1), await header(ALICE, at, 2)));
  assert.deepEqual(await verdicts(good), [true, true, true]);
  const forged = await l.tx(CAROL, slash(await header(ALICE, at, 1), await header(BOB, at, 2, ALICE.publicKey)));
  assert.deepEqual(await verdicts(forged), [true, true, false]);
  await rejectBlock(l.state, await buildBlock(l.state, l.parent(), CAROL, [forged]), l.parent(), 'bad-tx-signature');
  await l.applyBlock(await buildBlock(l.state, l.parent(), CAROL, [good]));
  assert.isDefined(l.state.slashed(ALICE.publicKey, at));
});

// ---------------------------------------------------------------------------------------------

test('apply: the reported amount is 0 for kinds without one', async () => {
  const l = await funded(ALICE);
  const effects: TxEffect[] = [
    await l.submit(ALICE, { kind: 'TrustGrant', subject: BOB.publicKey, trusted: true }),
    await l.submit(ALICE, { kind: 'RevokeCapability', token_id: NOBODY }),
  ];
  assert.deepEqual(
    effects.map((e) => [e.kind, e.amount, e.burned]),
    [
      ['TrustGrant', 0n, 0n],
      ['RevokeCapability', 0n, 0n],
    ],
  );
});
