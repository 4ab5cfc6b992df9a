/**
 * Node profiles and fabric statistics between real `mesh node --devnet` processes (docs/fabric.md):
 * `mesh profile` on A measures and publishes, B holds A's signed profile and counts it in its
 * /fabric/stats; a profile forged by an in-process libp2p peer is refused and its sender
 * penalised until B hangs up on it; `mesh profile --image` measures inside a job container on the
 * Podman test engine (test/podman.ts), with the job sandbox's limits.
 */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { concatBytes } from '../core/encoding/bytes.ts';
import { encode } from '../core/encoding/codec.ts';
import { fromHex, toHex } from '../core/encoding/hex.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import type { FabricStats } from '../core/netgraph/fabric.ts';
import { openProfile, PROFILES_TOPIC, type ProfileJson, profileBodyCodec } from '../core/netgraph/profile.ts';
import { startP2PNetwork } from '../host-node/p2p.ts';
import { getJson, type MeshProcess, runMesh, startNode, stopAll, tcpAddress, waitFor } from './mesh-process.ts';
import { PODMAN_DIR, type PodmanService, startPodman, TEST_IMAGE } from './podman.ts';

const DEVNET = 'mesh-devnet';

let a: MeshProcess;
let b: MeshProcess;
let x: Libp2pNetwork;
let podman: PodmanService | undefined;

before(async () => {
  a = await startNode();
  b = await startNode({ bootstrap: [tcpAddress(a)] });
  x = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [tcpAddress(b)] });
  await waitFor('X is connected to B', async () => x.peers().some((p) => toHex(p.node) === b.nodeId), 20_000);
  await waitFor(
    'A and B are connected',
    async () => (await getJson<{ peers: { node_id: string }[] }>(a, '/peers')).peers.some((p) => p.node_id === b.nodeId),
    20_000,
  );
  await waitFor("B and X subscribed to each other's profiles", async () => x.subscribers(PROFILES_TOPIC) > 0, 20_000);
});

after(async () => {
  await x?.stop();
  await stopAll();
  await podman?.stop();
});

/** The wire form of a profile's JSON: its canonical body and its signature. */
function wireOf(profile: ProfileJson): Uint8Array {
  const { node_id, signature, ...measurement } = profile;
  return concatBytes(encode(profileBodyCodec, { node_id: fromHex(node_id, 32), ...measurement }), fromHex(signature, 64));
}

const profilesOf = async (node: MeshProcess): Promise<ProfileJson[]> => (await getJson<{ profiles: ProfileJson[] }>(node, '/profiles')).profiles;

let published: ProfileJson;

test("mesh profile on A measures on the host and publishes; B holds A's signed profile and counts it in /fabric/stats", async () => {
  const run = await runMesh(['profile', '--data-dir', a.dataDir, '--json']);
  assert.equal(run.code, 0, run.err);
  const answer = JSON.parse(run.out) as { profile: ProfileJson; measured_in: { where: string }; published: boolean };
  assert.equal(answer.published, true);
  assert.equal(answer.measured_in.where, 'host');
  published = answer.profile;
  assert.equal(published.node_id, a.nodeId);
  assert.ok(published.cpu.cores >= 1 && published.cpu.gflops_fp32 !== null && published.cpu.gflops_fp32 > 0, JSON.stringify(published.cpu));
  assert.ok(published.storage.write_mbps !== null && published.storage.write_mbps > 0);
  assert.deepEqual(await getJson(a, `/profiles/${a.nodeId}`), published);

  const held = await waitFor("B holds A's profile", async () => (await profilesOf(b)).find((p) => p.node_id === a.nodeId), 20_000);
  assert.deepEqual(held, published);
  // The signature is A's over the profile on this network: anyone can check it.
  assert.equal((await openProfile(wireOf(held), DEVNET)).nodeId, a.nodeId);

  const stats = await getJson<FabricStats>(b, '/fabric/stats');
  assert.ok(stats.nodes >= 2, JSON.stringify(stats));
  assert.equal(stats.cpu_gflops, published.cpu.gflops_fp32, 'only A has a profile');
  assert.equal(stats.storage_free_gb, published.storage.free_gb);
  assert.equal(stats.perf_score, published.cpu.gflops_fp32);
  assert.ok(stats.cpu_cores >= published.cpu.cores);
  // The mesh block is netgraph's: B reaches A, and A and B are one region or two (before a sample or coordinate joins them).
  assert.ok(stats.mesh.regions >= 1 && stats.mesh.regions <= stats.nodes, JSON.stringify(stats.mesh));
  assert.ok(stats.mesh.reachable_frac !== null && stats.mesh.reachable_frac > 0, JSON.stringify(stats.mesh));

  const ls = await runMesh(['profile', 'ls', '--data-dir', b.dataDir]);
  assert.equal(ls.code, 0, ls.err);
  assert.match(ls.out, new RegExp(`^${a.nodeId.slice(0, 16)} `, 'm'), 'the node by its first 16 characters, as every table shows ids');
  const shown = await runMesh(['profile', 'show', a.nodeId.slice(0, 8), '--data-dir', b.dataDir]);
  assert.equal(shown.code, 0, shown.err);
  assert.match(shown.out, new RegExp(`^node id +${a.nodeId}$`, 'm'), 'found by the start of its id');
  const fabric = await runMesh(['fabric', '--data-dir', b.dataDir, '--json']);
  assert.equal(fabric.code, 0, fabric.err);
  assert.equal((JSON.parse(fabric.out) as FabricStats).cpu_gflops, published.cpu.gflops_fp32);
  const missing = await runMesh(['profile', 'show', 'ab'.repeat(32), '--data-dir', b.dataDir]);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /no live profile/);
});

test("a profile forged by a peer (A's body, changed, under A's old signature) is refused; the peer is penalised until B hangs up", async () => {
  assert.ok(published !== undefined, "the first test published A's profile");
  const wire = wireOf(published);
  for (let i = 1; i <= 12 && x.peers().some((p) => toHex(p.node) === b.nodeId); i++) {
    const forged = wire.slice();
    forged[39] = forged[39]! ^ i; // measured_at, a little later: the signature no longer covers it
    await x.publish(PROFILES_TOPIC, forged).catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await waitFor('B logged the refusal', async () => /profiles: refused a profile from .*not signed by its node/.test(b.log()), 10_000);
  await waitFor('B hung up on X', async () => !x.peers().some((p) => toHex(p.node) === b.nodeId), 20_000);
  assert.deepEqual(
    (await profilesOf(b)).find((p) => p.node_id === a.nodeId),
    published,
    'B still holds the genuine profile',
  );
});

test('mesh profile --image measures compute in a job container with the job limits, and publishes', async () => {
  podman = await startPodman();
  const env = { ...process.env, DOCKER_HOST: podman.dockerHost, CONTAINERS_CONF: join(PODMAN_DIR, 'containers.conf') };
  const saved = { DOCKER_HOST: process.env.DOCKER_HOST, CONTAINERS_CONF: process.env.CONTAINERS_CONF };
  Object.assign(process.env, env);
  let run: Awaited<ReturnType<typeof runMesh>>;
  try {
    run = await runMesh(['profile', '--data-dir', a.dataDir, '--image', TEST_IMAGE, '--cpu-cores', '1', '--mem-mb', '256', '--json'], 120_000);
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
  assert.equal(run.code, 0, run.err);
  const answer = JSON.parse(run.out) as { profile: ProfileJson; measured_in: Record<string, unknown> };
  assert.deepEqual(
    {
      where: answer.measured_in.where,
      image: answer.measured_in.image,
      probe: answer.measured_in.probe,
      cpu_cores: answer.measured_in.cpu_cores,
      mem_mb: answer.measured_in.mem_mb,
    },
    { where: 'container', image: TEST_IMAGE, probe: 'shell', cpu_cores: 1, mem_mb: 256 },
  );
  const profile = answer.profile;
  assert.equal(profile.cpu.threads, 1, "the container's CPU limit");
  assert.equal(profile.cpu.gflops_fp32, null, 'busybox has no Node: no fp32 figure, rather than a made-up one');
  assert.ok(profile.cpu.mem_bw_gbps !== null && profile.cpu.mem_bw_gbps > 0, JSON.stringify(profile.cpu));
  assert.ok(profile.memory.total_mb <= 256, `the container's memory limit, got ${profile.memory.total_mb}`);
  assert.equal(profile.runtime.docker, true);
  assert.ok(profile.measured_at > published.measured_at);
  await waitFor(
    'B holds the newer profile',
    async () => (await profilesOf(b)).find((p) => p.node_id === a.nodeId && p.measured_at === profile.measured_at),
    20_000,
  );
});
