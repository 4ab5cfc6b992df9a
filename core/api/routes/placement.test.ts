// The /mesh-deploy and /mesh-kill routes in-process, over the fake node: what reaches the service,
// what never does, and how its refusals are answered. Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../../test/harness.ts';
import { CapabilityError } from '../../capabilities/errors.ts';
import { RequestTimeoutError } from '../../net/errors.ts';
import { PlacementError } from '../../placement/errors.ts';
import { BAD_IDS, ok, post, problem, setup } from '../api.test-util.ts';
import { JOB_ID } from '../fake-node.test-util.ts';

const HOST = 'ab'.repeat(32);
const DEPLOY = {
  node_id: HOST,
  image: 'localhost/busybox:test',
  cmd: ['sleep', '60'],
  cpu_cores: 1,
  mem_mb: 64,
  duration_secs: 60,
  bid: '2000000000000000000',
};

test('placement: POST /mesh-deploy answers 200 {job_id} and passes the deploy on, hint and grant included', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(post('/mesh-deploy', DEPLOY))), { job_id: JOB_ID });
  await ok(await api(post('/mesh-deploy', { ...DEPLOY, cmd: null, bid: 7, hint_multiaddr: '/ip4/10.0.0.2/tcp/8845/p2p/12D3KooW', grant: 'mcap1.AAAA' })));
  assert.deepEqual(node.placement.placementCalls, [
    {
      method: 'meshDeploy',
      request: {
        nodeId: HOST,
        image: DEPLOY.image,
        cmd: ['sleep', '60'],
        cpuCores: 1,
        memMb: 64,
        durationSecs: 60,
        bid: 2_000_000_000_000_000_000n,
        hint: null,
        grant: null,
      },
    },
    {
      method: 'meshDeploy',
      request: {
        nodeId: HOST,
        image: DEPLOY.image,
        cmd: null,
        cpuCores: 1,
        memMb: 64,
        durationSecs: 60,
        bid: 7n,
        hint: '/ip4/10.0.0.2/tcp/8845/p2p/12D3KooW',
        grant: 'mcap1.AAAA',
      },
    },
  ]);
});

test('placement: POST /mesh-kill answers 204 with no body', async () => {
  const { api, node } = setup();
  const response = await api(post('/mesh-kill', { node_id: HOST, job_id: JOB_ID, grant: null }));
  assert.equal(response.status, 204);
  assert.equal(await response.text(), '');
  assert.deepEqual(node.placement.placementCalls, [{ method: 'meshKill', request: { nodeId: HOST, jobId: JOB_ID, grant: null } }]);
});

test('placement: bad node ids, job ids, hints, grants and terms are 400 and reach nothing', async () => {
  const { api, node } = setup();
  for (const [what, id] of BAD_IDS) {
    const deploy = await problem(await api(post('/mesh-deploy', { ...DEPLOY, node_id: id })), 400);
    assert.match(deploy.detail, /node_id/, what);
    const kill = await problem(await api(post('/mesh-kill', { node_id: HOST, job_id: id, grant: null })), 400);
    assert.match(kill.detail, /job_id/, what);
  }
  for (const body of [
    { ...DEPLOY, hint_multiaddr: 'not a multiaddr' },
    { ...DEPLOY, grant: '' },
    { ...DEPLOY, grant: 5 },
    { ...DEPLOY, bid: '0' },
    { ...DEPLOY, cpu_cores: 0 },
    { ...DEPLOY, image: 'Not An Image' },
    { ...DEPLOY, extra: 1 },
  ]) {
    await problem(await api(post('/mesh-deploy', body)), 400);
  }
  assert.deepEqual(node.placement.placementCalls, []);
});

test("placement: the service's refusals are answered as the spec says: 400 malformed grant, 502 with the host's reason, 504 timeout", async () => {
  const { api, node } = setup();
  node.placement.placementError = new CapabilityError('malformed', 'the token does not decode');
  assert.equal((await problem(await api(post('/mesh-deploy', DEPLOY)), 400)).type, '/problems/bad-grant');
  node.placement.placementError = new PlacementError('revoked', 'the host refused: link 1 was revoked');
  const refused = await problem(await api(post('/mesh-deploy', DEPLOY)), 502);
  assert.equal(refused.rule, 'revoked');
  assert.match(refused.detail, /revoked/);
  node.placement.placementError = new PlacementError('container-error', 'the host refused: no container runtime');
  assert.equal((await problem(await api(post('/mesh-kill', { node_id: HOST, job_id: JOB_ID, grant: null })), 502)).rule, 'container-error');
  node.placement.placementError = new PlacementError('timeout', 'no answer');
  assert.equal((await problem(await api(post('/mesh-deploy', DEPLOY)), 504)).rule, 'timeout');
  node.placement.placementError = new PlacementError('self', 'node_id is this node');
  await problem(await api(post('/mesh-deploy', DEPLOY)), 400);
  node.placement.placementError = new RequestTimeoutError(HOST, '/mesh/rpc/1/placement.deploy', 15_000);
  await problem(await api(post('/mesh-kill', { node_id: HOST, job_id: JOB_ID, grant: null })), 504);
});
