/**
 * Payment channels end to end: real `mesh node --devnet` processes on loopback, a payer that mines
 * and a host that follows, through the HTTP API. The cases are those of Filecoin's payment-channel
 * actor, Lotus' voucher checks and bitcoinj's channel server: the highest receipt wins, a replayed
 * lower one does not, a receipt signed by anyone but the payer or above the capacity is refused, a
 * channel closes once, only up to its expiry height, and expires back to its payer only after it;
 * a host killed with -9 between the receipts and the close still closes with its best receipt.
 *
 * One payer+host pair serves every test, in order; balances are checked exactly against every
 * close so far (the payer is the only producer and the host earns only from closes).
 */

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { fromHex, toHex } from '../core/encoding/hex.ts';
import { channelReceiptBytes } from '../core/ledger/tx.ts';
import { getJson, type MeshProcess, postJson, type StartOptions, startNode, stopAll, stopNode, tcpAddress, waitFor } from './mesh-process.ts';

const CREDIT = 10n ** 18n;
const BLOCK_MS = 250;
const NETWORK = 'mesh-devnet';
const burnOf = (amount: bigint): bigint => (amount * 100n) / 10_000n;

let payer: MeshProcess;
let host: MeshProcess;
let hostOptions: StartOptions;
/** Every close mined so far: what the host earned and what was burned. */
const closes: bigint[] = [];

interface Status {
  height: number;
  balance: string;
  free: string;
  locked_channels: string;
  locked_bids: string;
  circulating_supply: string;
  burned_total: string;
}

interface Channel {
  channel_id: string;
  payer: string;
  host: string;
  capacity: string;
  expiry_height: number;
  role: 'payer' | 'host';
  status: string;
  cumulative: string;
  payer_sig: string | null;
  delivered: string | null;
  end_tx: string | null;
  settlement: { cumulative: string; to_host: string; burned: string; returned_to_payer: string } | null;
}

before(async () => {
  payer = await startNode({ mine: true, blockIntervalMs: BLOCK_MS });
  hostOptions = { blockIntervalMs: BLOCK_MS, bootstrap: [tcpAddress(payer)] };
  host = await startNode(hostOptions);
  // Enough blocks for the payer to pay, and the host following them.
  await waitFor('the payer has 100 credits', async () => BigInt((await status(payer)).balance) >= 100n * CREDIT, 30_000);
  await caughtUp();
});

after(() => stopAll());

const status = (node: MeshProcess): Promise<Status> => getJson<Status>(node, '/status');
const channel = (node: MeshProcess, id: string): Promise<Channel> => getJson<Channel>(node, `/channels/${id}`);
const credits = (n: number): bigint => (BigInt(Math.round(n * 100)) * CREDIT) / 100n;

async function caughtUp(): Promise<void> {
  const { height } = await status(payer);
  await waitFor("the host at the payer's height", async () => (await status(host)).height >= height, 30_000);
}

/** The channel as `node` sees it once `done` holds for it. */
function channelWhen(node: MeshProcess, id: string, what: string, done: (c: Channel) => boolean, timeoutMs = 30_000): Promise<Channel> {
  return waitFor(
    `channel ${id.slice(0, 8)} ${what} on ${node === payer ? 'the payer' : 'the host'}`,
    async () => {
      const c = await channel(node, id);
      return done(c) && c;
    },
    timeoutMs,
  );
}

/** POST /channels/open on the payer; resolves once both sides see the channel open. */
async function open(capacity: bigint, expiryHeight?: number): Promise<string> {
  const answer = await postJson(payer, '/channels/open', {
    host: host.nodeId,
    capacity: capacity.toString(),
    ...(expiryHeight !== undefined && { expiry_height: expiryHeight }),
  });
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  const id = answer.body.channel_id as string;
  assert.match(id, /^[0-9a-f]{64}$/);
  await channelWhen(payer, id, 'open', (c) => c.status === 'open');
  await channelWhen(host, id, 'open', (c) => c.status === 'open');
  return id;
}

/** POST /channels/receipt on the payer; asserts the host got it, resolves to the signature. */
async function pay(id: string, cumulative: bigint): Promise<string> {
  const answer = await postJson(payer, '/channels/receipt', { channel_id: id, host: host.nodeId, cumulative: cumulative.toString() });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.deepEqual(
    { ...answer.body, payer_sig: '' },
    { channel_id: id, cumulative: cumulative.toString(), payer_sig: '', delivered: true, delivery_error: null },
  );
  return answer.body.payer_sig as string;
}

/** A node's key from its data directory: to sign receipts as someone other than the node asked. */
async function keyOf(node: MeshProcess): Promise<SigningKey> {
  const file = JSON.parse(await readFile(join(node.dataDir, 'identity.json'), 'utf8')) as { seed: string };
  return SigningKey.fromSeed(fromHex(file.seed, 32));
}

async function signAs(node: MeshProcess, id: string, cumulative: bigint): Promise<string> {
  return toHex(await (await keyOf(node)).sign(channelReceiptBytes(NETWORK, fromHex(id, 32), fromHex(host.nodeId, 32), cumulative)));
}

/**
 * Waits for the channel closed on both sides with `cumulative`, then checks every balance exactly:
 * the host has every close less its burn, the burn is destroyed, the payer has all it mined less
 * what it paid, and no capacity stays locked.
 */
async function closedWith(id: string, cumulative: bigint, txId: string): Promise<void> {
  for (const node of [payer, host]) {
    const closed = await channelWhen(node, id, 'closed', (c) => c.status === 'closed');
    assert.equal(closed.end_tx, txId);
    assert.deepEqual(closed.settlement, {
      cumulative: cumulative.toString(),
      to_host: (cumulative - burnOf(cumulative)).toString(),
      burned: burnOf(cumulative).toString(),
      returned_to_payer: (BigInt(closed.capacity) - cumulative).toString(),
    });
  }
  closes.push(cumulative);
  await balancesExact();
}

async function balancesExact(): Promise<void> {
  const paid = closes.reduce((a, c) => a + c, 0n);
  const burned = closes.reduce((a, c) => a + burnOf(c), 0n);
  await caughtUp();
  const h = await status(host);
  assert.equal(BigInt(h.balance), paid - burned, 'the host has every close less its burn');
  const p = await status(payer);
  assert.equal(BigInt(p.burned_total), burned, 'the burns are destroyed');
  // Everything emitted went to the payer (the only producer): circulating + burned.
  assert.equal(BigInt(p.balance), BigInt(p.circulating_supply) + burned - paid, 'the payer has all it mined less what it paid');
  assert.equal(p.locked_channels, '0', 'nothing stays locked');
  assert.equal(p.free, p.balance);
}

test('open, receipts 1 to 5, close: the host gets 5 less the burn, the payer the rest of the capacity back', async () => {
  const id = await open(10n * CREDIT);
  const locked = await status(payer);
  assert.equal(locked.locked_channels, (10n * CREDIT).toString());
  assert.equal(BigInt(locked.free), BigInt(locked.balance) - 10n * CREDIT);
  for (let n = 1n; n <= 5n; n++) await pay(id, n * CREDIT);
  assert.equal((await channel(host, id)).cumulative, (5n * CREDIT).toString(), 'the host holds the highest');
  assert.equal((await channel(payer, id)).delivered, (5n * CREDIT).toString());
  const close = await postJson(host, `/channels/${id}/close`, {});
  assert.equal(close.status, 202, JSON.stringify(close.body));
  assert.deepEqual(
    { ...close.body, tx_id: '' },
    {
      channel_id: id,
      tx_id: '',
      cumulative: (5n * CREDIT).toString(),
      to_host: (5n * CREDIT - burnOf(5n * CREDIT)).toString(),
      burned: burnOf(5n * CREDIT).toString(),
      returned_to_payer: (5n * CREDIT).toString(),
    },
  );
  await closedWith(id, 5n * CREDIT, close.body.tx_id);
});

test('a replayed older receipt does not win: the host closes with the higher one it holds', async () => {
  const id = await open(10n * CREDIT);
  const two = await pay(id, credits(2));
  await pay(id, credits(4.5));
  const close = await postJson(host, `/channels/${id}/close`, { cumulative: credits(2).toString(), payer_sig: two });
  assert.equal(close.status, 202, JSON.stringify(close.body));
  assert.equal(close.body.cumulative, credits(4.5).toString());
  await closedWith(id, credits(4.5), close.body.tx_id);
});

test('a receipt signed by the host, or above the capacity, is refused; a channel closes once', async () => {
  const id = await open(3n * CREDIT);
  const byHost = await postJson(host, `/channels/${id}/close`, { cumulative: (2n * CREDIT).toString(), payer_sig: await signAs(host, id, 2n * CREDIT) });
  assert.equal(byHost.status, 400);
  assert.equal(byHost.body.type, '/problems/invalid-signature');
  assert.match(byHost.body.detail, new RegExp(`not the signature of the channel's payer ${payer.nodeId}`));
  const altered = await postJson(host, `/channels/${id}/close`, { cumulative: (2n * CREDIT).toString(), payer_sig: await signAs(payer, id, 1n * CREDIT) });
  assert.equal(altered.status, 400, 'a receipt whose amount was changed');

  const above = await postJson(payer, '/channels/receipt', { channel_id: id, host: host.nodeId, cumulative: credits(4.25).toString() });
  assert.equal(above.status, 400);
  assert.equal(above.body.rule, 'exceeds-capacity');
  assert.equal(above.body.detail, 'cumulative 4.25 credits is above the capacity of 3 credits by 1.25 credits');
  // Signed by the payer's key outside its node: the host refuses it too.
  const forced = await postJson(host, `/channels/${id}/close`, { cumulative: (4n * CREDIT).toString(), payer_sig: await signAs(payer, id, 4n * CREDIT) });
  assert.equal(forced.status, 400);
  assert.match(forced.body.detail, /above the capacity of 3 credits by 1 credits/);
  assert.equal((await channel(host, id)).payer_sig, null, 'nothing was kept');

  await pay(id, 1n * CREDIT);
  const close = await postJson(host, `/channels/${id}/close`, {});
  assert.equal(close.status, 202, JSON.stringify(close.body));
  const again = await postJson(host, `/channels/${id}/close`, {});
  assert.equal(again.status, 409, 'while the close is pooled');
  assert.equal(again.body.type, '/problems/channel-conflict');
  await closedWith(id, 1n * CREDIT, close.body.tx_id);
  const mined = await postJson(host, `/channels/${id}/close`, { cumulative: (1n * CREDIT).toString(), payer_sig: (await channel(host, id)).payer_sig });
  assert.equal(mined.status, 409, 'once it is mined');
  assert.match(mined.body.detail, /is closed/);
});

test('expire before the expiry height is refused; a close after it is refused, and expire refunds the payer', async () => {
  const { height } = await status(payer);
  const expiry = height + 24;
  const id = await open(2n * CREDIT, expiry);
  const early = await postJson(payer, `/channels/${id}/expire`, {});
  assert.equal(early.status, 409);
  assert.equal(early.body.rule, 'not-expired');
  assert.match(early.body.detail, new RegExp(`may be expired from height ${expiry + 1}, \\d+ blocks from now`));
  // No receipt before the expiry, so the host has nothing to close with by itself.
  await waitFor('the host past the expiry height', async () => (await status(host)).height >= expiry, 30_000);
  const receipt = await postJson(payer, '/channels/receipt', { channel_id: id, host: host.nodeId, cumulative: CREDIT.toString() });
  assert.equal(receipt.status, 200);
  assert.equal(receipt.body.delivered, false, 'the host takes no receipt past the expiry');
  const late = await postJson(host, `/channels/${id}/close`, { cumulative: CREDIT.toString(), payer_sig: receipt.body.payer_sig });
  assert.equal(late.status, 409);
  assert.equal(late.body.rule, 'past-expiry');
  await waitFor('the payer above the expiry height', async () => (await status(payer)).height >= expiry, 30_000);
  const expired = await postJson(payer, `/channels/${id}/expire`, {});
  assert.equal(expired.status, 202, JSON.stringify(expired.body));
  assert.deepEqual({ ...expired.body, tx_id: '' }, { channel_id: id, tx_id: '', returned_to_payer: (2n * CREDIT).toString() });
  for (const node of [payer, host]) await channelWhen(node, id, 'expired', (c) => c.status === 'expired' && c.end_tx === expired.body.tx_id);
  const twice = await postJson(payer, `/channels/${id}/expire`, {});
  assert.equal(twice.status, 409);
  await balancesExact();
});

test('the host closes by itself with its best receipt before the expiry', async () => {
  const { height } = await status(payer);
  const id = await open(2n * CREDIT, height + 40);
  await pay(id, credits(0.5));
  await pay(id, credits(1.5));
  const closed = await channelWhen(host, id, 'closed by the host', (c) => c.status === 'closed', 30_000);
  await closedWith(id, credits(1.5), closed.end_tx!);
});

test('the host killed with -9 between the receipts and the close still closes with its best receipt', async () => {
  const id = await open(10n * CREDIT);
  for (const n of [1n, 2n, 3n]) await pay(id, n * CREDIT);
  assert.equal(await stopNode(host, 'SIGKILL'), null);
  host = await startNode({ ...hostOptions, dataDir: host.dataDir });
  const held = await channel(host, id);
  assert.equal(held.cumulative, (3n * CREDIT).toString(), 'the best receipt survived');
  await caughtUp();
  const close = await postJson(host, `/channels/${id}/close`, {});
  assert.equal(close.status, 202, JSON.stringify(close.body));
  assert.equal(close.body.cumulative, (3n * CREDIT).toString());
  await closedWith(id, 3n * CREDIT, close.body.tx_id);
  const list = await getJson<Channel[]>(host, '/channels');
  assert.ok(
    list.every((c) => c.role === 'host' && c.payer === payer.nodeId && c.host === host.nodeId),
    'the host lists every channel, as host',
  );
  assert.equal(list.length, 6);
});
