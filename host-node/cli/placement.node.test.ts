/**
 * `mesh kill` in-process against the node's real HTTP API over the fake node: the job named by the
 * start of its id, as `mesh jobs ls` shows it.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FakeNode, JOB, JOB_ID } from '../../core/api/fake-node.test-util.ts';
import { type FakeApi, serveFakeApi } from './fake-api.test-util.ts';
import { killCommand } from './placement.ts';

const HOST = 'cd'.repeat(32);
let api: FakeApi;

before(async () => {
  api = await serveFakeApi();
});
after(() => api.close());

const kill = (job: string, fresh = new FakeNode()): ReturnType<FakeApi['run']> => api.run(killCommand, 'mesh kill', [HOST, job, ...api.common], fresh);

test('mesh kill takes the start of a job id and sends the whole id', async () => {
  const fake = new FakeNode();
  const killed = await kill('0b0b', fake);
  assert.equal(killed.code, 0, killed.err);
  assert.deepEqual(
    fake.placement.placementCalls.map((c) => c.request.jobId),
    [JOB_ID],
  );
  assert.equal(killed.err, `killed ${JOB_ID.slice(0, 16)}… on ${HOST.slice(0, 16)}…\n`);
});

test('mesh kill: a prefix of several jobs, or of none of this node, is exit 1 and sends nothing', async () => {
  const fake = new FakeNode();
  const twin = `0b0b${'f'.repeat(60)}`;
  fake.jobs.jobs.set(twin, { ...JOB, job_id: twin });
  const several = await kill('0b0b', fake);
  assert.deepEqual(
    [several.code, several.err],
    [1, `mesh kill: 2 jobs have ids starting with 0b0b (${JOB_ID.slice(0, 16)}, ${twin.slice(0, 16)}): give more of the id\n`],
  );
  const none = await kill('f833', fake);
  assert.equal(none.code, 1);
  assert.match(none.err, /^mesh kill: no job whose id starts with f833 among this node's \(a job another node paid for takes its whole id\)\n$/);
  assert.deepEqual(fake.placement.placementCalls, []);
  const whole = await kill('ff'.repeat(32), fake);
  assert.equal(whole.code, 0, 'a whole id goes to the host as it is');
});
