// The /tunnel routes in-process, over the fake node: what reaches the service, the 400s that never
// do, and how the service's refusals are answered. Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../../test/harness.ts';
import { toHex } from '../../encoding/hex.ts';
import { InvalidNameError } from '../../net/errors.ts';
import { TunnelError } from '../../tunnel/errors.ts';
import type { TunnelView } from '../../tunnel/types.ts';
import { AUTH, BAD_IDS, ok, post, problem, request, setup } from '../api.test-util.ts';

const NODE = 'ab'.repeat(32);
const OTHER = 'cd'.repeat(32);
const LISTEN = { listen: { protocol: 'web', target: '127.0.0.1:8080', allow: [NODE, OTHER] } };
const FORWARD = { forward: { protocol: 'web', node: NODE, bind: '127.0.0.1:0' } };

test('tunnel: POST /tunnel opens a listener or a forward and answers 201 with it; GET lists and shows them; DELETE closes one', async () => {
  const { api, node } = setup();
  const listener = await ok<TunnelView>(await api(post('/tunnel', LISTEN)), 201);
  assert.deepInclude(listener, { kind: 'listen', protocol: 'web', target: '127.0.0.1:8080', allow: [NODE, OTHER], connections: 0 });
  const forward = await ok<TunnelView>(await api(post('/tunnel', { forward: { protocol: 'ssh.v2', node: OTHER } })), 201);
  assert.deepInclude(forward, { kind: 'forward', protocol: 'ssh.v2', node: OTHER, address: '127.0.0.1:40000' });
  await ok(await api(post('/tunnel', { forward: { protocol: 'x', node: NODE, bind: '[::1]:2222' } })), 201);
  const [l, f, g] = node.tunnels.tunnelCalls;
  assert.equal(l?.kind, 'listen');
  assert.deepEqual(l?.kind === 'listen' ? { target: l.target, allow: l.allow.map(toHex) } : null, {
    target: { host: '127.0.0.1', port: 8080 },
    allow: [NODE, OTHER],
  });
  assert.deepEqual(
    f?.kind === 'forward' ? { node: toHex(f.node), bind: f.bind } : null,
    { node: OTHER, bind: { host: '127.0.0.1', port: 0 } },
    'bind defaults to 127.0.0.1:0',
  );
  assert.deepEqual(g?.kind === 'forward' ? g.bind : null, { host: '::1', port: 2222 });

  const list = await ok<TunnelView[]>(await api(request('/tunnel')));
  assert.deepEqual(
    list.map((t) => t.id),
    [listener.id, forward.id, '0000000000000003'],
  );
  assert.deepEqual(await ok(await api(request(`/tunnel/${forward.id}`))), forward);
  const gone = await api(request(`/tunnel/${listener.id}`, { method: 'DELETE', headers: AUTH }));
  assert.equal(gone.status, 204);
  assert.equal(await gone.text(), '');
  assert.equal((await problem(await api(request(`/tunnel/${listener.id}`)), 404)).type, '/problems/unknown-tunnel');
  await problem(await api(request(`/tunnel/${listener.id}`, { method: 'DELETE', headers: AUTH })), 404);
});

test('tunnel: bad node ids, protocol names, addresses, ports and shapes are 400 and reach nothing', async () => {
  const { api, node } = setup();
  const bodies: [string, unknown][] = [
    ...BAD_IDS.map(([what, id]): [string, unknown] => [`forward.node ${what}`, { forward: { ...FORWARD.forward, node: id } }]),
    ...BAD_IDS.map(([what, id]): [string, unknown] => [`listen.allow ${what}`, { listen: { ...LISTEN.listen, allow: [id] } }]),
    ...['', 'Web', 'a/b', '-x', 'x'.repeat(65), 'sp ace', 'é'].map((p): [string, unknown] => [
      `listen.protocol ${JSON.stringify(p)}`,
      { listen: { ...LISTEN.listen, protocol: p } },
    ]),
    ['forward.protocol missing', { forward: { node: NODE } }],
    ...['10.0.0.5:80', '0.0.0.0:8080', '192.168.1.1:22', 'example.com:80', '[::]:80', '[fe80::1]:80'].map((t): [string, unknown] => [
      `listen.target ${t}`,
      { listen: { ...LISTEN.listen, target: t } },
    ]),
    ...['0.0.0.0:0', '10.1.2.3:9000'].map((b): [string, unknown] => [`forward.bind ${b}`, { forward: { ...FORWARD.forward, bind: b } }]),
    ...['127.0.0.1:0', '127.0.0.1:65536', '127.0.0.1:-1', '127.0.0.1:http', '127.0.0.1', '127.0.0.1:080'].map((t): [string, unknown] => [
      `listen.target port ${t}`,
      { listen: { ...LISTEN.listen, target: t } },
    ]),
    ['forward.bind port', { forward: { ...FORWARD.forward, bind: '127.0.0.1:70000' } }],
    ['an empty allow list', { listen: { ...LISTEN.listen, allow: [] } }],
    ['too long an allow list', { listen: { ...LISTEN.listen, allow: Array.from({ length: 257 }, (_, i) => i.toString(16).padStart(64, '0')) } }],
    ['both', { ...LISTEN, ...FORWARD }],
    ['neither', {}],
    ['an unknown field', { ...FORWARD, extra: 1 }],
    ['an unknown field inside', { forward: { ...FORWARD.forward, port: 1 } }],
    ['a number for a target', { listen: { ...LISTEN.listen, target: 8080 } }],
  ];
  for (const [what, body] of bodies) {
    const answer = await problem(await api(post('/tunnel', body)), 400);
    assert.equal(answer.type, '/problems/invalid-body', what);
  }
  assert.deepEqual(node.tunnels.tunnelCalls, []);
  for (const id of ['1', 'g'.repeat(16), 'AB'.repeat(8), 'ab'.repeat(9)]) {
    assert.equal((await problem(await api(request(`/tunnel/${id}`)), 400)).type, '/problems/invalid-parameter', id);
    await problem(await api(request(`/tunnel/${id}`, { method: 'DELETE', headers: AUTH })), 400);
  }
});

test("tunnel: the service's refusals: 409 for a taken protocol, a limit or a bound port, 400 for itself or a bad name, 503 without sockets", async () => {
  const { api, node } = setup();
  const cases: [unknown, number, string][] = [
    [new TunnelError('protocol-taken', 'this node already listens on web'), 409, 'tunnel-conflict'],
    [new TunnelError('too-many-tunnels', 'at most 64'), 409, 'tunnel-conflict'],
    [new TunnelError('bind-failed', 'cannot listen on 127.0.0.1:8080: EADDRINUSE'), 409, 'tunnel-conflict'],
    [new TunnelError('self', 'a tunnel cannot forward to this node itself'), 400, 'invalid-body'],
    [new InvalidNameError('bad name'), 400, 'invalid-body'],
    [new TunnelError('unavailable', 'no TCP here'), 503, 'tunnel-unavailable'],
  ];
  for (const [error, status, type] of cases) {
    node.tunnels.tunnelError = error;
    const answer = await problem(await api(post('/tunnel', FORWARD)), status);
    assert.equal(answer.type, `/problems/${type}`);
    assert.equal(answer.detail, (error as Error).message);
  }
});

test('tunnel: opening and closing need the token; listing does not', async () => {
  const { api } = setup();
  await problem(await api(post('/tunnel', LISTEN, { 'content-type': 'application/json' })), 401);
  await problem(await api(request('/tunnel/0000000000000001', { method: 'DELETE' })), 401);
  assert.deepEqual(await ok(await api(request('/tunnel'))), []);
});
