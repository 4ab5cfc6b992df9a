// The profile and fabric routes in-process, over the fake node: what reaches the service, the
// 400/401/413/415 that never do, and the answers. Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../../test/harness.ts';
import { ProfileError } from '../../netgraph/errors.ts';
import type { FabricStats } from '../../netgraph/fabric.ts';
import type { ProfileJson } from '../../netgraph/profile.ts';
import { AUTH, BAD_IDS, ok, post, problem, request, setup } from '../api.test-util.ts';
import { FABRIC_STATS, SELF } from '../fake-node.test-util.ts';
import { MAX_PROFILE_BODY_BYTES } from './fabric.ts';

const BODY = {
  measured_at: 1_800_000_000,
  cpu: { cores: 4, threads: 8, gflops_fp32: 120.5, mem_bw_gbps: 12 },
  gpus: [],
  memory: { total_mb: 16_000, available_mb: 9_000 },
  storage: { total_gb: 500, free_gb: 200, read_mbps: 1500, write_mbps: null },
  llm: null,
  runtime: { os: 'linux', arch: 'x64', docker: false, gvisor: false, wasm: true },
};

test('fabric: POST /profiles hands the measurement to the node (202 with the signed profile); GET /profiles and /profiles/:node_id show it', async () => {
  const { api } = setup();
  const signed = await ok<ProfileJson>(await api(post('/profiles', { ...BODY, cpu: { ...BODY.cpu, gflops_fp32: -0 } })), 202);
  assert.equal(signed.node_id, SELF);
  assert.deepEqual(
    { ...signed, node_id: undefined, signature: undefined },
    { ...BODY, cpu: { ...BODY.cpu, gflops_fp32: 0 }, node_id: undefined, signature: undefined },
    '-0 is taken as 0',
  );
  assert.deepEqual(await ok(await api(request('/profiles'))), { profiles: [signed] });
  assert.deepEqual(await ok(await api(request(`/profiles/${SELF}`))), signed);
  assert.equal((await problem(await api(request(`/profiles/${'ab'.repeat(32)}`)), 404)).type, '/problems/unknown-profile');
  for (const [, id] of BAD_IDS) await problem(await api(request(`/profiles/${id}`)), 400);
});

test("fabric: GET /fabric/stats answers the node's FabricStats and takes no query", async () => {
  const { api } = setup();
  assert.deepEqual(await ok<FabricStats>(await api(request('/fabric/stats'))), FABRIC_STATS);
  await problem(await api(request('/fabric/stats?x=1')), 400);
});

test('fabric: POST /profiles without the token is 401, with another type 415, too large 413, a bad shape or a bound broken 400; none reaches the book', async () => {
  const { api, node } = setup();
  await problem(await api(post('/profiles', BODY, { 'content-type': 'application/json' })), 401);
  await problem(await api(post('/profiles', BODY, { ...AUTH, 'content-type': 'text/plain' })), 415);
  const huge = { ...BODY, pad: 'x'.repeat(MAX_PROFILE_BODY_BYTES) };
  await problem(await api(post('/profiles', huge)), 413);
  const bad: [string, unknown][] = [
    ['node_id given', { ...BODY, node_id: SELF }],
    ['signature given', { ...BODY, signature: '00' }],
    ['missing storage', { ...BODY, storage: undefined }],
    ['string cores', { ...BODY, cpu: { ...BODY.cpu, cores: '4' } }],
    ['negative measured_at', { ...BODY, measured_at: -1 }],
    ['fractional total_mb', { ...BODY, memory: { ...BODY.memory, total_mb: 1.5 } }],
    ['no cores', { ...BODY, cpu: { ...BODY.cpu, cores: 0 } }],
    ['negative free storage', { ...BODY, storage: { ...BODY.storage, free_gb: -1 } }],
    ['unknown backend', { ...BODY, gpus: [{ model: 'x', backend: 'OpenCL', vram_mb: 1, fp16_tflops: null }] }],
    ['a JSON array', [BODY]],
  ];
  for (const [what, body] of bad) {
    const p = await problem(await api(post('/profiles', body)), 400);
    assert.equal(p.type, '/problems/invalid-body', what);
  }
  assert.equal(node.measurement.profiles.size, 0);
});

test("fabric: the node's refusals are answered from ProfileError's table: stale 400, not newer 409", async () => {
  const { api, node } = setup();
  node.measurement.profileError = new ProfileError('stale', 'measured_at is 2 days old');
  assert.equal((await problem(await api(post('/profiles', BODY)), 400)).rule, 'stale');
  node.measurement.profileError = new ProfileError('not-newer', 'a later profile is held');
  assert.equal((await problem(await api(post('/profiles', BODY)), 409)).type, '/problems/profile-conflict');
});
