// Payment channels between two MeshNodes on the memory network and a manual clock: a payer that
// produces the blocks and a host that follows them. Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import type { Chain } from '../chain/chain.ts';
import { copyChain, key, mine, openChain } from '../chain/testnet.test-util.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { CREDIT } from '../encoding/amount.ts';
import { decode, encode } from '../encoding/codec.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { LedgerRuleError } from '../ledger/apply.ts';
import { burnOf } from '../ledger/params.ts';
import { channelReceiptBytes } from '../ledger/tx.ts';
import { RemoteError } from '../net/errors.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import type { FullNode } from '../node/node.test-util.ts';
import { startNode } from '../node/node.test-util.ts';
import { MemoryStore } from '../store/kv.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import type { ChannelsConfig } from './channels.ts';
import { ChannelError } from './errors.ts';
import { CLOSE_MARGIN_BLOCKS } from './host.ts';
import { DEFAULT_EXPIRY_BLOCKS } from './payer.ts';
import type { ChannelStatus } from './types.ts';
import { CHANNEL_RPC, receiptAnswerCodec, receiptCodec } from './wire.ts';

const P = key(1); // the payer, which also produces the blocks
const H = key(2); // the host
const G = key(3); // a third node

interface Pair {
  readonly clock: Scheduler;
  readonly bus: MemoryBus;
  payer: FullNode;
  host: FullNode;
  readonly hostChain: Chain;
  readonly stop: () => Promise<void>;
}

/** A payer with 3,000 credits that produces blocks, and a host following its chain. */
async function pair(hostChannels: ChannelsConfig = {}): Promise<Pair> {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chain = await openChain();
  await mine(chain, P, 3);
  const hostChain = await copyChain(chain);
  const host = await startNode(bus, hostChain, H, clock, { channels: hostChannels });
  const payer = await startNode(bus, chain, P, clock, { mine: true });
  const p: Pair = {
    clock,
    bus,
    payer,
    host,
    hostChain,
    stop: async () => {
      for (const n of [p.payer, p.host]) await n.stop();
    },
  };
  return p;
}

const credits = (n: number): bigint => BigInt(Math.round(n * 1000)) * (CREDIT / 1000n);

function statusOf(node: FullNode, id: string): ChannelStatus | undefined {
  return node.services.channels.getChannel(fromHex(id, 32))?.status;
}

/** Opens a channel of `capacity` to H and waits until both sides see it open. */
async function openChannel(p: Pair, capacity: bigint, expiryHeight: number | null = null): Promise<string> {
  const { channel_id: id } = await p.payer.services.channels.openChannel({ host: H.publicKey, capacity, expiryHeight });
  assert.equal(statusOf(p.payer, id), 'opening');
  await p.clock.until('the channel is open on both sides', () => statusOf(p.payer, id) === 'open' && statusOf(p.host, id) === 'open', 10_000);
  return id;
}

test('channels: receipts 1 to 5, then the host closes with the highest: it gets 5 less the burn, the payer the rest of the capacity back', async () => {
  const p = await pair();
  try {
    const { payer, host } = p;
    const burnedBefore = payer.chain.state.supply().burned;
    const id = await openChannel(p, credits(10));
    const channelId = fromHex(id, 32);
    assert.equal(payer.chain.state.account(P.publicKey).locked_channels, credits(10));
    const view = host.services.channels.getChannel(channelId)!;
    assert.deepInclude(view, {
      role: 'host',
      payer: toHex(P.publicKey),
      host: toHex(H.publicKey),
      capacity: String(credits(10)),
      cumulative: '0',
      payer_sig: null,
    });
    assert.equal(view.expiry_height, payer.services.channels.getChannel(channelId)!.expiry_height);
    for (let n = 1; n <= 5; n++) {
      const answer = await payer.services.channels.signReceipt(channelId, H.publicKey, credits(n));
      assert.deepEqual(
        { delivered: answer.delivered, error: answer.delivery_error, cumulative: answer.cumulative },
        { delivered: true, error: null, cumulative: String(credits(n)) },
      );
      assert.equal(host.services.channels.getChannel(channelId)!.cumulative, String(credits(n)), 'the host keeps each receipt');
    }
    assert.deepInclude(payer.services.channels.getChannel(channelId)!, { cumulative: String(credits(5)), delivered: String(credits(5)) });
    const close = await host.services.channels.closeChannel(channelId, null);
    const burn = burnOf(credits(5));
    assert.deepEqual(
      { ...close, tx_id: '' },
      {
        channel_id: id,
        tx_id: '',
        cumulative: String(credits(5)),
        to_host: String(credits(5) - burn),
        burned: String(burn),
        returned_to_payer: String(credits(5)),
      },
    );
    assert.equal(statusOf(host, id), 'closing');
    await p.clock.until('closed on both sides', () => statusOf(payer, id) === 'closed' && statusOf(host, id) === 'closed', 10_000);
    const state = payer.chain.state;
    assert.equal(state.account(H.publicKey).balance, credits(5) - burn);
    assert.equal(state.account(P.publicKey).locked_channels, 0n);
    assert.equal(state.account(P.publicKey).balance, state.supply().emitted - credits(5));
    assert.equal(state.supply().burned - burnedBefore, burn);
    for (const node of [payer, host]) {
      const closed = node.services.channels.getChannel(channelId)!;
      assert.equal(closed.end_tx, close.tx_id);
      assert.deepEqual(closed.settlement, {
        cumulative: close.cumulative,
        to_host: close.to_host,
        burned: close.burned,
        returned_to_payer: close.returned_to_payer,
      });
    }
    await rejectsAsync(() => host.services.channels.closeChannel(channelId, null), ChannelError, 'ended', /is closed/);
    await rejectsAsync(() => payer.services.channels.signReceipt(channelId, H.publicKey, credits(6)), ChannelError, 'ended');
  } finally {
    await p.stop();
  }
});

test('channels: an older receipt replayed does not win, a receipt signed by anyone but the payer or above the capacity is refused', async () => {
  const p = await pair();
  try {
    const { payer, host } = p;
    const id = await openChannel(p, credits(10));
    const channelId = fromHex(id, 32);
    const two = await payer.services.channels.signReceipt(channelId, H.publicKey, credits(2));
    await payer.services.channels.signReceipt(channelId, H.publicKey, credits(4));
    // Over the network port, as a payer would send it: the host answers with the best it holds.
    const replay = encode(receiptCodec, { channel_id: channelId, cumulative: credits(2), payer_sig: fromHex(two.payer_sig, 64) });
    const answer = decode(receiptAnswerCodec, await p.bus.join(G.publicKey).request(H.publicKey, CHANNEL_RPC.receipt, replay));
    assert.deepEqual(answer, { answer: 'Kept', best: credits(4) });
    const network = payer.chain.params.network;
    const sign = (signer: SigningKey, cumulative: bigint): Promise<Uint8Array> => signer.sign(channelReceiptBytes(network, channelId, H.publicKey, cumulative));
    await rejectsAsync(
      async () => host.services.channels.closeChannel(channelId, { cumulative: credits(9), payerSig: await sign(H, credits(9)) }),
      ChannelError,
      'bad-signature',
      /channel's payer/,
    );
    await rejectsAsync(
      async () => host.services.channels.closeChannel(channelId, { cumulative: credits(9), payerSig: await sign(G, credits(9)) }),
      ChannelError,
      'bad-signature',
    );
    await rejectsAsync(
      async () => host.services.channels.closeChannel(channelId, { cumulative: credits(9), payerSig: await sign(P, credits(8)) }),
      ChannelError,
      'bad-signature',
    );
    await rejectsAsync(
      async () => host.services.channels.closeChannel(channelId, { cumulative: credits(12.5), payerSig: await sign(P, credits(12.5)) }),
      ChannelError,
      'exceeds-capacity',
      /above the capacity of 10 credits by 2\.5 credits/,
    );
    await rejectsAsync(
      () => payer.services.channels.signReceipt(channelId, H.publicKey, credits(11)),
      ChannelError,
      'exceeds-capacity',
      /^cumulative 11 credits is above the capacity of 10 credits by 1 credits$/,
    );
    assert.equal(host.services.channels.getChannel(channelId)!.cumulative, String(credits(4)), 'none of them was kept');
    // The older receipt handed to the close route: the host closes with the better one it holds.
    const close = await host.services.channels.closeChannel(channelId, { cumulative: credits(2), payerSig: fromHex(two.payer_sig, 64) });
    assert.equal(close.cumulative, String(credits(4)));
    await rejectsAsync(() => host.services.channels.closeChannel(channelId, null), ChannelError, 'ended', /is closing/);
    await p.clock.until('closed', () => statusOf(host, id) === 'closed', 10_000);
    assert.equal(host.chain.state.account(H.publicKey).balance, credits(4) - burnOf(credits(4)));
    await rejectsAsync(() => host.services.channels.closeChannel(channelId, null), ChannelError, 'ended', /is closed/);
  } finally {
    await p.stop();
  }
});

test('channels: what each side refuses: wrong role, unknown channel, another host, a lower receipt, a bad host or expiry, more than the free balance', async () => {
  const p = await pair();
  try {
    const { payer, host } = p;
    const id = await openChannel(p, credits(10));
    const channelId = fromHex(id, 32);
    const unknown = fromHex('ab'.repeat(32), 32);
    await rejectsAsync(() => payer.services.channels.signReceipt(unknown, H.publicKey, 1n), ChannelError, 'unknown-channel');
    await rejectsAsync(() => host.services.channels.signReceipt(channelId, H.publicKey, 1n), ChannelError, 'unknown-channel', /hosts channel/);
    await rejectsAsync(() => payer.services.channels.signReceipt(channelId, G.publicKey, 1n), ChannelError, 'wrong-host');
    await rejectsAsync(() => payer.services.channels.closeChannel(channelId, null), ChannelError, 'wrong-role');
    await rejectsAsync(() => host.services.channels.closeChannel(unknown, null), ChannelError, 'unknown-channel');
    await rejectsAsync(() => host.services.channels.closeChannel(channelId, null), ChannelError, 'no-receipt');
    await rejectsAsync(() => host.services.channels.expireChannel(channelId), ChannelError, 'wrong-role');
    await rejectsAsync(() => payer.services.channels.expireChannel(unknown), ChannelError, 'unknown-channel');
    await payer.services.channels.signReceipt(channelId, H.publicKey, credits(3));
    const again = await payer.services.channels.signReceipt(channelId, H.publicKey, credits(3));
    assert.isTrue(again.delivered, 'the same receipt may be asked for again');
    await rejectsAsync(() => payer.services.channels.signReceipt(channelId, H.publicKey, credits(2)), ChannelError, 'below-signed', /cumulative total/);
    await rejectsAsync(
      () => payer.services.channels.openChannel({ host: P.publicKey, capacity: 1n, expiryHeight: null }),
      ChannelError,
      'bad-host',
      /this node/,
    );
    await rejectsAsync(
      () => payer.services.channels.openChannel({ host: new Uint8Array(32).fill(0xff), capacity: 1n, expiryHeight: null }),
      ChannelError,
      'bad-host',
      /not a node id/,
    );
    const tip = payer.chain.tip.height;
    await rejectsAsync(
      () => payer.services.channels.openChannel({ host: H.publicKey, capacity: 1n, expiryHeight: tip + 1 }),
      ChannelError,
      'bad-expiry',
      new RegExp(`not above the next block's height ${tip + 1}`),
    );
    await rejectsAsync(
      () => payer.services.channels.openChannel({ host: H.publicKey, capacity: 10n ** 30n, expiryHeight: null }),
      LedgerRuleError,
      'insufficient-free-balance',
      /^the capacity of 1000000000000 credits is above the free balance of [0-9]+(\.[0-9]+)? credits$/,
    );
    const { expiry_height } = await payer.services.channels.openChannel({ host: G.publicKey, capacity: 1n, expiryHeight: null });
    assert.closeTo(expiry_height, payer.chain.tip.height + DEFAULT_EXPIRY_BLOCKS, 1, 'the default expiry');
  } finally {
    await p.stop();
  }
});

test('channels: a receipt signed before the open is mined reaches the host once it is', async () => {
  const p = await pair();
  try {
    const { channel_id: id } = await p.payer.services.channels.openChannel({ host: H.publicKey, capacity: credits(5), expiryHeight: null });
    const early = await p.payer.services.channels.signReceipt(fromHex(id, 32), H.publicKey, credits(1));
    assert.isFalse(early.delivered);
    assert.match(early.delivery_error!, /not open on the chain yet/);
    await p.clock.until('the host holds it', () => p.host.services.channels.getChannel(fromHex(id, 32))?.cumulative === String(credits(1)), 20_000);
    await p.clock.until('the payer knows it', () => p.payer.services.channels.getChannel(fromHex(id, 32))!.delivered === String(credits(1)), 10_000);
  } finally {
    await p.stop();
  }
});

test('channels: a close after the expiry height is refused, and the payer expires the channel for its whole capacity, not before', async () => {
  // Margin 0: the host never closes by itself, so the test can pass the expiry with a receipt held.
  const p = await pair({ closeMarginBlocks: 0 });
  try {
    const { payer, host } = p;
    const expiry = payer.chain.tip.height + 12;
    const id = await openChannel(p, credits(10), expiry);
    const channelId = fromHex(id, 32);
    await payer.services.channels.signReceipt(channelId, H.publicKey, credits(2));
    const balance = (): bigint => payer.chain.state.account(P.publicKey).balance - payer.chain.state.supply().emitted;
    await rejectsAsync(
      () => payer.services.channels.expireChannel(channelId),
      ChannelError,
      'not-expired',
      new RegExp(`from height ${expiry + 1}, \\d+ blocks from now`),
    );
    await p.clock.until('the host is at the expiry height', () => host.chain.tip.height >= expiry, 20_000);
    await rejectsAsync(() => host.services.channels.closeChannel(channelId, null), ChannelError, 'past-expiry', new RegExp(`closed up to height ${expiry}`));
    const expired = await payer.services.channels.expireChannel(channelId);
    assert.deepEqual({ ...expired, tx_id: '' }, { channel_id: id, tx_id: '', returned_to_payer: String(credits(10)) });
    assert.equal(statusOf(payer, id), 'closing');
    await rejectsAsync(() => payer.services.channels.expireChannel(channelId), ChannelError, 'ended');
    await p.clock.until('expired on both sides', () => statusOf(payer, id) === 'expired' && statusOf(host, id) === 'expired', 10_000);
    assert.equal(payer.chain.state.account(P.publicKey).locked_channels, 0n);
    assert.equal(balance(), 0n, 'the payer has every credit it earned');
    assert.equal(host.chain.state.account(H.publicKey).balance, 0n);
    await rejectsAsync(() => host.services.channels.closeChannel(channelId, null), ChannelError, 'ended', /expired/);
  } finally {
    await p.stop();
  }
});

test('channels: the host closes by itself with its best receipt once the expiry is within the margin; without a receipt nothing', async () => {
  const p = await pair();
  try {
    const { payer, host } = p;
    const expiry = payer.chain.tip.height + 25;
    const paid = await openChannel(p, credits(10), expiry);
    const unpaid = await openChannel(p, credits(1), expiry);
    await payer.services.channels.signReceipt(fromHex(paid, 32), H.publicKey, credits(3));
    await payer.services.channels.signReceipt(fromHex(paid, 32), H.publicKey, credits(7));
    await p.clock.until('the host closed it', () => statusOf(host, paid) === 'closed', 30_000);
    assert.equal(host.chain.state.account(H.publicKey).balance, credits(7) - burnOf(credits(7)));
    const closedAt = (await payer.chain.txHeight(fromHex(host.services.channels.getChannel(fromHex(paid, 32))!.end_tx!, 32)))!;
    assert.isAbove(closedAt, expiry - CLOSE_MARGIN_BLOCKS, 'not before the chain is within the margin');
    assert.isAtMost(closedAt, expiry);
    await p.clock.until('the other one is past its expiry', () => host.chain.tip.height > expiry + 1, 20_000);
    assert.equal(statusOf(host, unpaid), 'open', 'nothing to close it with');
  } finally {
    await p.stop();
  }
});

test('channels: a host restarted between the receipts and the close still closes with its best receipt', async () => {
  const store = new MemoryStore();
  const p = await pair({ store });
  try {
    const id = await openChannel(p, credits(10));
    const channelId = fromHex(id, 32);
    for (const n of [1, 2, 3]) assert.isTrue((await p.payer.services.channels.signReceipt(channelId, H.publicKey, credits(n))).delivered);
    await p.host.stop();
    p.bus.leave(p.bus.members.get(toHex(H.publicKey))!);
    p.host = await startNode(p.bus, p.hostChain, H, p.clock, { channels: { store } });
    assert.deepInclude(p.host.services.channels.getChannel(channelId)!, { status: 'open', cumulative: String(credits(3)) });
    const close = await p.host.services.channels.closeChannel(channelId, null);
    assert.equal(close.cumulative, String(credits(3)));
    await p.clock.until('closed', () => statusOf(p.payer, id) === 'closed', 20_000);
    assert.equal(p.payer.chain.state.account(H.publicKey).balance, credits(3) - burnOf(credits(3)));
  } finally {
    await p.stop();
  }
});

test('channels: a payer restarted before its ChannelOpen is mined pools it again, and the channel opens', async () => {
  const store = new MemoryStore();
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chain = await openChain();
  await mine(chain, P, 3);
  let payer = await startNode(bus, chain, P, clock, { channels: { store } });
  try {
    const { channel_id: id } = await payer.services.channels.openChannel({ host: H.publicKey, capacity: credits(2), expiryHeight: null });
    await payer.stop();
    bus.leave(bus.members.get(toHex(P.publicKey))!);
    payer = await startNode(bus, chain, P, clock, { mine: true, channels: { store } });
    assert.equal(statusOf(payer, id), 'opening');
    assert.isTrue(payer.mempool.has(fromHex(id, 32)), 'pooled again');
    await clock.until('open', () => statusOf(payer, id) === 'open', 10_000);
    assert.equal(chain.state.account(P.publicKey).locked_channels, credits(2));
  } finally {
    await payer.stop();
  }
});

test('channels: a receipt that arrives while the host makes its close is refused, never acknowledged above what the close pays', async () => {
  const p = await pair();
  try {
    const { payer, host, clock } = p;
    const { channel_id: id } = await payer.services.channels.openChannel({ host: H.publicKey, capacity: 10n * CREDIT, expiryHeight: null });
    const cid = fromHex(id, 32);
    await clock.until(
      'open on both',
      () => payer.services.channels.getChannel(cid)?.status === 'open' && host.services.channels.getChannel(cid)?.status === 'open',
      10_000,
    );
    assert.isTrue((await payer.services.channels.signReceipt(cid, H.publicKey, 1n * CREDIT)).delivered);
    // The host's own transactions queue ahead of its close, so the close takes a while to be made.
    for (let i = 0; i < 20; i++) void host.own.submit({ kind: 'RevokeCapability', token_id: new Uint8Array(32).fill(i + 1) });
    const closing = host.services.channels.closeChannel(cid, null);
    const late = await payer.services.channels.signReceipt(cid, H.publicKey, 5n * CREDIT);
    const close = await closing;
    assert.isFalse(late.delivered, 'the host does not acknowledge a receipt its close will not pay');
    // Refused as being closed, or as closing once the close is pooled, as the runtime's timing has it.
    assert.match(String(late.delivery_error), /^the host refused it: /);
    assert.equal(close.cumulative, String(1n * CREDIT));
    assert.equal(host.services.channels.getChannel(cid)!.cumulative, String(1n * CREDIT));
    await clock.until('closed on the payer', () => payer.services.channels.getChannel(cid)?.status === 'closed', 20_000);
    assert.equal(payer.chain.state.account(H.publicKey).balance, 1n * CREDIT - burnOf(1n * CREDIT));
  } finally {
    await p.stop();
  }
});

test('channels: the receipt handler takes bad bytes from a peer without harm: undecodable bytes fail, a channel not here or a forged signature is refused with its code', async () => {
  const p = await pair();
  try {
    const { payer, host } = p;
    const id = await openChannel(p, credits(10));
    const channelId = fromHex(id, 32);
    const peer = p.bus.join(G.publicKey);
    const send = async (to: SigningKey, bytes: Uint8Array): Promise<unknown> =>
      decode(receiptAnswerCodec, await peer.request(to.publicKey, CHANNEL_RPC.receipt, bytes));
    await rejectsAsync(() => peer.request(H.publicKey, CHANNEL_RPC.receipt, Uint8Array.of(1, 2, 3)), RemoteError, 'remote-failed');
    const good = await payer.services.channels.signReceipt(channelId, H.publicKey, credits(1));
    // To the payer, which pays this channel rather than hosts it; for a channel no block holds; signed by the host itself.
    assert.deepInclude(await send(P, encode(receiptCodec, { channel_id: channelId, cumulative: credits(1), payer_sig: fromHex(good.payer_sig, 64) })), {
      answer: 'Refused',
      code: 'wrong-role',
    });
    assert.deepInclude(
      await send(H, encode(receiptCodec, { channel_id: new Uint8Array(32).fill(7), cumulative: credits(1), payer_sig: fromHex(good.payer_sig, 64) })),
      { answer: 'Refused', code: 'not-on-chain' },
    );
    const forged = await H.sign(channelReceiptBytes(payer.chain.params.network, channelId, H.publicKey, credits(9)));
    assert.deepInclude(await send(H, encode(receiptCodec, { channel_id: channelId, cumulative: credits(9), payer_sig: forged })), {
      answer: 'Refused',
      code: 'bad-signature',
    });
    assert.equal(host.services.channels.getChannel(channelId)!.cumulative, String(credits(1)), "only the payer's receipt is kept");
  } finally {
    await p.stop();
  }
});
