/**
 * The NAT lab itself (test/nat-lab.ts), before any mesh node runs in it: hosts behind the routers
 * reach the public segment as their router's address, nothing reaches into a home network
 * unsolicited, a cone router keeps a flow's port and the symmetric one picks a new port per flow.
 * Needs root: it fails with NatLabUnavailableError otherwise.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { getJson, stopAll, stopNode, waitFor } from './mesh-process.ts';
import { createNatLab, type NatLab } from './nat-lab.ts';

const PROBE = fileURLToPath(new URL('nat-lab-probe.ts', import.meta.url));
const NODE = process.execPath;
let lab: NatLab;

before(async () => {
  lab = await createNatLab();
  const observer = lab.spawn(lab.public[0]!, [NODE, PROBE, 'observe', '7001', '7002']);
  await new Promise<void>((resolve, reject) => {
    observer.stdout!.once('data', () => resolve());
    observer.once('exit', (code) => reject(new Error(`observer exited with ${code}`)));
  });
});
after(async () => {
  await lab?.close();
  await stopAll();
});

const probe = async (from: Parameters<NatLab['exec']>[0], ...args: string[]): Promise<{ seen?: string | string[]; error?: string }> =>
  JSON.parse(await lab.exec(from, [NODE, PROBE, ...args]));

test('the lab has the layout of issue 31, all in 198.18.0.0/15', () => {
  assert.equal(lab.public.length, 1);
  assert.deepEqual(
    lab.routers.map((r) => r.kind),
    ['cone', 'cone', 'symmetric'],
  );
  for (const address of [...lab.public, ...lab.natted].map((h) => h.address).concat(lab.routers.flatMap((r) => [r.wanAddress, r.lanAddress]))) {
    assert.match(address, /^198\.1[89]\.\d+\.\d+$/);
  }
});

test('every host behind a NAT reaches the public node, seen as its router', async () => {
  for (const host of lab.natted) {
    const answer = await probe(host, 'tcp', lab.public[0]!.address, '7001', '5000');
    assert.match(String(answer.seen), new RegExp(`^${host.router!.wanAddress.replaceAll('.', '\\.')}:\\d+$`), host.name);
  }
});

test('the public node cannot reach into a home network unsolicited', async () => {
  const [home] = lab.routers;
  const host = home!.hosts[0]!;
  const listener = lab.spawn(host, [NODE, PROBE, 'observe', '7003']);
  await new Promise<void>((resolve) => listener.stdout!.once('data', () => resolve()));
  // The listener answers from inside its home network.
  assert.match(String((await probe(home!, 'tcp', host.address, '7003', '5000')).seen), /^198\.19\.1\.1:\d+$/);
  // The router's WAN address forwards nothing, and the internet has no route to the home network…
  assert.equal((await probe(lab.public[0]!, 'tcp', home!.wanAddress, '7003', '1500')).error, 'timeout');
  assert.equal((await probe(lab.public[0]!, 'tcp', host.address, '7003', '1500')).error, 'ENETUNREACH');
  // …and a route there does not help: the router drops what is not a reply.
  await lab.exec(lab.public[0]!, ['ip', 'route', 'add', '198.19.1.0/24', 'via', home!.wanAddress]);
  try {
    assert.equal((await probe(lab.public[0]!, 'tcp', host.address, '7003', '1500')).error, 'timeout');
  } finally {
    await lab.exec(lab.public[0]!, ['ip', 'route', 'del', '198.19.1.0/24']);
  }
});

test('a cone router keeps the port of a flow; the symmetric router maps each flow to a random port', async () => {
  const [cone, , symmetric] = lab.routers;
  const coneSeen = await probe(cone!.hosts[0]!, 'udp', '40000', lab.public[0]!.address, '7001', '7002');
  assert.deepEqual(coneSeen.seen, [`${cone!.wanAddress}:40000`, `${cone!.wanAddress}:40000`]);

  const symmetricSeen = await probe(symmetric!.hosts[0]!, 'udp', '40000', lab.public[0]!.address, '7001', '7002');
  const ports = (symmetricSeen.seen as string[]).map((s) => {
    assert.ok(s.startsWith(`${symmetric!.wanAddress}:`), s);
    return Number(s.split(':')[1]);
  });
  assert.equal(ports.length, 2);
  assert.notEqual(ports[0], ports[1], 'one mapping per destination');
});

test('a real mesh node behind a NAT joins the public node, which sees it as its router', async () => {
  const relay = await lab.startNode(lab.public[0]!);
  const home = await lab.startNode(lab.natted[0]!, { bootstrap: [lab.tcpAddress(relay)] });
  try {
    const peers = await waitFor('the relay sees the home node', async () => {
      const { peers } = await getJson<{ peers: { node_id: string; remote_addr: string }[] }>(relay, '/peers');
      return peers.find((p) => p.node_id === home.nodeId);
    });
    assert.match(peers.remote_addr, new RegExp(`^/ip4/${lab.natted[0]!.router!.wanAddress.replaceAll('.', '\\.')}/tcp/`));
  } finally {
    await stopNode(home);
    await stopNode(relay);
  }
});

test('without root the lab says it needs root, before it builds anything', async () => {
  const getuid = process.getuid;
  process.getuid = () => 1000;
  try {
    await assert.rejects(createNatLab(), { name: 'NatLabUnavailableError', message: /^the NAT lab needs root/ });
  } finally {
    process.getuid = getuid;
  }
});
