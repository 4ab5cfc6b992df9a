/**
 * The HTTP API of a real `mesh node` process: answers, bad inputs, authentication, CORS, SSE.
 */

import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { getJson, type MeshProcess, openStream, postJson, startNode, stopAll, waitFor } from './mesh-process.ts';

let node: MeshProcess;
before(async () => {
  node = await startNode({ mine: true, blockIntervalMs: 200 });
  await waitFor('a few blocks', async () => (await getJson<{ height: number }>(node, '/status')).height >= 3);
});
after(stopAll);

const OTHER = 'ab'.repeat(32);

async function problem(response: Response, status: number): Promise<{ type: string; title: string; status: number; detail: string }> {
  assert.equal(response.status, status);
  assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
  const body = (await response.json()) as { type: string; title: string; status: number; detail: string };
  assert.equal(body.status, status);
  assert.equal(typeof body.title, 'string');
  return body;
}

test('api.token is created with mode 0600', async () => {
  const { mode } = await stat(join(node.dataDir, 'api.token'));
  assert.equal(mode & 0o777, 0o600);
  assert.match(node.token, /^[0-9a-f]{64}$/);
});

test("GET routes answer with the spec's fields", async () => {
  const health = await fetch(`${node.url}/health`);
  assert.equal(health.status, 200);
  assert.equal(await health.text(), 'ok');
  const status = await getJson<Record<string, unknown>>(node, '/status');
  assert.equal(status.node_id, node.nodeId);
  assert.equal(status.difficulty, 0);
  for (const field of ['balance', 'circulating_supply', 'burned_total', 'bond', 'weight', 'free', 'locked_channels', 'locked_bond']) {
    assert.equal(typeof status[field], 'string', field);
  }
  const history = await getJson<Record<string, unknown>>(node, `/history/${node.nodeId}`);
  assert.equal(history.window_blocks, 259_200);
  const rows = await getJson<{ kind: string; direction: string }[]>(node, `/transactions/${node.nodeId}?limit=2`);
  assert.equal(rows.length, 2);
  assert.deepEqual(
    rows.map((r) => [r.kind, r.direction]),
    [
      ['UptimeReward', 'in'],
      ['UptimeReward', 'in'],
    ],
  );
  const beacon = await getJson<{ height: number; hash: string }>(node, '/beacon');
  assert.match(beacon.hash, /^[0-9a-f]{64}$/);
  const { peers } = await getJson<{ peers: string[] }>(node, '/bootstrap');
  assert.ok(peers.includes(node.multiaddrs[0]!));
  assert.ok(Array.isArray(await getJson(node, '/signals')));
  assert.ok(Array.isArray(await getJson(node, '/atlas')));
});

test('bad ids and bad queries get 400', async () => {
  for (const path of [
    '/history/xyz',
    `/history/${'a'.repeat(63)}`,
    `/history/${'g'.repeat(64)}`,
    '/transactions/00',
    `/transactions/${OTHER}?limit=0`,
    `/transactions/${OTHER}?limit=abc`,
    `/transactions/${OTHER}?before=-1`,
  ]) {
    await problem(await fetch(node.url + path), 400);
  }
  await problem(await fetch(`${node.url}/no/such/route`), 404);
});

test('POST /transfer: token, amount, balance and body rules', async () => {
  const body = JSON.stringify({ to: OTHER, amount: '1' });
  const noToken = await fetch(`${node.url}/transfer`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await problem(noToken, 401);
  assert.match(noToken.headers.get('www-authenticate') ?? '', /^Bearer/);
  const wrong = await fetch(`${node.url}/transfer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${'0'.repeat(64)}` },
    body,
  });
  await problem(wrong, 401);
  const short = await fetch(`${node.url}/transfer`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer x' }, body });
  await problem(short, 401);

  for (const bad of [
    { to: OTHER, amount: '0' },
    { to: OTHER, amount: 0 },
    { to: 'ZZ', amount: '1' },
    { to: 'z'.repeat(33), amount: '1' },
    { to: OTHER, amount: '1.5' },
    { to: OTHER, amount: '-1' },
    { to: OTHER, amount: '01' },
    { to: OTHER },
  ]) {
    const r = await postJson(node, '/transfer', bad);
    assert.equal(r.status, 400, JSON.stringify(bad));
  }
  // A name's form that no node holds: the request is well-formed, the name names nobody.
  const nobody = await postJson(node, '/transfer', { to: 'zz', amount: '1' });
  assert.equal(nobody.status, 404);
  assert.equal(nobody.body.type, '/problems/unknown-name');
  const broke = await postJson(node, '/transfer', { to: OTHER, amount: (10n ** 30n).toString() });
  assert.equal(broke.status, 402);

  const huge = await fetch(`${node.url}/transfer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${node.token}` },
    body: JSON.stringify({ to: OTHER, amount: '1', pad: 'x'.repeat(1 << 20) }),
  });
  await problem(huge, 413);

  const ok = await postJson(node, '/transfer', { to: OTHER, amount: '5' });
  assert.equal(ok.status, 201);
  assert.match(ok.body.tx_id, /^[0-9a-f]{64}$/);
  await waitFor('confirmed', async () => (await getJson<{ tx_id: string }[]>(node, `/transactions/${OTHER}`)).some((r) => r.tx_id === ok.body.tx_id));
});

test('POST /bond and /unbond: token, amount, balance, bond and body rules; /status shows the stake', async () => {
  const credits = (n: number): string => (BigInt(n) * 10n ** 18n).toString();
  for (const path of ['/bond', '/unbond']) {
    const noToken = await fetch(`${node.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount":"1"}' });
    await problem(noToken, 401);
    for (const bad of [
      { amount: '0' },
      { amount: 0 },
      { amount: '1.5' },
      { amount: '-1' },
      { amount: '01' },
      { amount: '1e3' },
      {},
      { amount: '1', to: OTHER },
    ]) {
      const r = await postJson(node, path, bad);
      assert.equal(r.status, 400, `${path} ${JSON.stringify(bad)}`);
    }
    const crossPost = await postJson(node, path, { amount: '1' }, { origin: 'http://evil.example' });
    assert.equal(crossPost.status, 403);
  }
  const broke = await postJson(node, '/bond', { amount: (10n ** 30n).toString() });
  assert.equal(broke.status, 402);
  assert.equal(broke.body.type, '/problems/insufficient-balance');
  const bonded = await postJson(node, '/bond', { amount: credits(5) });
  assert.equal(bonded.status, 202);
  assert.match(bonded.body.tx_id, /^[0-9a-f]{64}$/);
  // Above the bond, pooled transactions counted: 409 at once, before the bond is in a block.
  const over = await postJson(node, '/unbond', { amount: credits(6) });
  assert.equal(over.status, 409);
  assert.equal(over.body.type, '/problems/bond-conflict');
  const unbonded = await postJson(node, '/unbond', { amount: credits(2) });
  assert.equal(unbonded.status, 202);
  type Stake = {
    bond: string;
    weight: string;
    work_earned: string;
    unbonding: string;
    unbond_release_height: number | null;
    unbond_release_secs: number | null;
  };
  const status = await waitFor('the unbond is in a block', async () => {
    const s = await getJson<Stake & { height: number }>(node, '/status');
    return s.unbonding === credits(2) ? s : undefined;
  });
  assert.equal(status.bond, credits(3));
  assert.equal(status.work_earned, '0');
  assert.equal(status.weight, '0', 'no earned work, no weight');
  assert.ok(status.unbond_release_height! > status.height);
  assert.ok(status.unbond_release_secs! > Date.now() / 1000);
});

test('CORS: loopback origins may read; no origin may mutate', async () => {
  const local = await fetch(`${node.url}/status`, { headers: { origin: 'http://localhost:5173' } });
  assert.equal(local.headers.get('access-control-allow-origin'), 'http://localhost:5173');
  for (const origin of ['http://evil.example', 'http://localhost.evil.example', 'http://127.0.0.1.nip.io']) {
    const r = await fetch(`${node.url}/status`, { headers: { origin } });
    assert.equal(r.headers.get('access-control-allow-origin'), null, origin);
  }
  const preflight = await fetch(`${node.url}/transfer`, {
    method: 'OPTIONS',
    headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
  assert.equal(preflight.headers.get('access-control-allow-origin'), null);
  assert.equal(preflight.headers.get('access-control-allow-methods'), null);
  const crossPost = await postJson(node, '/transfer', { to: OTHER, amount: '1' }, { origin: 'http://evil.example' });
  assert.equal(crossPost.status, 403);
});

test('signals: a payload needs a burn proof; a capability-only signal is kept and streamed', async () => {
  const needsBurn = await postJson(node, '/signals/send', { to: 'broadcast', payload_hex: 'cafe' });
  assert.equal(needsBurn.status, 400);
  const unknownBurn = await postJson(node, '/signals/send', { to: 'broadcast', payload_hex: 'cafe', burn_tx_id_hex: 'cd'.repeat(32) });
  assert.equal(unknownBurn.status, 400);
  const stream = await openStream<{ id: string; from: string }>(node, '/signals/stream');
  const sent = await postJson(node, '/signals/send', { to: 'broadcast', capabilities: [{ name: 'chat', version: 2 }] });
  assert.equal(sent.status, 202);
  const event = await stream.next((s) => s.id === sent.body.id);
  assert.equal(event.from, node.nodeId);
  stream.close();
  // Kept: the node's own capacity signals may have come after it, so it need not be the last.
  const kept = await getJson<{ id: string; nonce: number }[]>(node, '/signals');
  assert.ok(
    kept.some((s) => s.id === sent.body.id),
    `${sent.body.id} among ${kept.map((s) => s.id).join(', ')}`,
  );
});

test('/blocks/stream pushes block objects as they are mined', async () => {
  const stream = await openStream<Record<string, unknown>>(node, '/blocks/stream');
  const block = await stream.next(() => true, 10_000);
  stream.close();
  assert.deepEqual(Object.keys(block).sort(), ['hash', 'index', 'miner', 'nonce', 'prev_hash', 'timestamp', 'tx_count']);
  assert.equal(block.miner, node.nodeId);
  assert.ok(Math.abs((block.timestamp as number) - Date.now() / 1000) < 60, 'unix seconds');
});
