// The operator page's paths on the node's HTTP port, in-process: served with the wallet's headers
// to this machine only; refused to other hosts, other clients and other origins; every other path
// goes to the API untouched.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withOperatorPage } from './operator-site.ts';
import { WALLET_HEADERS } from './wallet-site.ts';

const handler = withOperatorPage(async (request) => new Response(`api ${new URL(request.url).pathname}`));
const local = { remoteAddress: '127.0.0.1' };

test('withOperatorPage: the page and its bundle on loopback, with the wallet headers; 405, 404; the API behind it', async () => {
  const get = (path: string, init?: RequestInit, client = local): Promise<Response> => handler(new Request(`http://127.0.0.1:8844${path}`, init), client);

  const page = await get('/node');
  assert.equal(page.status, 200);
  for (const [name, value] of Object.entries(WALLET_HEADERS)) assert.equal(page.headers.get(name), value, name);
  assert.match(page.headers.get('content-security-policy')!, /script-src 'self' 'wasm-unsafe-eval'; .*frame-ancestors 'none'/);
  assert.match(page.headers.get('content-type')!, /^text\/html/);
  assert.match(await page.text(), /<script type="module" src="\/node\/app.js">/);

  const bundle = await get('/node/app.js');
  assert.equal(bundle.status, 200);
  assert.match(bundle.headers.get('content-type')!, /^text\/javascript/);
  assert.equal(bundle.headers.get('content-security-policy'), WALLET_HEADERS['content-security-policy']);
  assert.match(await bundle.text(), /blocks\/stream/);

  const style = await get('/node/page.css');
  assert.equal(style.status, 200);
  assert.match(style.headers.get('content-type')!, /^text\/css/);
  assert.match(await style.text(), /:focus-visible/);

  // The same page on the other loopback spellings, and from an IPv4-mapped or IPv6 loopback client.
  for (const [origin, client] of [
    ['http://localhost:8844', { remoteAddress: '::1' }],
    ['http://[::1]:8844', { remoteAddress: '::1' }],
    ['http://127.0.0.2:8844', { remoteAddress: '::ffff:127.0.0.1' }],
  ] as const) {
    assert.equal((await handler(new Request(`${origin}/node`), client)).status, 200, origin);
  }
  // The page's own origin may fetch it (a module script's request may carry Origin).
  assert.equal((await get('/node/app.js', { headers: { origin: 'http://127.0.0.1:8844' } })).status, 200);

  const post = await get('/node', { method: 'POST', body: '{}', headers: { origin: 'http://127.0.0.1:8844' } });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
  assert.equal((await post.json()).type, '/problems/method-not-allowed');
  const missing = await get('/node/token');
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).type, '/problems/not-found');

  assert.equal(await (await get('/status')).text(), 'api /status');
  assert.equal(await (await get('/nodes')).text(), 'api /nodes');
});

test('withOperatorPage: refused to a non-loopback Host, to another machine, and to another origin', async () => {
  // DNS rebinding (a name pointed at 127.0.0.1) and the node's LAN address: 403 on every path.
  for (const origin of ['http://attacker.example:8844', 'http://localhost.attacker.example:8844', 'http://10.0.0.2:8844', 'http://127.0.0.1.nip.io:8844']) {
    for (const path of ['/node', '/node/app.js', '/node/page.css']) {
      const refused = await handler(new Request(`${origin}${path}`), local);
      assert.equal(refused.status, 403, `${origin}${path}`);
      assert.equal(refused.headers.get('content-type'), 'application/problem+json');
      assert.equal((await refused.json()).type, '/problems/loopback-only');
    }
  }
  // A client on another machine, even one that names a loopback Host.
  for (const remoteAddress of ['10.0.0.5', '::ffff:10.0.0.5', 'fe80::1', undefined]) {
    const refused = await handler(new Request('http://127.0.0.1:8844/node'), { remoteAddress });
    assert.equal(refused.status, 403, String(remoteAddress));
    assert.equal((await refused.json()).type, '/problems/loopback-only');
  }
  // A page of another origin, another loopback port and a sandboxed page included.
  for (const origin of ['http://evil.example', 'http://127.0.0.1:9999', 'null']) {
    const refused = await handler(new Request('http://127.0.0.1:8844/node/app.js', { headers: { origin } }), local);
    assert.equal(refused.status, 403, origin);
    assert.equal((await refused.json()).type, '/problems/cross-origin');
  }
});
