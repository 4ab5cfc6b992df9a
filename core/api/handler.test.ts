// The node's HTTP API in-process, over a fake NodeService: every route's answer and every refusal.
// Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { MempoolError } from '../chain/mempool.ts';
import type { History, TxListItem } from '../chain/readmodel.ts';
import type { TxStreamEvent } from '../chain/tx-feed.ts';
import { toHex } from '../encoding/hex.ts';
import { LedgerRuleError } from '../ledger/apply.ts';
import { SignalError } from '../signal/errors.ts';
import type { SignalObject } from '../signal/types.ts';
import { constantTimeEqual, isLoopbackOrigin } from './access.ts';
import { AUTH, BAD_IDS, BASE, JSON_POST, ok, post, problem, readUntil, request, setup, TOKEN } from './api.test-util.ts';
import {
  ATLAS,
  BLOCK,
  BOB,
  FAR,
  FakeNode,
  NETGRAPH,
  PEERS,
  RTT_TO_BOB,
  RTT_TO_FAR,
  SELF,
  SIGNAL,
  SIGNAL_ID,
  STATUS,
  TRAFFIC,
  TX_ID,
} from './fake-node.test-util.ts';
import { createNodeApi } from './handler.ts';

// ---------------------------------------------------------------------------------------------
// Reads

test('api: GET /health answers text/plain ok', async () => {
  const { api } = setup();
  const response = await api(request('/health'));
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
  assert.equal(await response.text(), 'ok');
  assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
});

test("api: GET /status, /beacon, /bootstrap, /atlas and /signals answer the node's objects", async () => {
  const { api } = setup();
  assert.deepEqual(await ok(await api(request('/status'))), STATUS);
  assert.deepEqual(await ok(await api(request('/beacon'))), { height: 7, hash: 'ee'.repeat(32) });
  assert.deepEqual(await ok(await api(request('/bootstrap'))), { peers: ['/ip4/127.0.0.1/tcp/4001/p2p/12D3KooW'] });
  assert.deepEqual(await ok(await api(request('/atlas'))), ATLAS);
  assert.deepEqual(await ok(await api(request('/signals'))), [SIGNAL]);
});

test('api: GET /history/:node_id passes the decoded id', async () => {
  const { api, node } = setup();
  const body = await ok<History>(await api(request(`/history/${BOB}`)));
  assert.equal(body.node_id, BOB);
  assert.equal(body.window_blocks, 259_200);
  assert.deepEqual(node.ledger.historyAsked, [BOB]);
});

test('api: a bad node id on /history and /transactions is 400', async () => {
  const { api, node } = setup();
  for (const route of ['history', 'transactions']) {
    for (const [what, id] of BAD_IDS) {
      const body = await problem(await api(request(`/${route}/${id}`)), 400);
      assert.equal(body.type, '/problems/invalid-parameter', `${route} ${what}`);
      assert.deepEqual(
        (body.errors as { name: string }[]).map((e) => e.name),
        ['node_id'],
      );
    }
  }
  assert.deepEqual(node.ledger.historyAsked, []);
  assert.deepEqual(node.ledger.pageAsked, []);
  // Upper case is named as such.
  assert.match((await problem(await api(request(`/history/${'AB'.repeat(32)}`)), 400)).detail, /lowercase/);
});

test('api: GET /transactions/:node_id pages with limit (default 100, clamped to 500) and before', async () => {
  const { api, node } = setup();
  const rows = await ok<TxListItem[]>(await api(request(`/transactions/${BOB}`)));
  assert.deepEqual(rows, [{ tx_id: TX_ID, height: 5, kind: 'Transfer', amount: '10', counterparty: BOB, direction: 'out' }]);
  const cases: [string, { limit: number; before?: number }][] = [
    ['', { limit: 100 }],
    ['?limit=1', { limit: 1 }],
    ['?limit=500', { limit: 500 }],
    ['?limit=501', { limit: 500 }],
    ['?limit=99999999999999999999999', { limit: 500 }],
    ['?before=0', { limit: 100, before: 0 }],
    ['?limit=20&before=1234', { limit: 20, before: 1234 }],
  ];
  node.ledger.pageAsked = [];
  for (const [query] of cases) await ok(await api(request(`/transactions/${BOB}${query}`)));
  assert.deepEqual(
    node.ledger.pageAsked,
    cases.map(([, page]) => ({ node: BOB, ...page })),
  );
});

test('api: bad paging parameters are 400, unknown and repeated ones too', async () => {
  const { api, node } = setup();
  for (const query of [
    'limit=0',
    'limit=-1',
    'limit=1.5',
    'limit=abc',
    'limit=',
    'limit=01',
    'limit=1e2',
    'before=-1',
    'before=1.5',
    'before=x',
    'before=',
    'before=99999999999999999999',
    'limit=5&limit=6',
  ]) {
    const body = await problem(await api(request(`/transactions/${BOB}?${query}`)), 400);
    assert.equal(body.type, '/problems/invalid-parameter', query);
  }
  const unknown = await problem(await api(request(`/transactions/${BOB}?limt=5`)), 400);
  assert.equal(unknown.type, '/problems/unknown-parameter');
  assert.equal((await problem(await api(request('/status?verbose=1')), 400)).type, '/problems/unknown-parameter');
  assert.deepEqual(node.ledger.pageAsked, []);
});

test('api: unknown paths are 404, wrong methods 405 with Allow', async () => {
  const { api } = setup();
  for (const path of ['/', '/nope', '/status/', '/history/', `/history/${BOB}/x`, '/signals/other']) {
    assert.equal((await problem(await api(request(path)), 404)).type, '/problems/not-found', path);
  }
  const getTransfer = await api(request('/transfer'));
  assert.equal(getTransfer.headers.get('allow'), 'POST, OPTIONS');
  await problem(getTransfer, 405);
  const postStatus = await api(post('/status', {}));
  assert.equal(postStatus.headers.get('allow'), 'GET, HEAD, OPTIONS');
  await problem(postStatus, 405);
  const deleteStatus = await api(request('/status', { method: 'DELETE', headers: AUTH }));
  await problem(deleteStatus, 405);
  assert.equal((await problem(await api(request('/signals/send')), 405)).type, '/problems/method-not-allowed');
});

test('api: HEAD is GET without a body, and needs no token', async () => {
  const { api, node } = setup();
  const response = await api(request('/status', { method: 'HEAD' }));
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'application/json');
  assert.equal(response.body, null);
  const stream = await api(request('/blocks/stream', { method: 'HEAD' }));
  assert.equal(stream.headers.get('content-type'), 'text/event-stream');
  assert.equal(node.ledger.blockListeners.size, 0, 'no subscription is left behind');
});

// ---------------------------------------------------------------------------------------------
// Authentication and origins

test('api: constantTimeEqual compares whole byte strings', () => {
  const e = new TextEncoder();
  assert.isTrue(constantTimeEqual(e.encode('secret'), e.encode('secret')));
  assert.isFalse(constantTimeEqual(e.encode('secreT'), e.encode('secret')));
  assert.isFalse(constantTimeEqual(e.encode('secret-longer'), e.encode('secret')));
  assert.isFalse(constantTimeEqual(e.encode('secre'), e.encode('secret')));
  assert.isFalse(constantTimeEqual(new Uint8Array(0), e.encode('secret')));
  // A longer input whose first bytes match, padded with zeros, is still unequal.
  assert.isFalse(constantTimeEqual(Uint8Array.of(1, 0), Uint8Array.of(1)));
});

test('api: a mutating request without the right bearer token is 401 with WWW-Authenticate: Bearer', async () => {
  const { api, node } = setup();
  const body = { to: BOB, amount: '5' };
  const wrongSameLength = TOKEN.slice(0, -1) + (TOKEN.endsWith('C') ? 'D' : 'C');
  const refused: Record<string, string>[] = [
    {},
    { authorization: `Bearer ${wrongSameLength}` },
    { authorization: `Bearer ${TOKEN}x` },
    { authorization: `Bearer ${TOKEN.slice(1)}` },
    { authorization: 'Bearer ' },
    { authorization: `Basic ${TOKEN}` },
    { authorization: TOKEN },
  ];
  for (const auth of refused) {
    const response = await api(post('/transfer', body, { ...auth, 'content-type': 'application/json' }));
    assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer\b/, JSON.stringify(auth));
    assert.equal((await problem(response, 401)).type, '/problems/unauthorized');
  }
  // Any method but GET, HEAD and OPTIONS, on any path, known or not.
  for (const method of ['DELETE', 'PUT', 'PATCH']) {
    await problem(await api(request('/status', { method })), 401);
    await problem(await api(request('/nowhere', { method })), 401);
  }
  assert.deepEqual(node.ledger.transfers, []);
  // The scheme is case-insensitive.
  await ok(await api(post('/transfer', body, { authorization: `bearer ${TOKEN}`, 'content-type': 'application/json' })), 201);
});

test('api: reads need no token', async () => {
  const { api } = setup();
  assert.equal((await api(request('/status'))).status, 200);
  assert.equal((await api(request('/status', { headers: { authorization: 'Bearer wrong' } }))).status, 200);
});

test('api: isLoopbackOrigin takes loopback origins only, never look-alikes', () => {
  for (const origin of [
    'http://localhost',
    'http://localhost:5173',
    'https://localhost:8443',
    'http://127.0.0.1',
    'http://127.0.0.1:1',
    'http://[::1]:8080',
    'https://[::1]',
  ]) {
    assert.isTrue(isLoopbackOrigin(origin), origin);
  }
  for (const origin of [
    'null',
    '',
    'http://localhost.evil.com',
    'http://127.0.0.1.nip.io',
    'http://evil.com',
    'http://localhost@evil.com',
    'http://evil.com@localhost',
    'http://localhost:8080/',
    'http://localhost/path',
    'ftp://localhost',
    'ws://localhost',
    'http://LOCALHOST',
    'http://127.1',
    'http://127.0.0.2',
    'http://[::2]',
    'http://0.0.0.0',
    'localhost',
    'http://localhost.',
  ]) {
    assert.isFalse(isLoopbackOrigin(origin), origin);
  }
});

test('api: GET and SSE answers carry CORS headers for loopback origins only', async () => {
  const { api, node } = setup();
  for (const origin of ['http://localhost:5173', 'http://127.0.0.1:3000', 'http://[::1]:8080', 'https://localhost']) {
    const response = await api(request('/status', { headers: { origin } }));
    assert.equal(response.headers.get('access-control-allow-origin'), origin);
    assert.include(response.headers.get('vary') ?? '', 'Origin');
    // Errors of a GET route too, so a local page can read the problem.
    const bad = await api(request('/history/xyz', { headers: { origin } }));
    assert.equal(bad.headers.get('access-control-allow-origin'), origin);
    await bad.body?.cancel();
  }
  for (const origin of ['http://localhost.evil.com', 'http://127.0.0.1.nip.io', 'https://evil.example', 'null']) {
    const response = await api(request('/status', { headers: { origin } }));
    assert.equal(response.status, 200);
    assert.isNull(response.headers.get('access-control-allow-origin'), origin);
    assert.include(response.headers.get('vary') ?? '', 'Origin');
  }
  // Unknown paths get no CORS headers.
  assert.isNull((await api(request('/nope', { headers: { origin: 'http://localhost:1' } }))).headers.get('access-control-allow-origin'));
  const stream = await api(request('/signals/stream', { headers: { origin: 'http://localhost:5173' } }));
  assert.equal(stream.headers.get('access-control-allow-origin'), 'http://localhost:5173');
  await stream.body?.cancel();
  assert.equal(node.signals.signalListeners.size, 0);
});

test('api: a mutating request from another origin is 403 even with the token, and gets no CORS headers', async () => {
  const { api, node } = setup();
  for (const origin of ['https://evil.example', 'http://localhost:5173', 'http://127.0.0.1:8845', 'null', 'http://localhost.evil.com']) {
    const response = await api(post('/transfer', { to: BOB, amount: '5' }, { ...JSON_POST, origin }));
    assert.isNull(response.headers.get('access-control-allow-origin'));
    assert.equal((await problem(response, 403)).type, '/problems/cross-origin', origin);
    // Before anything else: even without a token, and on an unknown path.
    await problem(await api(post('/nowhere', {}, { origin })), 403);
  }
  assert.deepEqual(node.ledger.transfers, []);
  // The node's own origin (a page it serves) passes, and its answer grants nothing cross-origin.
  const same = await api(post('/transfer', { to: BOB, amount: '5' }, { ...JSON_POST, origin: BASE }));
  assert.isNull(same.headers.get('access-control-allow-origin'));
  await ok(same, 201);
});

test('api: a request addressed to a domain name is 403 (DNS rebinding); IP addresses and localhost pass', async () => {
  const { api } = setup();
  for (const host of ['http://rebind.example:8844', 'http://127.0.0.1.nip.io:8844', 'http://mesh.lan']) {
    assert.equal((await problem(await api(new Request(`${host}/status`)), 403)).type, '/problems/host-not-allowed', host);
  }
  for (const host of ['http://127.0.0.1:8844', 'http://localhost:8844', 'http://[::1]:8844', 'http://192.168.1.20:8844', 'http://app.localhost']) {
    assert.equal((await api(new Request(`${host}/health`))).status, 200, host);
  }
});

test('api: preflight grants GET to loopback origins on GET routes and nothing else', async () => {
  const { api } = setup();
  const granted = await api(request('/status', { method: 'OPTIONS', headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET' } }));
  assert.equal(granted.status, 204);
  assert.equal(granted.headers.get('access-control-allow-origin'), 'http://localhost:5173');
  assert.equal(granted.headers.get('access-control-allow-methods'), 'GET');
  assert.include(granted.headers.get('vary') ?? '', 'Origin');
  const streamGranted = await api(
    request('/blocks/stream', { method: 'OPTIONS', headers: { origin: 'http://[::1]:3000', 'access-control-request-method': 'GET' } }),
  );
  assert.equal(streamGranted.headers.get('access-control-allow-origin'), 'http://[::1]:3000');

  const refusals: [string, Record<string, string>][] = [
    ['/status', { origin: 'https://evil.example', 'access-control-request-method': 'GET' }],
    ['/status', { origin: 'http://localhost.evil.com', 'access-control-request-method': 'GET' }],
    ['/status', { origin: 'http://localhost:5173', 'access-control-request-method': 'POST' }],
    [
      '/transfer',
      { origin: 'http://localhost:5173', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    ],
    ['/signals/send', { origin: 'http://127.0.0.1:9000', 'access-control-request-method': 'POST' }],
    ['/transfer', { origin: 'https://evil.example', 'access-control-request-method': 'POST' }],
  ];
  for (const [path, headers] of refusals) {
    const response = await api(request(path, { method: 'OPTIONS', headers }));
    assert.equal(response.status, 204);
    const granted: string[] = [];
    response.headers.forEach((_, name) => {
      if (name.startsWith('access-control-')) granted.push(name);
    });
    assert.deepEqual(granted, [], `${path} ${JSON.stringify(headers)}`);
  }
  assert.equal((await api(request('/transfer', { method: 'OPTIONS' }))).headers.get('allow'), 'POST, OPTIONS');
  await problem(await api(request('/nope', { method: 'OPTIONS', headers: { origin: 'http://localhost' } })), 404);
});

// ---------------------------------------------------------------------------------------------
// POST /transfer

test('api: POST /transfer pools a transfer and answers 201 {tx_id}', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(post('/transfer', { to: BOB, amount: '1500000000000000000' })), 201), { tx_id: TX_ID });
  assert.deepEqual(await ok(await api(post('/transfer', { to: BOB, amount: 42 })), 201), { tx_id: TX_ID });
  const headers = { ...AUTH, 'content-type': 'application/json; charset=utf-8' };
  await ok(await api(post('/transfer', { to: BOB, amount: '340282366920938463463374607431768211455' }, headers)), 201);
  assert.deepEqual(node.ledger.transfers, [
    { to: BOB, amount: 1_500_000_000_000_000_000n },
    { to: BOB, amount: 42n },
    { to: BOB, amount: 2n ** 128n - 1n },
  ]);
});

test('api: POST /transfer refuses bad recipients and amounts with 400', async () => {
  const { api, node } = setup();
  const bodies: unknown[] = [
    { to: BOB, amount: '0' },
    { to: BOB, amount: 0 },
    { to: BOB, amount: '01' },
    { to: BOB, amount: 1.5 },
    { to: BOB, amount: '1.5' },
    { to: BOB, amount: -1 },
    { to: BOB, amount: '-1' },
    { to: BOB, amount: '+1' },
    { to: BOB, amount: '1e3' },
    { to: BOB, amount: ' 1' },
    { to: BOB, amount: '340282366920938463463374607431768211456' },
    { to: BOB, amount: '9'.repeat(60) },
    { to: BOB, amount: 2 ** 53 },
    { to: BOB, amount: true },
    { to: BOB, amount: null },
    { to: BOB },
    { amount: '5' },
    { to: BOB.slice(2), amount: '5' },
    { to: `${BOB}22`, amount: '5' },
    { to: BOB.toUpperCase(), amount: '5' },
    { to: 'zz'.repeat(32), amount: '5' },
    { to: 7, amount: '5' },
    { to: BOB, amount: '5', memo: 'hi' },
    [BOB, '5'],
    'text',
    null,
  ];
  for (const body of bodies) {
    const response = await api(post('/transfer', JSON.stringify(body)));
    assert.equal((await problem(response, 400)).type, '/problems/invalid-body', JSON.stringify(body));
  }
  const zero = await problem(await api(post('/transfer', { to: BOB, amount: '0' })), 400);
  assert.deepEqual(zero.errors, [{ name: 'amount', detail: 'must be above 0' }]);
  const unknown = await problem(await api(post('/transfer', { to: BOB, amount: '5', memo: 'x' })), 400);
  assert.deepEqual(unknown.errors, [{ name: 'memo', detail: 'unknown field' }]);
  assert.deepEqual(node.ledger.transfers, []);
});

test("api: POST /transfer maps the node's refusals: 402, 400, 409, 503, and 500 without detail", async () => {
  const { api, node, errors } = setup();
  const cases: [unknown, number, string][] = [
    [new LedgerRuleError('insufficient-free-balance', 'transfer of 5 exceeds the free balance of 1'), 402, 'insufficient-balance'],
    [new LedgerRuleError('trust-self', 'a node cannot grant trust to itself'), 400, 'ledger-rule'],
    [new MempoolError('duplicate', 'already pooled'), 409, 'transaction-conflict'],
    [new MempoolError('full', 'the pool holds 20000 transactions'), 503, 'pool-full'],
    [new MempoolError('sender-full', 'the pool holds 64 transactions from this sender'), 503, 'pool-full'],
  ];
  for (const [error, status, code] of cases) {
    node.ledger.transferError = error;
    const response = await api(post('/transfer', { to: BOB, amount: '5' }));
    if (status === 503) assert.match(response.headers.get('retry-after') ?? '', /^[0-9]+$/);
    const body = await problem(response, status);
    assert.equal(body.type, `/problems/${code}`);
    assert.equal(body.rule, (error as LedgerRuleError).code);
  }
  assert.deepEqual(errors, []);
  node.ledger.transferError = new Error('disk on fire at /var/secret/path');
  const body = await problem(await api(post('/transfer', { to: BOB, amount: '5' })), 500);
  assert.notInclude(JSON.stringify(body), 'secret');
  assert.notInclude(JSON.stringify(body), 'stack');
  assert.equal(errors.length, 1, 'the cause is reported to onError');
});

// ---------------------------------------------------------------------------------------------
// POST /bond and /unbond

test('api: POST /bond and /unbond pool a bond change and answer 202 {tx_id}', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(post('/bond', { amount: '2500000000000000000' })), 202), { tx_id: TX_ID });
  assert.deepEqual(await ok(await api(post('/unbond', { amount: 42 })), 202), { tx_id: TX_ID });
  await ok(await api(post('/bond', { amount: '340282366920938463463374607431768211455' })), 202);
  assert.deepEqual(node.ledger.stakes, [
    { kind: 'bond', amount: 2_500_000_000_000_000_000n },
    { kind: 'unbond', amount: 42n },
    { kind: 'bond', amount: 2n ** 128n - 1n },
  ]);
});

test('api: POST /bond and /unbond refuse bad amounts and bodies with 400, and take the token', async () => {
  const { api, node } = setup();
  const bodies: unknown[] = [
    { amount: '0' },
    { amount: 0 },
    { amount: '01' },
    { amount: 1.5 },
    { amount: '1.5' },
    { amount: '1.0' },
    { amount: -1 },
    { amount: '-1' },
    { amount: '+1' },
    { amount: '1e3' },
    { amount: ' 1' },
    { amount: '340282366920938463463374607431768211456' },
    { amount: '9'.repeat(60) },
    { amount: 2 ** 53 },
    { amount: true },
    { amount: null },
    {},
    { amount: '5', to: BOB },
    ['5'],
    'text',
    null,
  ];
  for (const path of ['/bond', '/unbond']) {
    for (const body of bodies) {
      const response = await api(post(path, JSON.stringify(body)));
      assert.equal((await problem(response, 400)).type, '/problems/invalid-body', `${path} ${JSON.stringify(body)}`);
    }
    const zero = await problem(await api(post(path, { amount: '0' })), 400);
    assert.deepEqual(zero.errors, [{ name: 'amount', detail: 'must be above 0' }]);
    const unknown = await problem(await api(post(path, { amount: '5', memo: 'x' })), 400);
    assert.deepEqual(unknown.errors, [{ name: 'memo', detail: 'unknown field' }]);
    for (const text of ['{', '', '{"amount":', 'nul']) await problem(await api(post(path, text)), 400);
    await problem(await api(post(path, JSON.stringify({ amount: '5' }), { ...AUTH })), 415);
    await problem(await api(post(`${path}?amount=5`, { amount: '5' })), 400);
    const noToken = await api(post(path, { amount: '5' }, { 'content-type': 'application/json' }));
    assert.equal((await problem(noToken, 401)).type, '/problems/unauthorized');
    const get = await api(request(path));
    assert.equal(get.headers.get('allow'), 'POST, OPTIONS');
    await problem(get, 405);
  }
  assert.deepEqual(node.ledger.stakes, []);
});

test("api: POST /bond and /unbond map the node's refusals: 402 above the free balance, 409 above the bond", async () => {
  const { api, node } = setup();
  const cases: [string, unknown, number, string][] = [
    ['/bond', new LedgerRuleError('insufficient-free-balance', 'bond of 5 exceeds the free balance of 1'), 402, 'insufficient-balance'],
    ['/unbond', new LedgerRuleError('unbond-exceeds-bond', 'unbond of 5 exceeds the bond of 1'), 409, 'bond-conflict'],
    ['/bond', new MempoolError('duplicate', 'already pooled'), 409, 'transaction-conflict'],
    ['/unbond', new MempoolError('full', 'the pool holds 20000 transactions'), 503, 'pool-full'],
  ];
  for (const [path, error, status, code] of cases) {
    node.ledger.stakeError = error;
    const body = await problem(await api(post(path, { amount: '5' })), status);
    assert.equal(body.type, `/problems/${code}`, path);
    assert.equal(body.rule, (error as LedgerRuleError).code);
  }
});

test('api: bodies must be JSON (415), within the byte bound (413), and well-formed (400)', async () => {
  const { api, node } = setup({ maxBodyBytes: 256 });
  const good = JSON.stringify({ to: BOB, amount: '5' });
  for (const type of [null, 'text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', 'application/json; charset=latin1']) {
    const headers: Record<string, string> = { ...AUTH, ...(type === null ? {} : { 'content-type': type }) };
    assert.equal((await problem(await api(post('/transfer', good, headers)), 415)).type, '/problems/unsupported-media-type', String(type));
  }
  // Declared too long: refused before a byte is read.
  let pulled = 0;
  const declared = new ReadableStream<Uint8Array>({
    pull(controller): void {
      pulled++;
      controller.enqueue(new Uint8Array(100));
    },
  });
  const tooLong = await api(request('/transfer', { method: 'POST', headers: { ...JSON_POST, 'content-length': '1000' }, body: declared }));
  const body = await problem(tooLong, 413);
  assert.equal(body.limit_bytes, 256);
  assert.isAtMost(pulled, 1, 'the body was not read');
  await declared.cancel().catch(() => {});
  // No Content-Length: counted while streaming, cut off as soon as it passes the bound.
  let sent = 0;
  let cancelled = false;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller): void {
      sent++;
      controller.enqueue(new TextEncoder().encode(' '.repeat(100)));
    },
    cancel(): void {
      cancelled = true;
    },
  });
  await problem(await api(request('/transfer', { method: 'POST', headers: JSON_POST, body: endless })), 413);
  assert.isTrue(cancelled, 'the rest of the body is refused');
  assert.isBelow(sent, 10);
  // Bad Content-Length values.
  await problem(await api(request('/transfer', { method: 'POST', headers: { ...JSON_POST, 'content-length': '-1' }, body: good })), 413);
  // Malformed.
  for (const text of ['{', '', '{"to":', 'nul']) {
    assert.equal((await problem(await api(post('/transfer', text)), 400)).type, '/problems/invalid-body', text);
  }
  await problem(await api(request('/transfer', { method: 'POST', headers: JSON_POST, body: Uint8Array.of(0x7b, 0xff, 0x7d) })), 400);
  assert.deepEqual(node.ledger.transfers, []);
});

// ---------------------------------------------------------------------------------------------
// POST /signals/send

test('api: POST /signals/send answers 202 {id, nonce} and passes the decoded request', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(post('/signals/send', { to: 'broadcast', capabilities: [{ name: 'cpu', version: 8 }] })), 202), {
    id: SIGNAL_ID,
    nonce: 4,
  });
  await ok(await api(post('/signals/send', { to: BOB, payload_hex: '00ff', burn_tx_id_hex: TX_ID, capabilities: [] })), 202);
  await ok(await api(post('/signals/send', { to: 'broadcast', payload_hex: '' })), 202);
  const [first, second, third] = node.signals.signalsSent;
  assert.equal(first?.to, 'broadcast');
  assert.deepEqual(first?.payload, new Uint8Array(0));
  assert.deepEqual(first?.capabilities, [{ name: 'cpu', version: 8 }]);
  assert.isNull(first?.burnTxId);
  assert.deepEqual(
    second?.to,
    Uint8Array.from({ length: 32 }, () => 0xb2),
  );
  assert.deepEqual(second?.payload, Uint8Array.of(0, 255));
  assert.equal(toHex(second!.burnTxId!), TX_ID);
  assert.deepEqual(third?.capabilities, []);
});

test('api: POST /signals/send refuses malformed signals with 400 and oversized payloads with 413', async () => {
  const { api, node } = setup();
  const caps = (n: number): { name: string; version: number }[] => Array.from({ length: n }, (_, i) => ({ name: `c${i}`, version: 1 }));
  const bodies: unknown[] = [
    {},
    { to: 'everyone' },
    { to: BOB.toUpperCase() },
    { to: BOB.slice(1) },
    { to: 'broadcast', payload_hex: '0' },
    { to: 'broadcast', payload_hex: 'ABCD', burn_tx_id_hex: TX_ID },
    { to: 'broadcast', payload_hex: 'zz', burn_tx_id_hex: TX_ID },
    { to: 'broadcast', payload_hex: '00' },
    { to: 'broadcast', payload_hex: '00', burn_tx_id_hex: 'ab' },
    { to: 'broadcast', capabilities: caps(65) },
    { to: 'broadcast', capabilities: [{ name: '', version: 1 }] },
    { to: 'broadcast', capabilities: [{ name: 'x'.repeat(65), version: 1 }] },
    { to: 'broadcast', capabilities: [{ name: 'é'.repeat(33), version: 1 }] },
    { to: 'broadcast', capabilities: [{ name: 'bad\nname', version: 1 }] },
    // No UTF-8 form: the signal codec could not write it.
    { to: 'broadcast', capabilities: [{ name: 'cpu\ud800', version: 1 }] },
    { to: 'broadcast', capabilities: [{ name: 'cpu', version: -1 }] },
    { to: 'broadcast', capabilities: [{ name: 'cpu', version: 1.5 }] },
    { to: 'broadcast', capabilities: [{ name: 'cpu', version: 2 ** 32 }] },
    { to: 'broadcast', capabilities: [{ name: 'cpu', version: '1' }] },
    { to: 'broadcast', capabilities: [{ name: 'cpu' }] },
    { to: 'broadcast', capabilities: [{ name: 'cpu', version: 1, extra: 1 }] },
    {
      to: 'broadcast',
      capabilities: [
        { name: 'cpu', version: 1 },
        { name: 'cpu', version: 2 },
      ],
    },
    { to: 'broadcast', capabilities: { name: 'cpu', version: 1 } },
    { to: 'broadcast', nonce: 5 },
  ];
  for (const body of bodies) {
    const response = await api(post('/signals/send', body));
    assert.equal((await problem(response, 400)).type, '/problems/invalid-body', JSON.stringify(body).slice(0, 120));
  }
  // At the bounds: 64 capabilities, a 64-byte name, version 2^32 - 1, a 16 KiB payload.
  await ok(await api(post('/signals/send', { to: 'broadcast', capabilities: caps(64) })), 202);
  await ok(await api(post('/signals/send', { to: 'broadcast', capabilities: [{ name: 'x'.repeat(64), version: 2 ** 32 - 1 }] })), 202);
  await ok(await api(post('/signals/send', { to: 'broadcast', payload_hex: '00'.repeat(16 * 1024), burn_tx_id_hex: TX_ID })), 202);
  const over = await problem(await api(post('/signals/send', { to: 'broadcast', payload_hex: '00'.repeat(16 * 1024 + 1), burn_tx_id_hex: TX_ID })), 413);
  assert.equal(over.limit_bytes, 16 * 1024);
  assert.equal(node.signals.signalsSent.length, 3);
});

test('api: POST /signals/send maps SignalError: burn-used 409, other rules 400', async () => {
  const { api, node } = setup();
  const cases: [SignalError, number][] = [
    [new SignalError('burn-used', 'this burn already backed a signal'), 409],
    [new SignalError('burn-not-sender', 'the burn was paid by someone else'), 400],
    [new SignalError('burn-not-found', 'no such transaction'), 400],
    [new SignalError('burn-proof-required', 'a payload needs a burn'), 400],
  ];
  for (const [error, status] of cases) {
    node.signals.signalError = error;
    const body = await problem(await api(post('/signals/send', { to: 'broadcast', payload_hex: '01', burn_tx_id_hex: TX_ID })), status);
    assert.equal(body.rule, error.code);
  }
});

// ---------------------------------------------------------------------------------------------
// Server-Sent Events

test('api: the three SSE streams frame each event as one data: line of JSON after its id', async () => {
  const { api, node } = setup();
  const tx: TxStreamEvent = { id: TX_ID, origin: BOB, kind: 'Transfer', amount: '10' };
  const streams: [string, () => void, string, () => number][] = [
    [
      '/blocks/stream',
      () => [...node.ledger.blockListeners].forEach((l) => l(BLOCK)),
      `id: 8\ndata: ${JSON.stringify(BLOCK)}\n\n`,
      () => node.ledger.blockListeners.size,
    ],
    [
      '/transactions/stream',
      () => [...node.ledger.txListeners].forEach((l) => l({ kind: 'tx', seq: 1_700_000_000_456, event: tx })),
      `id: 1700000000456\ndata: ${JSON.stringify(tx)}\n\n`,
      () => node.ledger.txListeners.size,
    ],
    [
      '/signals/stream',
      () => [...node.signals.signalListeners].forEach((l) => l({ seq: 1_700_000_000_123, signal: SIGNAL })),
      `id: 1700000000123\ndata: ${JSON.stringify(SIGNAL)}\n\n`,
      () => node.signals.signalListeners.size,
    ],
  ];
  for (const [path, emit, frame, listeners] of streams) {
    const response = await api(request(path));
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/event-stream');
    assert.equal(response.headers.get('cache-control'), 'no-cache');
    assert.equal(listeners(), 1, `${path} subscribed`);
    const reader = response.body!.getReader();
    emit();
    emit();
    const text = await readUntil(reader, '\n\n', 2);
    assert.equal(text, frame + frame);
    await reader.cancel();
    assert.equal(listeners(), 0, `${path} unsubscribed on cancel`);
  }
});

test('api: /blocks/stream starts at min_height, or after the Last-Event-ID a reconnecting client sends (which wins); live by default', async () => {
  const { api, node } = setup();
  for (const [path, headers, from] of [
    ['/blocks/stream', {}, null],
    ['/blocks/stream?min_height=0', {}, 0],
    ['/blocks/stream?min_height=42', {}, 42],
    ['/blocks/stream', { 'last-event-id': '9' }, 10],
    ['/blocks/stream?min_height=3', { 'last-event-id': '9' }, 10],
    ['/blocks/stream?min_height=3', { 'last-event-id': '' }, 3],
  ] as const) {
    const response = await api(request(path, { headers }));
    assert.equal(response.status, 200, path);
    await response.body!.cancel();
    assert.equal(node.ledger.blockFollows.at(-1), from, `${path} ${JSON.stringify(headers)}`);
  }
  for (const [path, headers, name] of [
    ['/blocks/stream?min_height=-1', {}, 'min_height'],
    ['/blocks/stream?min_height=01', {}, 'min_height'],
    ['/blocks/stream?min_height=1.5', {}, 'min_height'],
    ['/blocks/stream?min_height=', {}, 'min_height'],
    ['/blocks/stream?min_height=9007199254740993', {}, 'min_height'],
    ['/blocks/stream?min_height=1&min_height=2', {}, 'min_height'],
    ['/blocks/stream', { 'last-event-id': 'abc' }, 'Last-Event-ID'],
    ['/blocks/stream?min_height=x', { 'last-event-id': '4' }, 'min_height'],
    ['/blocks/stream?from=3', {}, 'from'],
  ] as const) {
    const body = await problem(await api(request(path, { headers })), 400);
    assert.equal((body.errors as { name: string }[])[0]!.name, name, path);
  }
  assert.equal(node.ledger.blockFollows.length, 6, 'a refused stream asks the node nothing');
});

test('api: the signal routes filter by sender and addressee; /signals/stream resumes after its Last-Event-ID', async () => {
  const { api, node } = setup();
  const response = await api(request(`/signals/stream?from=${BOB}&to=broadcast`, { headers: { 'last-event-id': '1700000000123' } }));
  assert.equal(response.status, 200);
  await response.body!.cancel();
  assert.deepEqual(node.signals.signalFollows.at(-1), { after: 1_700_000_000_123, filter: { from: BOB, to: 'broadcast' } });
  await (await api(request(`/signals/stream?to=${SELF}`))).body!.cancel();
  assert.deepEqual(node.signals.signalFollows.at(-1), { after: null, filter: { from: null, to: SELF } });
  assert.deepEqual(await ok(await api(request(`/signals?from=${BOB}`))), [SIGNAL]);
  assert.deepEqual(node.signals.signalLists.at(-1), { from: BOB, to: null });
  for (const [path, name] of [
    [`/signals/stream?from=${BOB.toUpperCase()}`, 'from'],
    ['/signals/stream?from=broadcast', 'from'],
    ['/signals/stream?to=abc', 'to'],
    [`/signals/stream?to=${SELF}&to=${BOB}`, 'to'],
    ['/signals/stream?min_height=1', 'min_height'],
    [`/signals?to=${BOB}0`, 'to'],
  ] as const) {
    const body = await problem(await api(request(path)), 400);
    assert.equal((body.errors as { name: string }[])[0]!.name, name, path);
  }
  await problem(await api(request('/signals/stream', { headers: { 'last-event-id': '-1' } })), 400);
  assert.equal(node.signals.signalFollows.length, 2);
});

test('api: /transactions/stream resumes after its Last-Event-ID, says first when events were missed, refuses a bad id', async () => {
  const { api, node } = setup();
  const tx: TxStreamEvent = { id: TX_ID, origin: BOB, kind: 'Transfer', amount: '10' };
  const response = await api(request('/transactions/stream', { headers: { 'last-event-id': '1700000000100' } }));
  assert.equal(response.status, 200);
  assert.deepEqual(node.ledger.txFollows, [1_700_000_000_100]);
  const reader = response.body!.getReader();
  [...node.ledger.txListeners].forEach((l) => l({ kind: 'missed', after: 1_700_000_000_100, first_held: 1_700_000_000_200 }));
  [...node.ledger.txListeners].forEach((l) => l({ kind: 'tx', seq: 1_700_000_000_200, event: tx }));
  // The notice is a typed event without an id, so an EventSource's lastEventId stays what it resumed after.
  assert.equal(
    await readUntil(reader, '\n\n', 2),
    `event: missed\ndata: {"after":1700000000100,"first_held":1700000000200}\n\nid: 1700000000200\ndata: ${JSON.stringify(tx)}\n\n`,
  );
  await reader.cancel();
  assert.equal(node.ledger.txListeners.size, 0);
  for (const [headers, after] of [
    [{}, null],
    [{ 'last-event-id': '' }, null],
    [{ 'last-event-id': '0' }, 0],
  ] as const) {
    await (await api(request('/transactions/stream', { headers }))).body!.cancel();
    assert.equal(node.ledger.txFollows.at(-1), after, JSON.stringify(headers));
  }
  for (const id of ['-1', 'abc', '1.5', '01', '9007199254740993']) {
    const body = await problem(await api(request('/transactions/stream', { headers: { 'last-event-id': id } })), 400);
    assert.equal((body.errors as { name: string }[])[0]!.name, 'Last-Event-ID', id);
  }
  assert.equal(node.ledger.txFollows.length, 4, 'a refused stream asks the node nothing');
});

test('api: GET /peers lists the connected peers', async () => {
  const { api } = setup();
  assert.deepEqual(await ok(await api(request('/peers'))), { peers: PEERS });
  await problem(await api(request('/peers?x=1')), 400);
});

test('api: GET /traffic gives the bytes sent by kind; it takes no parameter and no other method', async () => {
  const { api } = setup();
  assert.deepEqual(await ok(await api(request('/traffic'))), { sent: TRAFFIC });
  assert.equal((await problem(await api(request('/traffic?kind=ping')), 400)).type, '/problems/unknown-parameter');
  assert.equal((await problem(await api(post('/traffic', {})), 405)).type, '/problems/method-not-allowed');
});

test('api: GET /netgraph shows the graph, GET /netgraph/rtt the measured or predicted RTT', async () => {
  const { api } = setup();
  assert.deepEqual(await ok(await api(request('/netgraph'))), NETGRAPH);
  assert.deepEqual(await ok(await api(request(`/netgraph/rtt?to=${BOB}`))), RTT_TO_BOB);
  assert.deepEqual(await ok(await api(request(`/netgraph/rtt?to=${FAR}`))), RTT_TO_FAR);
  const unknown = await problem(await api(request(`/netgraph/rtt?to=${'5d'.repeat(32)}`)), 404);
  assert.equal(unknown.type, '/problems/unknown-rtt');
  for (const path of [
    '/netgraph/rtt',
    `/netgraph/rtt?to=${BOB.slice(2)}`,
    '/netgraph/rtt?to=xyz',
    `/netgraph/rtt?to=${SELF}`,
    `/netgraph/rtt?to=${BOB}&x=1`,
    '/netgraph?x=1',
  ]) {
    await problem(await api(request(path)), 400);
  }
});

test('api: an idle SSE stream gets a keep-alive comment every keepAliveMs', async () => {
  const { api, node } = setup({ keepAliveMs: 20 });
  const response = await api(request('/blocks/stream'));
  const reader = response.body!.getReader();
  const started = Date.now();
  const text = await readUntil(reader, ': keep-alive\n\n', 2);
  assert.equal(text, ': keep-alive\n\n: keep-alive\n\n');
  assert.isAtLeast(Date.now() - started, 30);
  // An event resets the idle time; the next comment follows it.
  [...node.ledger.blockListeners].forEach((l) => l(BLOCK));
  const after = await readUntil(reader, '\n\n', 2);
  assert.equal(after, `id: 8\ndata: ${JSON.stringify(BLOCK)}\n\n: keep-alive\n\n`);
  await reader.cancel();
  assert.equal(node.ledger.blockListeners.size, 0);
});

test('api: an SSE stream unsubscribes when its request is aborted', async () => {
  const { api, node } = setup();
  const abort = new AbortController();
  const response = await api(request('/transactions/stream', { signal: abort.signal }));
  assert.equal(node.ledger.txListeners.size, 1);
  abort.abort();
  assert.equal(node.ledger.txListeners.size, 0);
  const reader = response.body!.getReader();
  assert.isTrue((await reader.read()).done);
});

test('api: a client that reads nothing is cut off after maxQueuedEvents, not buffered without bound', async () => {
  const { api, node } = setup({ maxQueuedEvents: 3 });
  const response = await api(request('/signals/stream'));
  for (let i = 0; i < 10; i++) [...node.signals.signalListeners].forEach((l) => l({ seq: i + 1, signal: { ...SIGNAL, nonce: i } }));
  assert.equal(node.signals.signalListeners.size, 0, 'unsubscribed at the overflow');
  const text = await new Response(response.body).text();
  const frames = text.split('\n\n').filter((f) => f !== '');
  assert.equal(frames.length, 4);
  assert.deepEqual(
    frames.slice(0, 3).map((f) => (JSON.parse(f.split('data: ')[1]!) as SignalObject).nonce),
    [0, 1, 2],
  );
  assert.match(frames[3]!, /^: closed/);
});

test('api: SSE routes take only their query parameters', async () => {
  const { api, node } = setup();
  await problem(await api(request('/blocks/stream?since=5')), 400);
  await problem(await api(request('/transactions/stream?min_height=5')), 400);
  assert.equal(node.ledger.blockListeners.size, 0);
  assert.equal(node.ledger.txListeners.size, 0);
});

test('api: createNodeApi refuses an empty token and bad limits', () => {
  const node = new FakeNode();
  assert.throws(() => createNodeApi({ services: node.services, token: '' }), RangeError);
  assert.throws(() => createNodeApi({ services: node.services, token: TOKEN, keepAliveMs: 0 }), RangeError);
  assert.throws(() => createNodeApi({ services: node.services, token: TOKEN, maxBodyBytes: -1 }), RangeError);
});
