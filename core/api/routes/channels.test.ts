// The /channels routes in-process, over the fake channels: every answer, every refusal, and that a
// refused request never reaches the service. Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../../test/harness.ts';
import { ChannelError } from '../../channels/errors.ts';
import { LedgerRuleError } from '../../ledger/apply.ts';
import { AUTH, BAD_IDS, JSON_POST, ok, post, problem, request, setup } from '../api.test-util.ts';
import { CHANNEL, CHANNEL_HOST, CHANNEL_ID, CHANNEL_SIG, CLOSE_TX_ID } from '../fake-channels.test-util.ts';

const HOST = CHANNEL_HOST;
const OPEN = { host: HOST, capacity: '10000000000000000000' };
const RECEIPT = { channel_id: CHANNEL_ID, host: HOST, cumulative: '2500000000000000000' };

test('channels: POST /channels/open answers 201 {channel_id, expiry_height}; expiry_height is optional', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(post('/channels/open', OPEN)), 201), { channel_id: CHANNEL_ID, expiry_height: 1_447 });
  assert.deepEqual(await ok(await api(post('/channels/open', { ...OPEN, capacity: 42, expiry_height: 90 })), 201), {
    channel_id: CHANNEL_ID,
    expiry_height: 90,
  });
  assert.deepEqual(node.channels.channelCalls, [
    { method: 'openChannel', args: [{ host: HOST, capacity: 10n ** 19n, expiryHeight: null }] },
    { method: 'openChannel', args: [{ host: HOST, capacity: 42n, expiryHeight: 90 }] },
  ]);
});

test('channels: POST /channels/open refuses a bad host, capacity or expiry_height with a 400 naming it, before the service', async () => {
  const { api, node } = setup();
  const cases: [Record<string, unknown>, string][] = [
    [{ host: 'B2'.repeat(32) }, 'host'],
    [{ host: 'b2' }, 'host'],
    [{ host: undefined }, 'host'],
    [{ capacity: '0' }, 'capacity'],
    [{ capacity: '1.5' }, 'capacity'],
    [{ capacity: -1 }, 'capacity'],
    [{ capacity: undefined }, 'capacity'],
    [{ expiry_height: 0 }, 'expiry_height'],
    [{ expiry_height: 1.5 }, 'expiry_height'],
    [{ expiry_height: '100' }, 'expiry_height'],
    [{ expiry_height: 2 ** 53 }, 'expiry_height'],
    [{ expiry: 100 }, 'expiry'],
  ];
  for (const [change, field] of cases) {
    const body = await problem(await api(post('/channels/open', { ...OPEN, ...change })), 400);
    assert.equal(body.type, '/problems/invalid-body');
    assert.deepEqual(
      (body.errors as { name: string }[]).map((e) => e.name),
      [field],
      JSON.stringify(change),
    );
  }
  assert.deepEqual(node.channels.channelCalls, []);
});

test("channels: the node's refusals are answered from their tables: 402, 400, 404, 409", async () => {
  const { api, node } = setup();
  const cases: [unknown, number, string][] = [
    [new LedgerRuleError('insufficient-free-balance', 'the capacity of 10 is above the free balance of 1'), 402, 'insufficient-balance'],
    [new ChannelError('bad-host', 'host is this node'), 400, 'invalid-body'],
    [new ChannelError('exceeds-capacity', 'cumulative 11 credits is above the capacity of 10 credits by 1 credits'), 400, 'invalid-body'],
    [new ChannelError('bad-signature', "payer_sig is not the signature of the channel's payer"), 400, 'invalid-signature'],
    [new ChannelError('unknown-channel', 'this node opened no channel'), 404, 'unknown-channel'],
    [new ChannelError('ended', 'channel is closing'), 409, 'channel-conflict'],
    [new ChannelError('not-expired', 'from height 90'), 409, 'channel-conflict'],
  ];
  const routes: [string, unknown][] = [
    ['/channels/open', OPEN],
    ['/channels/receipt', RECEIPT],
    [`/channels/${CHANNEL_ID}/close`, {}],
    [`/channels/${CHANNEL_ID}/expire`, {}],
  ];
  for (const [error, status, type] of cases) {
    node.channels.channelError = error;
    for (const [path, body] of routes) {
      const answer = await problem(await api(post(path, body)), status);
      assert.equal(answer.type, `/problems/${type}`, path);
      assert.equal(answer.rule, (error as ChannelError).code);
      assert.equal(answer.detail, (error as Error).message);
    }
  }
});

test('channels: POST /channels/receipt answers the signed receipt and whether the host has it', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(post('/channels/receipt', RECEIPT))), {
    channel_id: CHANNEL_ID,
    cumulative: RECEIPT.cumulative,
    payer_sig: CHANNEL_SIG,
    delivered: true,
    delivery_error: null,
  });
  await ok(await api(post('/channels/receipt', { ...RECEIPT, cumulative: 0 })));
  assert.deepEqual(node.channels.channelCalls, [
    { method: 'signReceipt', args: [CHANNEL_ID, HOST, 2_500_000_000_000_000_000n] },
    { method: 'signReceipt', args: [CHANNEL_ID, HOST, 0n] },
  ]);
  for (const [change, field] of [
    [{ channel_id: 'c4' }, 'channel_id'],
    [{ host: undefined }, 'host'],
    [{ cumulative: '-1' }, 'cumulative'],
    [{ cumulative: '01' }, 'cumulative'],
    [{ payer_sig: CHANNEL_SIG }, 'payer_sig'],
  ] as [Record<string, unknown>, string][]) {
    const body = await problem(await api(post('/channels/receipt', { ...RECEIPT, ...change })), 400);
    assert.deepEqual(
      (body.errors as { name: string }[]).map((e) => e.name),
      [field],
    );
  }
  assert.lengthOf(node.channels.channelCalls, 2);
});

test('channels: POST /channels/:id/close takes a receipt, or no body or {} to close with the best held; 202 with the division', async () => {
  const { api, node } = setup();
  const path = `/channels/${CHANNEL_ID}/close`;
  const withReceipt = await ok(await api(post(path, { cumulative: '3000000000000000000', payer_sig: CHANNEL_SIG })), 202);
  assert.deepEqual(withReceipt, {
    channel_id: CHANNEL_ID,
    tx_id: CLOSE_TX_ID,
    cumulative: '3000000000000000000',
    to_host: '2970000000000000000',
    burned: '30000000000000000',
    returned_to_payer: '7000000000000000000',
  });
  await ok(await api(post(path, {})), 202);
  await ok(await api(request(path, { method: 'POST', headers: AUTH })), 202);
  assert.deepEqual(node.channels.channelCalls, [
    { method: 'closeChannel', args: [CHANNEL_ID, { cumulative: 3_000_000_000_000_000_000n, payerSig: CHANNEL_SIG }] },
    { method: 'closeChannel', args: [CHANNEL_ID, null] },
    { method: 'closeChannel', args: [CHANNEL_ID, null] },
  ]);
  const half = await problem(await api(post(path, { cumulative: '1' })), 400);
  assert.match(half.detail, /^payer_sig: required with cumulative/);
  const otherHalf = await problem(await api(post(path, { payer_sig: CHANNEL_SIG })), 400);
  assert.match(otherHalf.detail, /^cumulative: required with payer_sig/);
  for (const body of [
    { cumulative: '1', payer_sig: 'A5'.repeat(64) },
    { cumulative: '1', payer_sig: 'a5' },
    { cumulative: '1.5', payer_sig: CHANNEL_SIG },
    { extra: 1 },
    [],
  ]) {
    await problem(await api(post(path, body)), 400);
  }
  assert.lengthOf(node.channels.channelCalls, 3, 'no refused body reached the service');
});

test('channels: POST /channels/:id/expire takes no body or {}; GET /channels and /channels/:id; bad ids are 400, unknown 404', async () => {
  const { api, node } = setup();
  const expire = `/channels/${CHANNEL_ID}/expire`;
  assert.deepEqual(await ok(await api(post(expire, {})), 202), { channel_id: CHANNEL_ID, tx_id: CLOSE_TX_ID, returned_to_payer: '10000000000000000000' });
  await ok(await api(request(expire, { method: 'POST', headers: AUTH })), 202);
  await problem(await api(post(expire, { now: true })), 400);
  assert.deepEqual(await ok(await api(request('/channels'))), [CHANNEL]);
  assert.deepEqual(await ok(await api(request(`/channels/${CHANNEL_ID}`))), CHANNEL);
  const unknown = await problem(await api(request(`/channels/${'ab'.repeat(32)}`)), 404);
  assert.equal(unknown.type, '/problems/unknown-channel');
  for (const [what, id] of BAD_IDS) {
    for (const req of [request(`/channels/${id}`), post(`/channels/${id}/close`, {}), post(`/channels/${id}/expire`, {})]) {
      const body = await problem(await api(req), 400);
      assert.equal(body.type, '/problems/invalid-parameter', what);
    }
  }
  await problem(await api(request('/channels?all=1')), 400);
  assert.deepEqual(
    node.channels.channelCalls.map((c) => c.method),
    ['expireChannel', 'expireChannel', 'listChannels', 'getChannel', 'getChannel'],
  );
});

test('channels: every channel route that changes something needs the token; DELETE /channels/open is 405', async () => {
  const { api, node } = setup();
  for (const path of ['/channels/open', '/channels/receipt', `/channels/${CHANNEL_ID}/close`, `/channels/${CHANNEL_ID}/expire`]) {
    await problem(await api(post(path, {}, { 'content-type': 'application/json' })), 401);
  }
  const wrong = await api(request('/channels/open', { method: 'DELETE', headers: AUTH }));
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get('allow'), 'POST, OPTIONS');
  await wrong.body?.cancel();
  await problem(await api(post('/channels/open', OPEN, { ...JSON_POST, origin: 'http://evil.example' })), 403);
  assert.deepEqual(node.channels.channelCalls, []);
});
