/**
 * The README's four-node devnet, started as the README starts it: a and b mine, c pays for jobs,
 * h hosts them (on the real Podman engine, test/podman.ts), and b, c and h each know only a
 * (`--bootstrap` to a). Nothing else tells any node where another is: c runs a job on h and b
 * messages c through peer routing alone (docs/network.md, "Peer routing"); b also pays h through a
 * payment channel and opens a tunnel to a service on h's machine.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, connect, createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { getJson, type MeshProcess, openStream, postJson, runMesh, startNode, stopAll, tcpAddress, waitFor } from './mesh-process.ts';
import { PODMAN_DIR, type PodmanService, startPodman, TEST_IMAGE } from './podman.ts';

// The devnet's default block interval, which the README's commands leave as it is.
const BLOCK_MS = 1000;

let podman: PodmanService;
let a: MeshProcess;
let b: MeshProcess;
let c: MeshProcess;
let h: MeshProcess;

before(async () => {
  podman = await startPodman();
  a = await startNode({ mine: true, blockIntervalMs: BLOCK_MS });
  const toA = [tcpAddress(a)];
  b = await startNode({ mine: true, blockIntervalMs: BLOCK_MS, bootstrap: toA });
  c = await startNode({ blockIntervalMs: BLOCK_MS, bootstrap: toA });
  h = await startNode({
    blockIntervalMs: BLOCK_MS,
    bootstrap: toA,
    extraArgs: ['--allow-image', 'localhost/busybox'],
    env: { DOCKER_HOST: podman.dockerHost, CONTAINERS_CONF: join(PODMAN_DIR, 'containers.conf') },
  });
});

after(async () => {
  await stopAll();
  await podman?.stop();
});

const CREDIT = 10n ** 18n;

/** Waits until `node` has mined at least `credits` free credits: a miner's first block takes a few seconds. */
const funded = (node: MeshProcess, credits: bigint): Promise<boolean> =>
  waitFor(`${credits} credits on a miner`, async () => BigInt((await getJson<{ free: string }>(node, '/status')).free) >= credits * CREDIT, 60_000);

const mesh = async (args: string[]): Promise<string> => {
  const ran = await runMesh(args);
  assert.equal(ran.code, 0, `mesh ${args.join(' ')}: exit ${ran.code}\n${ran.err}`);
  return ran.out;
};

test('c, bootstrapped to a only, runs a job on h, bootstrapped to a only', async () => {
  await funded(a, 5n);
  await mesh(['send', c.nodeId, '5', '--data-dir', a.dataDir]);
  await waitFor('c holds its credits', async () => BigInt((await getJson<{ balance: string }>(c, '/status')).balance) > 0n, 60_000);
  await waitFor('c has h in its atlas', async () => (await getJson<{ node_id: string }[]>(c, '/atlas')).some((e) => e.node_id === h.nodeId), 60_000);
  const ran = await runMesh(
    ['jobs', 'run', TEST_IMAGE, '--data-dir', c.dataDir, '--cpu', '1', '--mem', '32', '--duration', '20', '--bid', '0.5', '--follow', '--', 'echo', 'ran on h'],
    90_000,
  );
  assert.equal(ran.code, 0, ran.err);
  assert.equal(ran.out, 'ran on h\n');
  const id = /^job ([0-9a-f]{64}), bid 0\.5 credits$/m.exec(ran.err)?.[1];
  assert.ok(id, ran.err);
  const view = await getJson<{ host: string; status: string }>(c, `/jobs/${id}`);
  assert.deepEqual([view.host, view.status], [h.nodeId, 'settled']);
});

test('b, bootstrapped to a only, messages c', async () => {
  const inbox = await openStream<{ from: string; topic: string; payload_hex: string }>(c, '/mesh/messages/stream');
  try {
    const seq = await mesh(['msg', 'send', c.nodeId, 'devnet', 'hello c', '--data-dir', b.dataDir]);
    assert.match(seq, /^\d+\n$/);
    const heard = await inbox.next((e) => e.topic === 'devnet');
    assert.deepEqual([heard.from, Buffer.from(heard.payload_hex, 'hex').toString()], [b.nodeId, 'hello c']);
  } finally {
    inbox.close();
  }
});

test('b opens a payment channel to h and its receipt reaches h', async () => {
  await funded(b, 2n);
  const opened = await postJson(b, '/channels/open', { host: h.nodeId, capacity: (2n * CREDIT).toString() });
  assert.equal(opened.status, 201, JSON.stringify(opened.body));
  const id = opened.body.channel_id as string;
  for (const node of [b, h])
    await waitFor('the channel open on both', async () => (await getJson<{ status: string }>(node, `/channels/${id}`)).status === 'open', 60_000);
  const paid = await postJson(b, '/channels/receipt', { channel_id: id, host: h.nodeId, cumulative: CREDIT.toString() });
  assert.equal(paid.status, 200, JSON.stringify(paid.body));
  assert.deepEqual([paid.body.delivered, paid.body.delivery_error], [true, null]);
});

test('b tunnels to a TCP service on h', async () => {
  const echo = createServer((socket) => socket.pipe(socket));
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  try {
    const target = `127.0.0.1:${(echo.address() as AddressInfo).port}`;
    const listened = await postJson(h, '/tunnel', { listen: { protocol: 'echo', target, allow: [b.nodeId] } });
    assert.equal(listened.status, 201, JSON.stringify(listened.body));
    const forwarded = await postJson(b, '/tunnel', { forward: { protocol: 'echo', node: h.nodeId } });
    assert.equal(forwarded.status, 201, JSON.stringify(forwarded.body));
    const socket = connect({ host: '127.0.0.1', port: Number((forwarded.body.address as string).split(':').at(-1)) });
    socket.setEncoding('utf8');
    socket.write('through the mesh');
    const [echoed] = (await once(socket, 'data')) as [string];
    assert.equal(echoed, 'through the mesh');
    socket.destroy();
  } finally {
    echo.close();
  }
});
