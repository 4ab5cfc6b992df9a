/**
 * `mesh tunnel` in-process against the node's real HTTP API (createNodeApi served by serveFetch)
 * over the fake node: what each command sends, prints and exits with.
 */

import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { FakeNode } from '../../core/api/fake-node.test-util.ts';
import { createNodeApi } from '../../core/api/handler.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { type HttpServer, serveFetch } from '../http-server.ts';
import { runCommand } from './run.ts';
import { tunnelCommand } from './tunnel.ts';

const TOKEN = 'tunnel-test-token';
const A = 'ab'.repeat(32);
const B = 'cd'.repeat(32);
const node = new FakeNode();
let server: HttpServer;
let common: string[];

before(async () => {
  server = await serveFetch(createNodeApi({ services: node.services, token: TOKEN }), '127.0.0.1', 0);
  const dir = await mkdtemp(join(tmpdir(), 'mesh-tunnel-'));
  await writeFile(join(dir, 'token'), `${TOKEN}\n`);
  common = ['--node', server.url, '--token-file', join(dir, 'token'), '--data-dir', dir];
});
after(() => server.close());

async function mesh(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCommand(tunnelCommand, [...args, ...common], 'mesh tunnel', { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

test('mesh tunnel listen, forward, ls and close: what each sends and prints', async () => {
  const listen = await mesh(['listen', 'web', '127.0.0.1:8080', '--allow', A, '--allow', B]);
  assert.equal(listen.code, 0, listen.err);
  assert.equal(listen.out, '0000000000000001\n');
  assert.match(listen.err, /^tunnel 0000000000000001: web → 127\.0\.0\.1:8080 for 2 nodes\n$/);
  const sent = node.tunnels.tunnelCalls[0]!;
  assert.deepEqual(sent.kind === 'listen' ? [sent.protocol, sent.target, sent.allow.map(toHex)] : null, ['web', { host: '127.0.0.1', port: 8080 }, [A, B]]);

  const forward = await mesh(['forward', B, 'web']);
  assert.equal(forward.code, 0, forward.err);
  assert.equal(forward.out, '127.0.0.1:40000\n', 'the address, for scripts');
  assert.match(forward.err, /→ web on cdcdcdcdcdcdcdcd…/);
  const bound = await mesh(['forward', B, 'ssh', '--bind', '[::1]:2222', '--json']);
  assert.equal(JSON.parse(bound.out).address, '[::1]:2222');
  assert.deepEqual(
    node.tunnels.tunnelCalls.slice(1).map((r) => (r.kind === 'forward' ? r.bind : null)),
    [
      { host: '127.0.0.1', port: 0 },
      { host: '::1', port: 2222 },
    ],
  );

  const ls = await mesh(['ls']);
  assert.equal(ls.code, 0, ls.err);
  const lines = ls.out.trimEnd().split('\n');
  assert.match(lines[0]!, /^ID +KIND +PROTOCOL +LOCAL +PEERS +OPEN +CARRIED +REFUSED$/);
  assert.match(lines[1]!, /^0000000000000001 +listen +web +→ 127\.0\.0\.1:8080 +2 nodes +0 +0 +0$/);
  assert.match(lines[2]!, /^0000000000000002 +forward +web +127\.0\.0\.1:40000 +cdcdcdcdcdcdcdcd… +0 +0 +0$/);
  assert.equal(JSON.parse((await mesh(['ls', '--json'])).out).length, 3);

  const close = await mesh(['close', '0000000000000002']);
  assert.equal(close.code, 0, close.err);
  assert.equal(close.err, 'closed tunnel 0000000000000002\n');
  const again = await mesh(['close', '0000000000000002']);
  assert.equal(again.code, 1);
  assert.match(again.err, /Unknown tunnel \(404\): this node has no tunnel 0000000000000002/);
});

test('mesh tunnel close takes the start of an id; a prefix of several is exit 1 and closes nothing', async () => {
  node.tunnels.tunnels.clear();
  for (const protocol of ['a', 'b']) assert.equal((await mesh(['listen', protocol, '127.0.0.1:80', '--allow', A])).code, 0);
  // Ids that part after a few characters, as real (random) ones do.
  const views = [...node.tunnels.tunnels.values()];
  node.tunnels.tunnels.clear();
  for (const [i, id] of ['e621000000000001', 'e699000000000002'].entries()) node.tunnels.tunnels.set(id, { ...views[i]!, id });
  const several = await mesh(['close', 'e6']);
  assert.deepEqual(
    [several.code, several.err],
    [1, 'mesh tunnel close: 2 tunnels have ids starting with e6 (e621000000000001, e699000000000002): give more of the id\n'],
  );
  assert.equal(node.tunnels.tunnels.size, 2, 'nothing closed');
  const closed = await mesh(['close', 'e621']);
  assert.deepEqual([closed.code, closed.err], [0, 'closed tunnel e621000000000001\n']);
  assert.deepEqual([...node.tunnels.tunnels.keys()], ['e699000000000002']);
  const none = await mesh(['close', 'e621']);
  assert.deepEqual([none.code, none.err], [1, 'mesh tunnel close: no tunnel whose id starts with e621\n']);
});

test('mesh tunnel refuses bad input before asking the node (exit 2)', async () => {
  const before = node.tunnels.tunnelCalls.length;
  const cases: [string[], RegExp][] = [
    [['listen', 'web', '127.0.0.1:8080'], /at least one --allow/],
    [['listen', 'Web', '127.0.0.1:8080', '--allow', A], /<protocol> must be 1 to 64/],
    [['listen', 'web', '10.0.0.1:8080', '--allow', A], /<target> must be on the loopback interface/],
    [['listen', 'web', '127.0.0.1:0', '--allow', A], /<target> must have a port from 1 to 65535/],
    [['listen', 'web', '127.0.0.1:8080', '--allow', 'AB'.repeat(32)], /--allow must be a node id/],
    [['forward', 'xyz', 'web'], /<node-id> must be a node id/],
    [['forward', A, 'web', '--bind', '0.0.0.0:80'], /--bind must be on the loopback interface/],
    [['forward', A, 'web', '--bind', '127.0.0.1:99999'], /--bind must have a port from 0 to 65535/],
    [['close', '0'.repeat(17)], /<id> must be a tunnel id \(16 lowercase hex characters\) or its first characters/],
  ];
  for (const [args, message] of cases) {
    const run = await mesh(args);
    assert.equal(run.code, 2, args.join(' '));
    assert.match(run.err, message);
  }
  assert.equal(node.tunnels.tunnelCalls.length, before);
});
