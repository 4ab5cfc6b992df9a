/**
 * `mesh node --capability-root`: the option reaches the node's placement host and takes effect.
 * Real `mesh node --devnet` processes on loopback: A mines and issues a token rooted at its own key;
 * R is started with `--capability-root <A>`, P with none. Neither has a container engine: the token
 * check comes before the engine is asked, so where the root is honoured the deploy gets past it.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getJson, type MeshProcess, postJson, runMesh, startNode, stopAll, tcpAddress, waitFor } from './mesh-process.ts';

const CREDIT = 10n ** 18n;
const BLOCK_MS = 250;
const NO_ENGINE = { DOCKER_HOST: 'unix:///nonexistent/mesh-test/docker.sock' };

let a: MeshProcess;
let rooted: MeshProcess;
let plain: MeshProcess;

before(async () => {
  a = await startNode({ mine: true, blockIntervalMs: BLOCK_MS });
  [rooted, plain] = await Promise.all([
    startNode({ blockIntervalMs: BLOCK_MS, bootstrap: [tcpAddress(a)], extraArgs: ['--capability-root', a.nodeId], env: NO_ENGINE }),
    startNode({ blockIntervalMs: BLOCK_MS, bootstrap: [tcpAddress(a)], env: NO_ENGINE }),
  ]);
  await waitFor('A has credits', async () => BigInt((await getJson<{ free: string }>(a, '/status')).free) > 10n * CREDIT, 30_000);
});

after(async () => {
  await stopAll();
});

test("a token rooted at a --capability-root key passes the host's check; on a host without the option it is untrusted", async () => {
  const issued = await runMesh(['cap', 'issue', '--devnet', '--data-dir', a.dataDir, '--to', a.nodeId, '--allow', 'deploy', '--expires', '1h']);
  assert.equal(issued.code, 0, issued.err);
  const grant = issued.out.trim();
  const deploy = (host: MeshProcess): ReturnType<typeof postJson> =>
    postJson(a, '/mesh-deploy', {
      node_id: host.nodeId,
      image: 'localhost/busybox',
      cmd: ['true'],
      cpu_cores: 1,
      mem_mb: 64,
      duration_secs: 60,
      bid: CREDIT.toString(),
      grant,
    });

  const refused = await deploy(plain);
  assert.equal(refused.status, 502, JSON.stringify(refused.body));
  assert.equal(refused.body.rule, 'untrusted');
  assert.match(refused.body.detail, /neither this host nor a configured root/);

  // Past the token, the host without an engine refuses for that (or takes the job and fails it later).
  const honoured = await deploy(rooted);
  assert.ok(honoured.status === 200 || honoured.body.rule === 'container-error', JSON.stringify(honoured.body));
});
