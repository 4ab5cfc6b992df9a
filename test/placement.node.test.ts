/**
 * Directed placement end to end: real `mesh node --devnet` processes on loopback and the real Podman
 * engine (test/podman.ts). A caps the chain (it mines), H hosts with no allow-list at all, B is a
 * third node that A pays. Through the HTTP API, and through `mesh trust`, `mesh cap`, `mesh deploy`
 * and `mesh kill` as a user types them.
 */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Docker from 'dockerode';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { toHex } from '../core/encoding/hex.ts';
import { getJson, type MeshProcess, postJson, runMesh, startNode, stopAll, tcpAddress, waitFor } from './mesh-process.ts';
import { PODMAN_DIR, type PodmanService, startPodman, TEST_IMAGE } from './podman.ts';

const CREDIT = 10n ** 18n;
const BLOCK_MS = 250;
const HEARTBEAT_MS = 1000;

let podman: PodmanService;
let docker: Docker;
let a: MeshProcess;
let h: MeshProcess;
let b: MeshProcess;

before(async () => {
  podman = await startPodman();
  docker = new Docker({ socketPath: podman.socketPath });
  a = await startNode({ mine: true, blockIntervalMs: BLOCK_MS });
  h = await startNode({
    blockIntervalMs: BLOCK_MS,
    bootstrap: [tcpAddress(a)],
    extraArgs: ['--job-cores', '4', '--job-mem-mb', '1024', '--heartbeat-interval-ms', String(HEARTBEAT_MS)],
    env: { DOCKER_HOST: podman.dockerHost, CONTAINERS_CONF: join(PODMAN_DIR, 'containers.conf') },
  });
  b = await startNode({ blockIntervalMs: BLOCK_MS, bootstrap: [tcpAddress(a), tcpAddress(h)] });
  assert.match(h.log() + (await waitFor('the host asked the engine', async () => /jobs: (podman|docker)/.test(h.log()) && h.log(), 10_000)), /jobs: podman \d/);
  // B pays for its own deploys.
  await waitFor('A has credits', async () => BigInt((await getJson<Status>(a, '/status')).free) > 200n * CREDIT, 30_000);
  const sent = await postJson(a, '/transfer', { to: b.nodeId, amount: (100n * CREDIT).toString() });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  await waitFor('B holds 100 credits', async () => BigInt((await getJson<Status>(b, '/status')).free) === 100n * CREDIT, 30_000);
});

after(async () => {
  if (h !== undefined)
    for (const c of await docker.listContainers({ all: true, filters: { label: [`mesh.node=${h.nodeId}`] } }))
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {});
  await stopAll();
  await podman?.stop();
});

interface Status {
  node_id: string;
  balance: string;
  free: string;
  locked_bids: string;
}

interface View {
  job_id: string;
  status: string;
  host: string | null;
  billing: string;
  cost: string | null;
  heartbeats: { count: number; paid: string } | null;
}

/** `mesh <args>` as a user types it; exit code, stdout and stderr. */
const mesh = (args: string[]): ReturnType<typeof runMesh> => runMesh(args, 180_000);

function deployBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    node_id: h.nodeId,
    image: TEST_IMAGE,
    cmd: ['sleep', '600'],
    cpu_cores: 1,
    mem_mb: 64,
    duration_secs: 600,
    bid: (20n * CREDIT).toString(),
    ...extra,
  };
}

async function runningContainers(): Promise<string[]> {
  return (await docker.listContainers({ filters: { label: [`mesh.node=${h.nodeId}`] } })).map((c) => c.Labels['mesh.job']!);
}

test('a deploy from a caller the host trusts runs in a container, is billed by heartbeats, and mesh-kill stops it', async () => {
  const untrusted = await postJson(a, '/mesh-deploy', deployBody());
  assert.equal(untrusted.status, 502, JSON.stringify(untrusted.body));
  assert.equal(untrusted.body.rule, 'untrusted');
  assert.equal((await getJson<Status>(a, '/status')).locked_bids, '0', 'a refused deploy locks nothing');

  const trusted = await mesh(['trust', a.nodeId, '--data-dir', h.dataDir]);
  assert.equal(trusted.code, 0, trusted.err);
  const before = BigInt((await getJson<Status>(h, '/status')).balance);
  const deployed = await waitFor(
    'the trust is mined and the deploy goes through',
    async () => {
      const answer = await postJson(a, '/mesh-deploy', deployBody());
      if (answer.status === 502 && answer.body.rule === 'untrusted') return false;
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer.body as { job_id: string };
    },
    30_000,
    500,
  );
  assert.deepEqual(await runningContainers(), [deployed.job_id]);
  const view = await getJson<View>(a, `/jobs/${deployed.job_id}`);
  assert.equal(view.status, 'running');
  assert.equal(view.billing, 'heartbeat');
  assert.equal(view.host, h.nodeId);
  await waitFor('two heartbeats are mined', async () => ((await getJson<View>(a, `/jobs/${deployed.job_id}`)).heartbeats?.count ?? 0) >= 2, 30_000);

  // B has no authority over A's job; A, its payer and the host's admin, stops it.
  const denied = await postJson(b, '/mesh-kill', { node_id: h.nodeId, job_id: deployed.job_id, grant: null });
  assert.equal(denied.status, 502);
  assert.equal(denied.body.rule, 'untrusted');
  const killed = await mesh(['kill', h.nodeId, deployed.job_id, '--data-dir', a.dataDir]);
  assert.equal(killed.code, 0, killed.err);
  await waitFor('the container is gone', async () => (await runningContainers()).length === 0, 20_000);
  const ended = await waitFor('A sees it killed and paid', async () => {
    const v = await getJson<View>(a, `/jobs/${deployed.job_id}`);
    return v.cost !== null && v.status.startsWith('failed') && v;
  });
  assert.equal(ended.status, 'failed: killed by directed placement (/mesh-kill)');
  // Each heartbeat paid the rate (the bid over 20 intervals of 30 s), and the settlement the time after the last; each less 1 %.
  const rate = (20n * CREDIT) / 20n;
  const beats = BigInt(ended.heartbeats!.count);
  assert.equal(BigInt(ended.heartbeats!.paid), beats * rate);
  const rest = BigInt(ended.cost!) - beats * rate;
  assert.ok(rest >= 0n && rest <= rate, `the settlement after the heartbeats is ${rest}`);
  const burn = (x: bigint): bigint => (x * 100n) / 10_000n;
  const earned = beats * (rate - burn(rate)) + rest - burn(rest);
  await waitFor('H holds what it was paid, less the burn', async () => BigInt((await getJson<Status>(h, '/status')).balance) - before === earned, 20_000);
});

test('bad node ids and malformed grants are 400; a host nobody can reach is 504', async () => {
  for (const body of [
    deployBody({ node_id: 'abc' }),
    deployBody({ node_id: h.nodeId.toUpperCase() }),
    deployBody({ grant: 'not a token' }),
    deployBody({ node_id: a.nodeId }),
  ]) {
    const answer = await postJson(a, '/mesh-deploy', body);
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
  }
  const badKill = await postJson(a, '/mesh-kill', { node_id: h.nodeId, job_id: 'xyz', grant: null });
  assert.equal(badKill.status, 400);
  // A valid key no node holds; 'ab'×32 is no point on the curve, so no node id at all (400).
  const offCurve = await postJson(a, '/mesh-deploy', deployBody({ node_id: 'ab'.repeat(32) }));
  assert.equal(offCurve.status, 400, JSON.stringify(offCurve.body));
  const nobody = toHex(SigningKey.fromSeed(new Uint8Array(32).fill(7)).publicKey);
  const lost = await postJson(a, '/mesh-deploy', deployBody({ node_id: nobody }));
  assert.equal(lost.status, 504, JSON.stringify(lost.body));
  const deadHint = await postJson(a, '/mesh-deploy', deployBody({ node_id: nobody, hint_multiaddr: '/ip4/127.0.0.1/tcp/9' }));
  assert.equal(deadHint.status, 504, JSON.stringify(deadHint.body));
  const lostKill = await postJson(a, '/mesh-kill', { node_id: nobody, job_id: nobody, grant: null });
  assert.equal(lostKill.status, 504);
  assert.equal((await getJson<Status>(a, '/status')).locked_bids, '0');
});

test('a three-link token (H, then A, then B) lets B deploy on H; the root lets A kill it; once A revokes its link, B is refused', async () => {
  // A is no longer H's admin: from here only tokens speak for it.
  const withdrawn = await mesh(['trust', '--withdraw', a.nodeId, '--data-dir', h.dataDir]);
  assert.equal(withdrawn.code, 0, withdrawn.err);
  await waitFor(
    'the withdrawal is mined',
    async () => {
      const answer = await postJson(a, '/mesh-deploy', deployBody());
      // Still trusted for a block or two: what ran is stopped at once.
      if (answer.status === 200) await postJson(a, '/mesh-kill', { node_id: h.nodeId, job_id: answer.body.job_id, grant: null });
      return answer.body?.rule === 'untrusted';
    },
    30_000,
    500,
  );
  await waitFor('no container is left', async () => (await runningContainers()).length === 0, 20_000);

  const issued = await mesh([
    'cap',
    'issue',
    '--devnet',
    '--data-dir',
    h.dataDir,
    '--to',
    a.nodeId,
    '--allow',
    'deploy,kill',
    '--mem-mb',
    '256',
    '--image',
    'localhost/busybox',
    '--expires',
    '1h',
  ]);
  assert.equal(issued.code, 0, issued.err);
  const root = issued.out.trim();
  const delegated = await mesh(['cap', 'delegate', root, '--devnet', '--data-dir', a.dataDir, '--to', b.nodeId, '--allow', 'deploy', '--mem-mb', '128']);
  assert.equal(delegated.code, 0, delegated.err);
  const token = delegated.out.trim();
  const inspected = await mesh(['cap', 'inspect', token, '--devnet', '--json']);
  assert.equal(inspected.code, 0, inspected.err);

  const deploy = (mem: string): Promise<{ code: number; out: string; err: string }> =>
    mesh([
      'deploy',
      h.nodeId,
      TEST_IMAGE,
      '--cpu',
      '1',
      '--mem',
      mem,
      '--duration',
      '600',
      '--bid',
      '5',
      '--grant',
      token,
      '--data-dir',
      b.dataDir,
      '--',
      'sleep',
      '600',
    ]);
  const wide = await deploy('256');
  assert.equal(wide.code, 1);
  assert.match(wide.err, /not-allowed|mem_mb 256 is above/);
  const deployed = await deploy('64');
  assert.equal(deployed.code, 0, deployed.err);
  const jobId = deployed.out.trim();
  assert.match(jobId, /^[0-9a-f]{64}$/);
  assert.deepEqual(await runningContainers(), [jobId]);
  assert.equal((await getJson<View>(b, `/jobs/${jobId}`)).status, 'running');

  // A holds the root link, which allows kill: it stops B's job on H.
  const noGrant = await postJson(a, '/mesh-kill', { node_id: h.nodeId, job_id: jobId, grant: null });
  assert.equal(noGrant.body.rule, 'untrusted');
  const killed = await mesh(['kill', h.nodeId, jobId, '--grant', root, '--data-dir', a.dataDir]);
  assert.equal(killed.code, 0, killed.err);
  await waitFor('the container is gone', async () => (await runningContainers()).length === 0, 20_000);

  // A revokes the link it issued to B; once mined, B's token fails at H.
  const revoked = await mesh(['cap', 'revoke', token, '--data-dir', a.dataDir]);
  assert.equal(revoked.code, 0, revoked.err);
  const refused = await waitFor(
    'the revocation is mined',
    async () => {
      const answer = await postJson(b, '/mesh-deploy', deployBody({ mem_mb: 64, bid: (5n * CREDIT).toString(), grant: token }));
      if (answer.status === 200) await postJson(b, '/mesh-kill', { node_id: h.nodeId, job_id: answer.body.job_id, grant: null });
      return answer.status === 502 && answer.body.rule === 'revoked' && answer;
    },
    30_000,
    500,
  );
  assert.match(refused.body.detail, /revoked/);
});
