/**
 * `mesh jobs` in-process against the node's real HTTP API (createNodeApi served by serveFetch) over
 * the fake compute market: what each command sends, prints and exits with.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { BOB, CONTAINER_ID, EXPIRE_TX_ID, FakeNode, JOB, JOB_ID } from '../../core/api/fake-node.test-util.ts';
import type { JobRequest, JobStatus, JobView } from '../../core/jobs/types.ts';
import { type FakeApi, serveFakeApi } from './fake-api.test-util.ts';
import { jobsCommand } from './jobs.ts';

let api: FakeApi;
let node: FakeNode;

before(async () => {
  api = await serveFakeApi();
});
after(() => api.close());

/** Runs `mesh jobs …args` (the client options before any `--`); its exit code and output. */
async function mesh(args: string[], fresh: FakeNode = new FakeNode()): Promise<{ code: number; out: string; err: string }> {
  node = fresh;
  const end = args.indexOf('--');
  const line = end < 0 ? [...args, ...api.common] : [...args.slice(0, end), ...api.common, ...args.slice(end)];
  return api.run(jobsCommand, 'mesh jobs', line, fresh);
}

function withJob(change: Partial<JobView>): FakeNode {
  const fake = new FakeNode();
  fake.jobs.jobs.set(JOB_ID, { ...JOB, ...change });
  return fake;
}

const RUN = ['run', 'localhost/busybox:test', '--cpu', '2', '--mem', '64', '--duration', '60', '--bid', '1.5'];

test('mesh jobs run bids in base units, the command after --, env pairs in order, and prints the job id', async () => {
  const full = await mesh([...RUN, '--env', 'A=1', '--env', 'B=x=y', '--gpus', '1', '--heartbeat', '--', 'sh', '-c', 'echo "$A" --cpu']);
  assert.equal(full.code, 0, full.err);
  assert.equal(full.out, `${JOB_ID}\n`);
  const request: JobRequest = {
    image: 'localhost/busybox:test',
    cmd: ['sh', '-c', 'echo "$A" --cpu'],
    env: [
      ['A', '1'],
      ['B', 'x=y'],
    ],
    cpuCores: 2,
    memMb: 64,
    durationSecs: 60,
    gpus: 1,
    bid: 1_500_000_000_000_000_000n,
    billing: 'heartbeat',
  };
  assert.deepEqual(node.jobs.jobCalls, [{ method: 'bidJob', args: [request] }]);
  const plain = await mesh([...RUN, '--json']);
  assert.equal(plain.code, 0, plain.err);
  assert.deepEqual(JSON.parse(plain.out), { job_id: JOB_ID });
  assert.deepEqual(node.jobs.jobCalls, [{ method: 'bidJob', args: [{ ...request, cmd: null, env: [], gpus: 0, billing: 'settle' }] }]);
});

test('mesh jobs run --follow prints the output on its streams, then the end: exit 0 only when settled with exit code 0', async () => {
  const settled = await mesh([...RUN, '--follow']);
  assert.equal(settled.code, 0, settled.err);
  assert.equal(settled.out, 'hi\n');
  assert.equal(settled.err, `job ${JOB_ID}, bid 1.5 credits\nwarning: none\njob 0b0b0b0b0b0b0b0b settled, exit code 0, cost 0.75 of 1.5 credits\n`);
  const failedExit = await mesh([...RUN, '-f'], withJob({ exit_code: 3 }));
  assert.equal(failedExit.code, 1);
  assert.match(failedExit.err, /settled, exit code 3, cost 0\.75 of 1\.5 credits\n$/);
  const failed = await mesh([...RUN, '-f'], withJob({ status: 'failed: image not found', exit_code: null, cost: null }));
  assert.equal(failed.code, 1);
  assert.match(failed.err, /job 0b0b0b0b0b0b0b0b failed: image not found\n$/);
  const json = await mesh([...RUN, '-f', '--json']);
  assert.equal(json.code, 0);
  assert.deepEqual(JSON.parse(json.out.slice('hi\n'.length)), JOB);
});

test('mesh jobs run --follow waits while the job runs, taking its output as it comes, until its end', async () => {
  const fake = withJob({ status: 'running', cost: null, exit_code: null });
  fake.jobs.linesEnded = false;
  setTimeout(() => {
    for (const follower of fake.jobs.logFollowers) {
      follower.listener({ seq: 3, stream: 'stdout', text: 'later', at: 0 });
      follower.end();
    }
    fake.jobs.jobs.set(JOB_ID, JOB);
  }, 300);
  const run = await mesh([...RUN, '--follow'], fake);
  assert.equal(run.code, 0, run.err);
  assert.equal(run.out, 'hi\nlater\n');
  assert.ok(fake.jobs.jobCalls.filter((c) => c.method === 'getJob').length >= 2, 'asked again until the job ended');
});

test("mesh jobs run --follow says while the job waits where it is and each host's latest reason as it changes, and ends with the reasons", async () => {
  const A = 'a1'.repeat(32);
  const B = 'b2'.repeat(32);
  const waiting = { status: 'pending', host: null, started_at: null, finished_at: null, exit_code: null, cost: null, container_id: null } as const;
  const fake = withJob({ ...waiting, refusals: [] });
  fake.jobs.lines = [];
  fake.jobs.linesEnded = false;
  const set = (change: Partial<JobView>): void => void fake.jobs.jobs.set(JOB_ID, { ...fake.jobs.jobs.get(JOB_ID)!, ...change });
  const long = `image not allowed: docker.io/library/${'x'.repeat(120)}`;
  setTimeout(() => set({ refusals: [{ host: A, reason: 'needs 4 cores, 2 free', at: 1 }] }), 300);
  setTimeout(
    () =>
      set({
        refusals: [
          { host: A, reason: 'needs 4 cores, 2 free', at: 1 },
          { host: B, reason: long, at: 2 },
        ],
      }),
    1_300,
  );
  setTimeout(
    () =>
      set({
        refusals: [
          { host: A, reason: 'needs 4 cores, 1 free', at: 3 },
          { host: B, reason: long, at: 2 },
        ],
      }),
    2_300,
  );
  setTimeout(() => {
    set({ status: 'failed: no host took the job within 600 s (2 hosts asked)' });
    for (const follower of fake.jobs.logFollowers) follower.end();
  }, 3_300);
  const run = await mesh([...RUN, '--follow'], fake);
  assert.equal(run.code, 1);
  assert.equal(run.out, '');
  const lines = run.err.split('\n');
  assert.deepEqual(lines.slice(0, 5), [
    `job ${JOB_ID}, bid 1.5 credits`,
    'waiting for a host',
    `  ${A.slice(0, 16)}: needs 4 cores, 2 free`,
    `  ${B.slice(0, 16)}: ${long.slice(0, 100 - 20 - 1)}…`,
    `  ${A.slice(0, 16)}: needs 4 cores, 1 free`,
  ]);
  assert.ok(
    lines.every((line) => line.length <= 100 || line.includes(long)),
    'the lines as it waits fit 100 columns',
  );
  // It ends with every host's reason, whole, then the outcome.
  assert.match(run.err, new RegExp(`refused by 2 hosts:\n  ${A.slice(0, 16)}  \\S+  needs 4 cores, 1 free\n  ${B.slice(0, 16)}  \\S+  ${long}\n`));
  assert.match(run.err, /job 0b0b0b0b0b0b0b0b failed: no host took the job within 600 s \(2 hosts asked\)\n$/);
});

test('mesh jobs run --follow on a terminal (a pty): the waiting job and its reasons show as they come', async () => {
  const A = 'a1'.repeat(32);
  const fake = withJob({ status: 'pending', host: null, started_at: null, finished_at: null, exit_code: null, cost: null, container_id: null, refusals: [] });
  fake.jobs.lines = [];
  fake.jobs.linesEnded = false;
  const set = (change: Partial<JobView>): void => void fake.jobs.jobs.set(JOB_ID, { ...fake.jobs.jobs.get(JOB_ID)!, ...change });
  api.serve(fake);
  const line = [process.execPath, 'bin/mesh.js', 'jobs', ...RUN, '--follow', ...api.common].map((w) => `'${w}'`).join(' ');
  const child = spawn('script', ['-qfec', line, '/dev/null'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let screen = '';
  child.stdout.on('data', (chunk: Buffer) => {
    screen += chunk.toString();
  });
  const until = async (what: RegExp): Promise<void> => {
    for (let i = 0; i < 300 && !what.test(screen); i++) await delay(50);
    assert.match(screen, what);
  };
  await until(/waiting for a host\r\n/);
  set({ refusals: [{ host: A, reason: 'image not allowed: docker.io/library/alpine:3', at: 1 }] });
  await until(new RegExp(`  ${A.slice(0, 16)}: image not allowed: docker.io/library/alpine:3\r\n`));
  set({ status: 'failed: no host took the job within 600 s (1 host asked)' });
  for (const follower of fake.jobs.logFollowers) follower.end();
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 1, screen);
  assert.match(screen, /refused by 1 host:\r\n/);
  assert.match(screen, /failed: no host took the job within 600 s \(1 host asked\)\r\n$/);
});

test('mesh jobs run refuses a bad bid or spec with exit 2 before asking the node', async () => {
  const cases: [string[], RegExp][] = [
    [['--bid', '0'], /--bid must be more than 0/],
    [['--bid', '1e3'], /--bid "1e3" has an exponent/],
    [['--cpu', '0'], /--cpu takes an integer from 1 to 1024, got "0"/],
    [['--mem', '3'], /--mem takes an integer from 4 to 1048576/],
    [['--duration', '2592001'], /--duration takes an integer from 1 to 2592000/],
    [['--env', '1A=x'], /--env takes KEY=VALUE/],
    [['--env', 'NOEQUALS'], /--env takes KEY=VALUE/],
  ];
  for (const [change, message] of cases) {
    const args = [...RUN];
    const at = args.indexOf(change[0]!);
    if (at >= 0) args.splice(at, 2, ...change);
    else args.push(...change);
    const refused = await mesh(args);
    assert.equal(refused.code, 2, change.join(' '));
    assert.match(refused.err, /^mesh jobs run: /);
    assert.match(refused.err, message);
    assert.match(refused.err, /Usage: mesh jobs run <image> --cpu N --mem MB --duration S --bid CREDITS \[options\] \[-- <cmd>\.\.\.\]/);
    assert.deepEqual(node.jobs.jobCalls, []);
  }
});

test("mesh jobs run: the node's refusal is one line and exit 1", async () => {
  const broke = new FakeNode();
  const { LedgerRuleError } = await import('../../core/ledger/apply.ts');
  broke.jobs.jobError = new LedgerRuleError('insufficient-free-balance', 'bid of 1.5 exceeds the free balance of 0');
  const refused = await mesh(RUN, broke);
  assert.equal(refused.code, 1);
  assert.equal(refused.err, 'mesh jobs run: Insufficient free balance (402): bid of 1.5 exceeds the free balance of 0\n');
});

test('mesh jobs ls shows id and host prefixes and amounts in credits; --json the answer as it is', async () => {
  const fake = new FakeNode();
  const other = 'aa'.repeat(32);
  fake.jobs.jobs.set(other, { ...JOB, job_id: other, status: 'pending', role: 'payer', host: null, cost: null, bid: '2000000000000000000' });
  const listed = await mesh(['ls'], fake);
  assert.equal(listed.code, 0, listed.err);
  assert.deepEqual(listed.out.split('\n'), [
    'JOB               ROLE   STATUS   BID  COST  HOST',
    `0b0b0b0b0b0b0b0b  payer  settled  1.5  0.75  ${BOB.slice(0, 16)}`,
    'aaaaaaaaaaaaaaaa  payer  pending  2    -     -',
    '',
  ]);
  const json = await mesh(['ls', '--json']);
  assert.equal(JSON.parse(json.out)[0].bid, '1500000000000000000');
  const none = new FakeNode();
  none.jobs.jobs.clear();
  assert.deepEqual(await mesh(['ls'], none), { code: 0, out: '', err: 'no jobs\n' });
});

test('mesh jobs ls fits 100 columns, cutting a long status with …; --json gives it whole', async () => {
  const fake = new FakeNode();
  const status: JobStatus = `failed: ${'the image is not allowed on this host; '.repeat(8).trim()}`;
  fake.jobs.jobs.set(JOB_ID, { ...JOB, status });
  const lines = (await mesh(['ls'], fake)).out.trimEnd().split('\n');
  assert.ok(
    lines.every((line) => line.length <= 100),
    lines.join('\n'),
  );
  assert.match(lines[1]!, /^0b0b0b0b0b0b0b0b  payer  failed: the image is not allowed on this host[^…]*…  1\.5  0\.75  [0-9a-f]{16}$/);
  assert.equal(JSON.parse((await mesh(['ls', '--json'], fake)).out)[0].status, status);
});

test('mesh jobs show prints the job readable, found by the start of its id; refusals one a line', async () => {
  const shown = await mesh(['show', '0b0b']);
  assert.equal(shown.code, 0, shown.err);
  assert.match(shown.out, new RegExp(`^job id +${JOB_ID}$`, 'm'));
  assert.match(shown.out, /^command +sh -c 'echo hi'$/m);
  assert.match(shown.out, /^resources +1 cpu, 64 MiB, 0 gpu, up to 60 s$/m);
  assert.match(shown.out, /^bid +1\.5 credits$/m);
  assert.match(shown.out, /^cost +0\.75 credits$/m);
  assert.match(shown.out, /^started +2023-11-14T22:13:22Z$/m);
  assert.match(shown.out, /^refused by 1 host:\n {2}1a1a1a1a1a1a1a1a {2}2023-11-14T22:13:21Z {2}no gpu$/m);
  const json = await mesh(['show', JOB_ID, '--json']);
  assert.deepEqual(JSON.parse(json.out), JOB);
});

test('an unknown job is exit 1 with the problem line; a bad id is exit 2', async () => {
  const unknown = await mesh(['show', 'ff'.repeat(32)]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /^mesh jobs show: Unknown job \(404\): this node has no job or container "f+"\n$/);
  const noPrefix = await mesh(['logs', 'ffff']);
  assert.deepEqual([noPrefix.code, noPrefix.err], [1, 'mesh jobs logs: no job whose id starts with ffff\n']);
  const bad = await mesh(['show', 'XYZ']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /<job> must be a job id or its first characters/);
});

test('mesh jobs logs prints the output on its streams; -f follows it to its end', async () => {
  for (const args of [
    ['logs', JOB_ID],
    ['logs', '0b', '-f'],
  ]) {
    const logs = await mesh(args);
    assert.equal(logs.code, 0, logs.err);
    assert.deepEqual([logs.out, logs.err], ['hi\n', 'warning: none\n'], args.join(' '));
  }
});

test('mesh jobs stop answers 204 by job id, id prefix or container id; an unknown one is exit 1', async () => {
  for (const ref of [JOB_ID, '0b0b', CONTAINER_ID.slice(0, 12)]) {
    const stopped = await mesh(['stop', ref]);
    assert.equal(stopped.code, 0, stopped.err);
    assert.equal(stopped.err, `stopped ${ref === '0b0b' ? JOB_ID : ref}\n`);
    assert.equal(node.jobs.jobCalls.at(-1)?.method, 'stopJob');
  }
  const unknown = await mesh(['stop', 'mesh-job-ffffffffffffffff']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /^mesh jobs stop: Unknown job \(404\)/);
  assert.equal((await mesh(['stop', 'a b'])).code, 2);
});

test('mesh jobs stop of a job no host started says its bid comes back, in credits', async () => {
  const stopped = await mesh(['stop', '0b0b'], withJob({ status: 'pending', host: null, started_at: null, cost: null }));
  assert.equal(stopped.code, 0, stopped.err);
  assert.equal(stopped.err, `stopped ${JOB_ID}\nits bid of 1.5 credits is back in the free balance within 10 blocks of the bid (mesh status shows it)\n`);
  assert.equal(node.jobs.jobCalls.at(-1)?.method, 'stopJob');
});

test('mesh jobs stop: the start of several job ids is exit 1, never taken for a container', async () => {
  const fake = new FakeNode();
  const twin = `0b0b${'f'.repeat(60)}`;
  fake.jobs.jobs.set(twin, { ...JOB, job_id: twin });
  const stopped = await mesh(['stop', '0b0b'], fake);
  assert.equal(stopped.code, 1);
  assert.match(stopped.err, /^mesh jobs stop: 2 jobs have ids starting with 0b0b \(0b0b0b0b0b0b0b0b, 0b0bffffffffffff\): give more of the id\n$/);
  assert.deepEqual(
    fake.jobs.jobCalls.map((c) => c.method),
    ['listJobs'],
    'nothing stopped',
  );
});

test('mesh jobs expire prints the JobExpire transaction id', async () => {
  const expired = await mesh(['expire', JOB_ID]);
  assert.equal(expired.code, 0, expired.err);
  assert.equal(expired.out, `${EXPIRE_TX_ID}\n`);
  assert.deepEqual(node.jobs.jobCalls, [{ method: 'expireJob', args: [JOB_ID] }]);
});

test('mesh jobs run --follow: a job that ran and failed is awaited until it has settled what it used', async () => {
  const fake = withJob({ status: 'failed: memory limit of 16 MiB hit (exit 137)', exit_code: 137, cost: null, started_at: 1_795_480_000 });
  setTimeout(() => fake.jobs.jobs.set(JOB_ID, { ...fake.jobs.jobs.get(JOB_ID)!, cost: '27975000000000000' }), 1_500);
  const run = await mesh([...RUN, '--follow'], fake);
  assert.equal(run.code, 1);
  assert.match(run.err, /failed: memory limit of 16 MiB hit \(exit 137\), exit code 137, cost 0\.027975 of 1\.5 credits\n$/);
});
