/**
 * The market, a payment channel and messaging between two hosts behind different home NATs, in the
 * NAT lab (test/nat-lab.ts) with real `mesh node` processes: A (behind NAT 1) mines and pays, B
 * (behind NAT 2) hosts jobs on the real Podman engine (test/podman.ts). Each knows only the public
 * relay: A finds B in its atlas and reaches it by NodeId through peer routing. A runs a job on B
 * with `mesh jobs run --follow` (the output streams on `jobs.logs`, which waits for the direct
 * connection), pays B through a channel that B closes, and the two message each other both ways;
 * A–B ends up on a hole-punched WebRTC connection. Needs root (the lab) and Podman: it fails with
 * NatLabUnavailableError, or with the apt command to run, otherwise.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { getJson, type MeshProcess, postJson, stopAll, waitFor } from './mesh-process.ts';
import { createNatLab, type NatLab } from './nat-lab.ts';
import { exchange, peerOf, startNatted, startRelay } from './nat-nodes.ts';
import { PODMAN_DIR, type PodmanService, startPodman, TEST_IMAGE } from './podman.ts';

const CREDIT = 10n ** 18n;
const MESH = fileURLToPath(new URL('../bin/mesh.js', import.meta.url));

let podman: PodmanService;
let lab: NatLab;
let relay: MeshProcess;
let a: MeshProcess;
let b: MeshProcess;

interface Channel {
  status: string;
  cumulative: string;
  delivered: string | null;
  settlement: { cumulative: string; to_host: string } | null;
}

const channel = (node: MeshProcess, id: string): Promise<Channel> => getJson<Channel>(node, `/channels/${id}`);

before(async () => {
  // The lab first: without root it is the lab's error that says what is missing.
  lab = await createNatLab({ nats: [{ kind: 'cone' }, { kind: 'cone' }] });
  podman = await startPodman();
  relay = await startRelay(lab);
  [a, b] = await Promise.all([
    startNatted(lab, lab.natted[0]!, relay, [], { mine: true }),
    startNatted(lab, lab.natted[1]!, relay, [], {
      extraArgs: ['--allow-image', 'localhost/busybox'],
      // The engine's socket is a path, which a network namespace does not hide; its containers run with no network.
      env: { DOCKER_HOST: podman.dockerHost, CONTAINERS_CONF: join(PODMAN_DIR, 'containers.conf') },
    }),
  ]);
});

after(async () => {
  await stopAll();
  await lab?.close();
  await podman?.stop();
});

test('A behind NAT 1 runs a job on B behind NAT 2, pays B through a channel, and they message both ways, directly', async () => {
  // Behind their NATs they are reached through the relay once each holds a reservation there and
  // the relay has heard the address it gives (what it answers lookups with).
  for (const node of [a, b]) {
    await waitFor('the relay knows a relay address', async () => (await peerOf(relay, node))?.multiaddrs.some((m) => m.includes('/p2p-circuit')));
  }
  await waitFor('A has B in its atlas', async () => (await getJson<{ node_id: string }[]>(a, '/atlas')).some((e) => e.node_id === b.nodeId), 30_000);
  await waitFor('A holds credits', async () => BigInt((await getJson<{ balance: string }>(a, '/status')).balance) >= 5n * CREDIT, 30_000);

  // The CLI as a user on A's machine runs it (the node's API is on A's loopback, in its namespace).
  const terms = '--cpu 1 --mem 32 --duration 20 --bid 0.5'.split(' ');
  const command = [process.execPath, MESH, 'jobs', 'run', TEST_IMAGE, '--data-dir', a.dataDir, ...terms, '--follow', '--', 'echo', 'ran on B'];
  const ran = await lab.exec(lab.natted[0]!, command, 60_000).catch((error: Error) => assert.fail(`${error.message}\nA:\n${a.log()}\nB:\n${b.log()}`));
  assert.equal(ran, 'ran on B\n');
  const [job] = await getJson<{ job_id: string; host: string; status: string }[]>(a, '/jobs');
  assert.deepEqual([job?.host, job?.status], [b.nodeId, 'settled']);
  const hosted = await waitFor('B sees the job settled', async () => {
    const view = await getJson<{ status: string; cost: string | null }>(b, `/jobs/${job!.job_id}`);
    return view.cost !== null && view;
  });
  assert.equal(hosted.status, 'settled');

  const opened = await postJson(a, '/channels/open', { host: b.nodeId, capacity: (2n * CREDIT).toString() });
  assert.equal(opened.status, 201, JSON.stringify(opened.body));
  const id = opened.body.channel_id as string;
  for (const node of [a, b]) await waitFor(`the channel open on ${node === a ? 'A' : 'B'}`, async () => (await channel(node, id)).status === 'open');
  for (const cumulative of [CREDIT / 2n, CREDIT]) {
    const paid = await postJson(a, '/channels/receipt', { channel_id: id, host: b.nodeId, cumulative: cumulative.toString() });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.deepEqual([paid.body.delivered, paid.body.delivery_error], [true, null]);
  }
  const closed = await postJson(b, `/channels/${id}/close`, {});
  assert.equal(closed.status, 202, JSON.stringify(closed.body));
  const settled = await waitFor('A sees the channel closed', async () => {
    const c = await channel(a, id);
    return c.status === 'closed' && c;
  });
  assert.equal(settled.settlement?.cumulative, CREDIT.toString());

  await exchange(a, b, 'nat-job');
  // The job's output came over `jobs.logs`, which runs only on a direct connection.
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const) {
    const peer = await waitFor('a direct connection between A and B', async () => {
      const p = await peerOf(from, to);
      return p !== undefined && !p.relayed && p;
    });
    // WebRTC: the dialler names it by the relay it was signalled through, the answerer `/webrtc/p2p/<peer>`.
    assert.match(peer.remote_addr, /\/webrtc\/p2p\//);
  }
});
