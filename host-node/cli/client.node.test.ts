/**
 * `mesh status` and `mesh send` as real processes against a real devnet node: how they find the
 * node (its api.json and api.token), what they print, and each way they fail.
 */

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { stat, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { getJson, type MeshProcess, startNode, stopAll, stopNode, tempDataDir, waitFor } from '../../test/mesh-process.ts';
import { openDataDir, readApiAddress, writeApiAddress } from '../data-dir.ts';
import { NodeClient } from './client.ts';

const MESH = new URL('../../bin/mesh.js', import.meta.url).pathname;
const OTHER = 'cd'.repeat(32);

function mesh(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MESH, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

let node: MeshProcess;
before(async () => {
  node = await startNode({ mine: true, blockIntervalMs: 200 });
  await waitFor('a few blocks', async () => (await getJson<{ height: number }>(node, '/status')).height >= 3);
});
after(stopAll);

test('a running node records its HTTP address and pid in api.json, mode 0600', async () => {
  const record = await readApiAddress(node.dataDir);
  assert.deepEqual(record, { url: node.url, pid: node.child.pid });
  assert.equal((await stat(join(node.dataDir, 'api.json'))).mode & 0o777, 0o600);
});

test('mesh status prints the node id, height and balances in credits; --json the answer as sent', async () => {
  const shown = await mesh(['status', '--data-dir', node.dataDir]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(`^node id +${node.nodeId}$`, 'm'));
  assert.match(shown.stdout, /^height +\d+$/m);
  // Every block pays its producer 1000 credits on the devnet.
  assert.match(shown.stdout, /^balance +\d+000 credits$/m);
  assert.match(shown.stdout, /^ {2}free +\d+(\.\d+)? credits$/m);
  const json = await mesh(['status', '--json', '--data-dir', node.dataDir]);
  assert.equal(json.code, 0, json.stderr);
  const status = JSON.parse(json.stdout) as { node_id: string; balance: string };
  assert.equal(status.node_id, node.nodeId);
  assert.match(status.balance, /^\d+000000000000000000000$/);
});

test('--node names the node directly', async () => {
  const empty = await tempDataDir();
  const shown = await mesh(['status', '--node', node.url, '--data-dir', empty]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(node.nodeId));
  const bad = await mesh(['status', '--node', 'ftp://x']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^mesh status: --node takes an http:\/\/ or https:\/\/ URL/);
});

test('mesh send pays credits given as a decimal and prints the transaction id', async () => {
  const sent = await mesh(['send', OTHER, '1.5', '--data-dir', node.dataDir]);
  assert.equal(sent.code, 0, sent.stderr);
  const txId = sent.stdout.trim();
  assert.match(txId, /^[0-9a-f]{64}$/);
  assert.match(sent.stderr, new RegExp(`sent 1.5 credits to ${OTHER}`));
  const received = await waitFor('the transfer in a block', async () =>
    (await getJson<{ tx_id: string; amount: string; direction: string }[]>(node, `/transactions/${OTHER}`)).find((t) => t.tx_id === txId),
  );
  assert.deepEqual([received.amount, received.direction], ['1500000000000000000', 'in']);
});

test('mesh send refuses a bad node id, name or amount with exit 2, before asking the node', async () => {
  const cases: [string[], RegExp][] = [
    [['send', 'AB'.repeat(32), '1'], /<to> must be a node id \(64 lowercase hex characters\) or a name \(1 to 32 characters of a-z, 0-9 and hyphen\)/],
    [['send', 'Ab', '1'], /<to> must be a node id/],
    [['send', 'a'.repeat(33), '1'], /<to> must be a node id/],
    [['send', OTHER, '1e3'], /<credits> "1e3" has an exponent/],
    [['send', OTHER, '-1'], /<credits> "-1" has a sign/],
    [['send', OTHER, '-1.5'], /<credits> "-1\.5" has a sign/],
    [['send', OTHER, '0.0000000000000000001'], /more than 18 decimal places/],
    [['send', OTHER, '0'], /<credits> must be more than 0/],
    [['send', OTHER], /missing <credits>/],
  ];
  for (const [args, message] of cases) {
    const refused = await mesh([...args, '--data-dir', node.dataDir]);
    assert.equal(refused.code, 2, args.join(' '));
    assert.match(refused.stderr, /^mesh send: /, args.join(' '));
    assert.match(refused.stderr, message, args.join(' '));
    assert.match(refused.stderr, /^Usage: mesh send <to> <credits> \[options\]$/m);
  }
});

test("mesh send to a name nobody holds is the node's 404, in one line", async () => {
  const unknown = await mesh(['send', 'nobody-holds-this', '1', '--data-dir', node.dataDir]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /^mesh send: Unknown name \(404\): no node holds the name "nobody-holds-this"/);
});

test("the node's refusal is one clear line and exit 1: more than the balance is its 402", async () => {
  const broke = await mesh(['send', OTHER, '1000000000', '--data-dir', node.dataDir]);
  assert.equal(broke.code, 1);
  assert.match(broke.stderr, /^mesh send: Insufficient free balance \(402\): .+\n$/);
});

test('the token goes to another machine only when given with --token-file, and never over plain http://', async () => {
  const remote = await mesh(['send', OTHER, '1', '--node', 'https://192.0.2.1:1', '--data-dir', node.dataDir]);
  assert.equal(remote.code, 2, remote.stderr);
  assert.match(
    remote.stderr,
    /^mesh send: --node https:\/\/192\.0\.2\.1:1 is not the address the node of .+ recorded: give its API token with --token-file FILE/,
  );
  const tokenFile = join(await tempDataDir(), 'token');
  await writeFile(tokenFile, 'their-token');
  const plain = await mesh(['send', OTHER, '1', '--node', 'http://192.0.2.1:1', '--token-file', tokenFile, '--data-dir', node.dataDir]);
  assert.equal(plain.code, 2, plain.stderr);
  assert.match(plain.stderr, /^mesh send: --node http:\/\/192\.0\.2\.1:1 is plain http:\/\/ to another machine, .+ use https:\/\//);
});

test("the data directory's token goes only to a server that says it is that directory's node", async () => {
  // Another process on the recorded address (a reused pid, another node): it answers /status as someone else.
  const seen: { method: string; authorization: string | undefined }[] = [];
  const impostor = createHttpServer((request, response) => {
    seen.push({ method: request.method ?? '', authorization: request.headers.authorization });
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify(request.url === '/status' ? { node_id: OTHER } : { tx_id: 'ab'.repeat(32) }));
  });
  await new Promise<void>((resolve) => impostor.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(impostor.address() as { port: number }).port}`;
  try {
    const dir = await tempDataDir();
    await openDataDir(dir, { warn: () => {} });
    await writeApiAddress(dir, url);
    for (const nodeOption of [undefined, url]) {
      const client = await NodeClient.find({ 'data-dir': dir, node: nodeOption });
      await assert.rejects(client.post('/transfer', {}), new RegExp(`^NodeClientError: no node of this data directory is running at ${url} `));
    }
    assert.deepEqual(seen, [
      { method: 'GET', authorization: undefined },
      { method: 'GET', authorization: undefined },
    ]);
    // A token given explicitly is the user's decision: sent as given.
    const tokenFile = join(dir, 'their.token');
    await writeFile(tokenFile, 'their-token\n');
    const client = await NodeClient.find({ 'data-dir': dir, node: url, 'token-file': tokenFile });
    await client.post('/transfer', {});
    assert.deepEqual(seen.at(-1), { method: 'POST', authorization: 'Bearer their-token' });
    assert.equal(seen.length, 3, "the data directory's token was never sent");
  } finally {
    await new Promise((resolve) => impostor.close(resolve));
  }
});

test('no node running: an empty data directory, a stopped node, a stale record', async () => {
  const empty = await tempDataDir();
  const none = await mesh(['status', '--data-dir', empty]);
  assert.equal(none.code, 1);
  assert.match(none.stderr, new RegExp(`^mesh status: no node running with data directory ${empty} \\(no api.json`));

  // A clean stop removes the record.
  const stopped = await startNode();
  assert.notEqual(await readApiAddress(stopped.dataDir), null);
  assert.equal(await stopNode(stopped), 0);
  assert.equal(await readApiAddress(stopped.dataDir), null);
  assert.match((await mesh(['send', OTHER, '1', '--data-dir', stopped.dataDir])).stderr, /no node running with data directory/);

  // A record whose process is alive but serves nothing there (a reused pid): refused, not a hang.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as { port: number }).port;
  await new Promise((resolve) => closed.close(resolve));
  await writeFile(join(empty, 'api.json'), JSON.stringify({ url: `http://127.0.0.1:${port}`, pid: process.pid }));
  const refused = await mesh(['status', '--data-dir', empty]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, new RegExp(`^mesh status: no node running at http://127.0.0.1:${port} \\(connection refused\\)`));

  // A node killed outright leaves its record behind: its process is gone, and the client says so.
  assert.equal(await stopNode(node, 'SIGKILL'), null);
  const stale = await mesh(['status', '--data-dir', node.dataDir]);
  assert.equal(stale.code, 1);
  assert.match(stale.stderr, new RegExp(`^mesh status: no node running at ${node.url} \\(its process ${node.child.pid} has ended`));
});
