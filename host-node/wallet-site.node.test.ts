// The wallet's paths on the node's HTTP port, in-process: the page, its config, and problem
// details for what it does not serve; every other path goes to the API untouched.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { key, mine, openChain } from '../core/chain/testnet.test-util.ts';
import { toHex } from '../core/encoding/hex.ts';
import { CHECKPOINT_DEPTH, CHECKPOINT_EVERY, checkpointHeight, withWallet } from './wallet-site.ts';

const PEER = '12D3KooWLRPJAA5o6X4SyBCe9GYuBQm4FUkRHJuPAmjFCjQbAjTf';
const client = { remoteAddress: '127.0.0.1' };

test('checkpointHeight: a multiple of 100 at least 10 blocks below the tip, never below the base', () => {
  assert.equal(CHECKPOINT_EVERY, 100);
  assert.equal(CHECKPOINT_DEPTH, 10);
  assert.equal(checkpointHeight(0, 0), 0);
  assert.equal(checkpointHeight(109, 0), 0);
  assert.equal(checkpointHeight(110, 0), 100);
  assert.equal(checkpointHeight(10_000, 0), 9_900);
  assert.equal(checkpointHeight(10_009, 0), 9_900);
  assert.equal(checkpointHeight(10_010, 0), 10_000);
  assert.equal(checkpointHeight(500, 450), 450);
});

test('withWallet: the page, its config, 405 and 404 as problem details, and the API behind it', async () => {
  const chain = await openChain();
  await mine(chain, key(1), 115);
  const handler = withWallet(async (request) => new Response(`api ${new URL(request.url).pathname}`), {
    chain,
    peerId: PEER,
    addresses: () => [
      '/ip4/127.0.0.1/tcp/8845',
      '/ip4/127.0.0.1/tcp/8846/ws',
      '/ip4/10.0.0.2/tcp/8846/ws',
      `/ip4/127.0.0.1/tcp/8846/ws/p2p/${PEER}/p2p-circuit`,
    ],
  });
  const get = (path: string, init?: RequestInit): Promise<Response> => handler(new Request(`http://10.0.0.2:8844${path}`, init), client);

  const page = await get('/wallet');
  assert.equal(page.status, 200);
  const csp = page.headers.get('content-security-policy')!;
  for (const rule of [
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval';",
    "connect-src 'self' ws: wss:",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ])
    assert.ok(csp.includes(rule), `${rule} in ${csp}`);
  assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
  assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
  assert.match(page.headers.get('content-type')!, /^text\/html/);
  assert.match(await page.text(), /<script type="module" src="\/wallet\/app.js">/);

  const style = await get('/wallet/page.css');
  assert.equal(style.status, 200);
  assert.match(style.headers.get('content-type')!, /^text\/css/);
  assert.ok(style.headers.get('content-security-policy'));

  const config = await get('/wallet/config.json');
  assert.equal(config.status, 200);
  assert.equal(config.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(config.headers.get('referrer-policy'), 'no-referrer');
  assert.ok(config.headers.get('content-security-policy'));
  assert.deepEqual(await config.json(), {
    network: chain.params.network,
    block_interval_ms: chain.params.blockIntervalMs,
    checkpoint: { height: 100, hash: toHex((await chain.hashAt(100))!) },
    // The address on the host the page came from first; no relayed address.
    hosts: [`/ip4/10.0.0.2/tcp/8846/ws/p2p/${PEER}`, `/ip4/127.0.0.1/tcp/8846/ws/p2p/${PEER}`],
  });

  const post = await get('/wallet/config.json', { method: 'POST', body: '{}' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('content-type'), 'application/problem+json');
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
  assert.equal((await post.json()).type, '/problems/method-not-allowed');

  const missing = await get('/wallet/../../etc/passwd');
  assert.equal(missing.status, 200, "the URL parser resolves dot segments before routing: this is /etc/passwd, the API's to answer");
  assert.equal(await missing.text(), 'api /etc/passwd');
  const unknown = await get('/wallet/other.js');
  assert.equal(unknown.status, 404);
  assert.equal((await unknown.json()).type, '/problems/not-found');

  // DNS rebinding: a name other than localhost or an IP address gets the API's 403, on every wallet path.
  for (const path of ['/wallet', '/wallet/app.js', '/wallet/page.css', '/wallet/config.json']) {
    const rebound = await handler(new Request(`http://attacker.example:8844${path}`), client);
    assert.equal(rebound.status, 403, path);
    assert.equal((await rebound.json()).type, '/problems/host-not-allowed');
  }
  assert.equal((await handler(new Request('http://localhost:8844/wallet'), client)).status, 200);

  assert.equal(await (await get('/status')).text(), 'api /status');
  assert.equal(await (await get('/walletx')).text(), 'api /walletx');
});
