// The /jobs routes in-process, over the fake compute market: every answer, every refusal, and that a
// refused request never reaches the service. Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../../test/harness.ts';
import { InvalidEncodingError } from '../../errors.ts';
import { JobError } from '../../jobs/errors.ts';
import { decodeSpec, encodeSpec, SPEC_LIMITS, specOf } from '../../jobs/spec.ts';
import type { JobRequest, JobSummary, LogEvent } from '../../jobs/types.ts';
import { LedgerRuleError } from '../../ledger/apply.ts';
import { AUTH, BAD_IDS, JSON_POST, ok, post, problem, readUntil, request, setup } from '../api.test-util.ts';
import { CONTAINER_ID, EXPIRE_TX_ID, JOB, JOB_ID, JOB_LINES } from '../fake-node.test-util.ts';
import { jobRequest } from '../input.ts';

const BID = { image: 'localhost/busybox:test', cpu_cores: 1, mem_mb: 64, duration_secs: 60, bid: '1500000000000000000' };
const SIG = 'a5'.repeat(64);
const DIGEST = `sha256:${'3f'.repeat(32)}`;

function del(path: string, headers: Record<string, string> = AUTH): Request {
  return request(path, { method: 'DELETE', headers });
}

// ---------------------------------------------------------------------------------------------
// POST /jobs/bid

test('jobs: POST /jobs/bid answers 201 {job_id} and passes the bid with its defaults filled in', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(post('/jobs/bid', BID)), 201), { job_id: JOB_ID });
  const full = {
    ...BID,
    image: `registry.example.com:5000/team/app-x__y.z:v1.2-rc_3@${DIGEST}`,
    cmd: ['sh', '-c', 'echo "$GREETING"'],
    env: [
      ['GREETING', 'hello = world'],
      ['_X1', ''],
    ],
    bid: 42,
    billing: 'heartbeat',
    gpus: 2,
  };
  await ok(await api(post('/jobs/bid', full)), 201);
  const expected: JobRequest[] = [
    { image: BID.image, cmd: null, env: [], cpuCores: 1, memMb: 64, durationSecs: 60, gpus: 0, bid: 1_500_000_000_000_000_000n, billing: 'settle' },
    {
      image: full.image,
      cmd: full.cmd,
      env: [
        ['GREETING', 'hello = world'],
        ['_X1', ''],
      ],
      cpuCores: 1,
      memMb: 64,
      durationSecs: 60,
      gpus: 2,
      bid: 42n,
      billing: 'heartbeat',
    },
  ];
  assert.deepEqual(
    node.jobs.jobCalls,
    expected.map((request) => ({ method: 'bidJob' as const, args: [request] })),
  );
});

test('jobs: image references follow the Docker grammar', async () => {
  const { api, node } = setup();
  const good = [
    'busybox',
    'library/ubuntu:22.04',
    'localhost:5000/a/b/c',
    'Registry.Example-1.com/x',
    `ubuntu@${DIGEST}`,
    `a:${'t'.repeat(128)}`,
    'a.b_c__d---e',
    'x'.repeat(255),
  ];
  for (const image of good) await ok(await api(post('/jobs/bid', { ...BID, image })), 201);
  const bad = [
    '',
    'Busybox',
    'busybox:',
    ':tag',
    'bad image',
    'a//b',
    'a/',
    '/a',
    '-a',
    'a-',
    'a..b',
    'a___b',
    'host:port/x',
    'busybox@sha256:abc',
    `busybox@sha512:${'3f'.repeat(32)}`,
    `busybox@sha256:${'3F'.repeat(32)}`,
    `a:${'t'.repeat(129)}`,
    'a:-tag',
    'x'.repeat(256),
    'https://registry/x',
  ];
  for (const image of bad) {
    const body = await problem(await api(post('/jobs/bid', { ...BID, image })), 400);
    assert.deepEqual(
      (body.errors as { name: string }[]).map((e) => e.name),
      ['image'],
      image,
    );
  }
  assert.equal(node.jobs.jobCalls.length, good.length, 'no bad image reached the service');
});

test('jobs: POST /jobs/bid refuses every bad field with one 400 naming them all, before the service', async () => {
  const { api, node } = setup();
  const longWord = 'é'.repeat(2049);
  const cases: [Record<string, unknown>, string][] = [
    [{ cpu_cores: 0 }, 'cpu_cores'],
    [{ cpu_cores: 1025 }, 'cpu_cores'],
    [{ cpu_cores: 1.5 }, 'cpu_cores'],
    [{ cpu_cores: '1' }, 'cpu_cores'],
    [{ mem_mb: 0 }, 'mem_mb'],
    [{ mem_mb: 3 }, 'mem_mb'],
    [{ mem_mb: 1_048_577 }, 'mem_mb'],
    [{ duration_secs: 0 }, 'duration_secs'],
    [{ duration_secs: 2_592_001 }, 'duration_secs'],
    [{ duration_secs: -5 }, 'duration_secs'],
    [{ bid: '0' }, 'bid'],
    [{ bid: 0 }, 'bid'],
    [{ bid: 1.5 }, 'bid'],
    [{ bid: '1.5' }, 'bid'],
    [{ bid: '1e3' }, 'bid'],
    [{ bid: '-1' }, 'bid'],
    [{ bid: '+1' }, 'bid'],
    [{ bid: '340282366920938463463374607431768211456' }, 'bid'],
    [{ bid: 2 ** 53 }, 'bid'],
    [{ cmd: [] }, 'cmd'],
    [{ cmd: 'sh -c x' }, 'cmd'],
    [{ cmd: ['a\0b'] }, 'cmd.0'],
    [{ cmd: ['ok', longWord] }, 'cmd.1'],
    [{ cmd: Array.from({ length: 257 }, () => 'x') }, 'cmd'],
    [{ cmd: [1] }, 'cmd.0'],
    [{ env: [['1A', 'x']] }, 'env.0.0'],
    [{ env: [['A-B', 'x']] }, 'env.0.0'],
    [{ env: [['A', 'x\0']] }, 'env.0.1'],
    [{ env: [['A']] }, 'env.0.1'],
    [{ env: [['A', 'x', 'y']] }, 'env.0.2'],
    [{ env: { A: 'x' } }, 'env'],
    [
      {
        env: [
          ['A', 'x'],
          ['A', 'y'],
        ],
      },
      'env',
    ],
    [{ env: Array.from({ length: 257 }, (_, i) => [`V${i}`, '']) }, 'env'],
    [{ billing: 'monthly' }, 'billing'],
    [{ gpus: 17 }, 'gpus'],
    [{ gpus: -1 }, 'gpus'],
    [{ image: undefined }, 'image'],
    [{ bid: undefined }, 'bid'],
    [{ host: 'b2'.repeat(32) }, 'host'],
  ];
  for (const [change, field] of cases) {
    const body = await problem(await api(post('/jobs/bid', { ...BID, ...change })), 400);
    assert.equal(body.type, '/problems/invalid-body', JSON.stringify(change).slice(0, 80));
    assert.deepEqual(
      (body.errors as { name: string }[]).map((e) => e.name),
      [field],
      JSON.stringify(change).slice(0, 80),
    );
  }
  const many = await problem(await api(post('/jobs/bid', { ...BID, image: 'Bad', cpu_cores: 0, bid: '0' })), 400);
  assert.deepEqual(
    (many.errors as { name: string }[]).map((e) => e.name),
    ['image', 'cpu_cores', 'bid'],
  );
  assert.deepEqual(node.jobs.jobCalls, []);
  // At the bounds.
  const edges = [
    { mem_mb: 4, cpu_cores: 1024, duration_secs: 2_592_000, gpus: 16, bid: '340282366920938463463374607431768211455' },
    { mem_mb: 1_048_576, gpus: 0, cmd: Array.from({ length: 256 }, () => 'x'), env: Array.from({ length: 256 }, (_, i) => [`V${i}`, '']) },
    { cmd: ['x'.repeat(4096)] },
  ];
  for (const change of edges) await ok(await api(post('/jobs/bid', { ...BID, ...change })), 201);
  assert.equal(node.jobs.jobCalls.length, edges.length);
});

// The largest bid the spec codec can write: every string at its byte bound (in characters of 2,
// 3 and 4 bytes too), every list at its count.
const LARGEST = {
  ...BID,
  image: `localhost/${'b'.repeat(SPEC_LIMITS.imageBytes - 'localhost/'.length)}`,
  cmd: Array.from({ length: SPEC_LIMITS.cmdItems }, (_, i) => ['x'.repeat(4096), 'é'.repeat(2048), `${'€'.repeat(1365)}x`, '😀'.repeat(1024)][i % 4]!),
  env: Array.from({ length: SPEC_LIMITS.envPairs }, (_, i) => [`V${i}_`.padEnd(SPEC_LIMITS.envKeyBytes, 'K'), '😀'.repeat(SPEC_LIMITS.envValueBytes / 4)]),
};
const utf8Bytes = (text: string): number => new TextEncoder().encode(text).length;

test('jobs: POST /jobs/bid takes the largest body the spec codec writes, at every bound', async () => {
  assert.equal(utf8Bytes(LARGEST.image), SPEC_LIMITS.imageBytes);
  assert.deepEqual([...new Set(LARGEST.cmd.map(utf8Bytes))], [SPEC_LIMITS.cmdItemBytes]);
  assert.deepEqual([...new Set(LARGEST.env.flat().map(utf8Bytes))], [SPEC_LIMITS.envKeyBytes, SPEC_LIMITS.envValueBytes]);
  const spec = specOf(jobRequest(LARGEST));
  assert.deepEqual(decodeSpec(encodeSpec(spec)), spec);
  // Over HTTP, with room for its 2 MiB.
  const { api, node } = setup({ maxBodyBytes: 4 << 20 });
  await ok(await api(post('/jobs/bid', LARGEST)), 201);
  assert.lengthOf(node.jobs.jobCalls, 1);
  assert.deepEqual(decodeSpec(encodeSpec(specOf(node.jobs.jobCalls[0]!.args[0] as JobRequest))), spec);
});

test('jobs: POST /jobs/bid refuses one past any spec bound, a lone surrogate or NUL with 400 naming the field, before the service', async () => {
  const { api, node } = setup({ maxBodyBytes: 4 << 20 });
  const pair = (key: string, value: string): string[][] => LARGEST.env.map((p, i) => (i === 7 ? [key, value] : p));
  const word = (text: string): string[] => LARGEST.cmd.map((w, i) => (i === 9 ? text : w));
  // [change, field, whether the spec codec refuses it too (a bound it shares, or no UTF-8 form)]
  const cases: [Record<string, unknown>, string, boolean][] = [
    [{ image: `localhost/${'b'.repeat(SPEC_LIMITS.imageBytes - 'localhost/'.length + 1)}` }, 'image', true],
    [{ cmd: [...LARGEST.cmd, 'x'] }, 'cmd', true],
    [{ cmd: word(`${'é'.repeat(2048)}x`) }, 'cmd.9', true],
    [{ cmd: word(`${'😀'.repeat(1024)}x`) }, 'cmd.9', true],
    [{ cmd: word('\ud800') }, 'cmd.9', true],
    [{ cmd: word('a\udc00b') }, 'cmd.9', true],
    [{ cmd: word('\udc00\ud800') }, 'cmd.9', true],
    [{ cmd: word('a\0') }, 'cmd.9', false],
    [{ env: [...LARGEST.env, ['EXTRA', '']] }, 'env', true],
    [{ env: pair('K'.repeat(SPEC_LIMITS.envKeyBytes + 1), 'x') }, 'env.7.0', true],
    [{ env: pair('A', 'x'.repeat(SPEC_LIMITS.envValueBytes + 1)) }, 'env.7.1', true],
    [{ env: pair('A', '€'.repeat(1366)) }, 'env.7.1', true],
    [{ env: pair('A', '\ud800') }, 'env.7.1', true],
    [{ env: pair('A', '\0') }, 'env.7.1', false],
    [{ env: pair('\ud800', 'x') }, 'env.7.0', true],
  ];
  for (const [change, field, codecRefuses] of cases) {
    const body = { ...LARGEST, ...change };
    const what = `${field} ${JSON.stringify(change).slice(0, 60)}`;
    const answer = await problem(await api(post('/jobs/bid', body)), 400);
    assert.equal(answer.type, '/problems/invalid-body', what);
    assert.deepEqual(
      (answer.errors as { name: string }[]).map((e) => e.name),
      [field],
      what,
    );
    // Unchecked, the spec codec would have thrown on it in the node: the 500 this rule prevents.
    const unchecked: JobRequest = { ...jobRequest(BID), image: body.image, cmd: body.cmd, env: body.env as [string, string][] };
    if (codecRefuses) assert.throws(() => encodeSpec(specOf(unchecked)), InvalidEncodingError, undefined, what);
  }
  assert.deepEqual(node.jobs.jobCalls, []);
});

test("jobs: POST /jobs/bid maps the node's refusals: 402 for the free balance, 503 when no host took it", async () => {
  const { api, node } = setup();
  const cases: [unknown, number, string][] = [
    [new LedgerRuleError('insufficient-free-balance', 'bid of 5 exceeds the free balance of 1'), 402, 'insufficient-balance'],
    [new JobError('no-host', 'no host took the job: b2…: no gpu'), 503, 'no-host'],
  ];
  for (const [error, status, code] of cases) {
    node.jobs.jobError = error;
    const body = await problem(await api(post('/jobs/bid', BID)), status);
    assert.equal(body.type, `/problems/${code}`);
    assert.equal(body.rule, (error as JobError).code);
  }
});

// ---------------------------------------------------------------------------------------------
// Reads

test('jobs: GET /jobs lists summaries; GET /jobs/:id the whole job; an unknown job is 404', async () => {
  const { api, node } = setup();
  const rows = await ok<JobSummary[]>(await api(request('/jobs')));
  assert.deepEqual(rows, [
    { job_id: JOB_ID, status: 'settled', payer: JOB.payer, host: JOB.host, role: 'payer', container_id: CONTAINER_ID, cost: JOB.cost, bid: JOB.bid },
  ]);
  assert.deepEqual(await ok(await api(request(`/jobs/${JOB_ID}`))), JOB);
  const other = 'ff'.repeat(32);
  assert.equal((await problem(await api(request(`/jobs/${other}`)), 404)).type, '/problems/unknown-job');
  assert.equal((await problem(await api(request(`/jobs/${other}/logs`)), 404)).type, '/problems/unknown-job');
  assert.equal((await problem(await api(request(`/jobs/${other}/logs?follow=1`)), 404)).type, '/problems/unknown-job');
  assert.equal(node.jobs.logFollowers.size, 0);
  await problem(await api(request('/jobs?status=running')), 400);
});

test('jobs: a malformed job id is 400 naming job_id on every route, before the service', async () => {
  const { api, node } = setup();
  for (const [what, id] of BAD_IDS) {
    for (const call of [
      request(`/jobs/${id}`),
      request(`/jobs/${id}/logs`),
      post(`/jobs/${id}/settle`, { cost: '1', payer_sig: SIG }),
      post(`/jobs/${id}/expire`, {}),
    ]) {
      const body = await problem(await api(call), 400);
      assert.deepEqual(
        (body.errors as { name: string }[]).map((e) => e.name),
        ['job_id'],
        `${what} ${call.method} ${call.url}`,
      );
    }
  }
  assert.deepEqual(node.jobs.jobCalls, []);
});

test('jobs: GET /jobs/:id/logs answers {lines, ended} after `after`; bad parameters are 400', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(request(`/jobs/${JOB_ID}/logs`))), { lines: JOB_LINES, ended: true });
  assert.deepEqual(await ok(await api(request(`/jobs/${JOB_ID}/logs?after=1&follow=0`))), { lines: JOB_LINES.slice(1), ended: true });
  assert.deepEqual(
    node.jobs.jobCalls.map((c) => c.args),
    [
      [JOB_ID, 0],
      [JOB_ID, 1],
    ],
  );
  node.jobs.jobCalls.length = 0;
  for (const query of [
    'after=-1',
    'after=1.5',
    'after=x',
    'after=',
    'after=01',
    'after=99999999999999999999',
    'follow=yes',
    'follow=',
    'since=3',
    'after=1&after=2',
  ]) {
    assert.equal((await problem(await api(request(`/jobs/${JOB_ID}/logs?${query}`)), 400)).status, 400, query);
  }
  await problem(await api(request(`/jobs/${JOB_ID}/logs`, { headers: { 'last-event-id': 'abc' } })), 400);
  assert.deepEqual(node.jobs.jobCalls, []);
});

// ---------------------------------------------------------------------------------------------
// The log stream

const frame = (line: LogEvent): string => `id: ${line.seq}\ndata: ${JSON.stringify(line)}\n\n`;
const END = 'event: end\ndata: {}\n\n';

test('jobs: ?follow=1 streams each line with its seq as the event id, then an end frame, and closes', async () => {
  const { api } = setup();
  const response = await api(request(`/jobs/${JOB_ID}/logs?follow=1`));
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'text/event-stream');
  assert.equal(await response.text(), JOB_LINES.map(frame).join('') + END);
});

test('jobs: a live stream carries lines as they come and ends when the output is complete', async () => {
  const { api, node } = setup();
  node.jobs.linesEnded = false;
  const response = await api(request(`/jobs/${JOB_ID}/logs?follow=1`));
  const reader = response.body!.getReader();
  assert.equal(await readUntil(reader, '\n\n', 2), JOB_LINES.map(frame).join(''));
  const [follower] = node.jobs.logFollowers;
  const third: LogEvent = { seq: 3, stream: 'stdout', text: 'more', at: 1_700_000_006_000 };
  follower!.listener(third);
  assert.equal(await readUntil(reader, '\n\n'), frame(third));
  follower!.end();
  assert.equal(await readUntil(reader, '\n\n'), END);
  assert.isTrue((await reader.read()).done);
  assert.equal(node.jobs.logFollowers.size, 0, 'unsubscribed at the end');
});

test('jobs: a reconnect resumes after its Last-Event-ID; `after` wins over it; leaving unsubscribes', async () => {
  const { api, node } = setup();
  const resumed = await api(request(`/jobs/${JOB_ID}/logs?follow=1`, { headers: { 'last-event-id': '1' } }));
  assert.equal(await resumed.text(), frame(JOB_LINES[1]!) + END);
  const explicit = await api(request(`/jobs/${JOB_ID}/logs?follow=1&after=2`, { headers: { 'last-event-id': '1' } }));
  assert.equal(await explicit.text(), END);
  assert.deepEqual(
    node.jobs.jobCalls.filter((c) => c.method === 'followJobLogs').map((c) => c.args),
    [
      [JOB_ID, 1],
      [JOB_ID, 2],
    ],
  );
  node.jobs.linesEnded = false;
  const live = await api(request(`/jobs/${JOB_ID}/logs?follow=1&after=2`));
  assert.equal(node.jobs.logFollowers.size, 1);
  await live.body!.cancel();
  assert.equal(node.jobs.logFollowers.size, 0);
});

// ---------------------------------------------------------------------------------------------
// Settle, expire, stop

test('jobs: POST /jobs/:id/settle answers 202 {job_id, cost} (a cost of 0 too) and passes cost and signature', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(post(`/jobs/${JOB_ID}/settle`, { cost: '750000000000000000', payer_sig: SIG })), 202), {
    job_id: JOB_ID,
    cost: '750000000000000000',
  });
  assert.deepEqual(await ok(await api(post(`/jobs/${JOB_ID}/settle`, { cost: 0, payer_sig: SIG })), 202), { job_id: JOB_ID, cost: '0' });
  assert.deepEqual(
    node.jobs.jobCalls.map((c) => c.args),
    [
      [JOB_ID, 750_000_000_000_000_000n, SIG],
      [JOB_ID, 0n, SIG],
    ],
  );
});

test('jobs: POST /jobs/:id/settle refuses a bad signature format or cost with 400, before the service', async () => {
  const { api, node } = setup();
  const bodies: [unknown, string][] = [
    [{ cost: '1', payer_sig: SIG.slice(1) }, 'payer_sig'],
    [{ cost: '1', payer_sig: `${SIG}00` }, 'payer_sig'],
    [{ cost: '1', payer_sig: SIG.toUpperCase() }, 'payer_sig'],
    [{ cost: '1', payer_sig: 'zz'.repeat(64) }, 'payer_sig'],
    [{ cost: '1', payer_sig: 5 }, 'payer_sig'],
    [{ cost: '1' }, 'payer_sig'],
    [{ cost: '-1', payer_sig: SIG }, 'cost'],
    [{ cost: 1.5, payer_sig: SIG }, 'cost'],
    [{ cost: '340282366920938463463374607431768211456', payer_sig: SIG }, 'cost'],
    [{ payer_sig: SIG }, 'cost'],
    [{ cost: '1', payer_sig: SIG, host: 'x' }, 'host'],
  ];
  for (const [body, field] of bodies) {
    const answer = await problem(await api(post(`/jobs/${JOB_ID}/settle`, body)), 400);
    assert.deepEqual(
      (answer.errors as { name: string }[]).map((e) => e.name),
      [field],
      JSON.stringify(body),
    );
  }
  assert.deepEqual(node.jobs.jobCalls, []);
});

test('jobs: settle and expire map JobError: verify failure 400, unknown job 404, wrong state 409', async () => {
  const { api, node } = setup();
  const cases: [JobError, number, string, 'settle' | 'expire'][] = [
    [new JobError('bad-signature', 'payer_sig does not verify'), 400, 'invalid-signature', 'settle'],
    [new JobError('cost-exceeds-bid', 'cost above the bid'), 400, 'invalid-body', 'settle'],
    [new JobError('unknown-job', 'no such job'), 404, 'unknown-job', 'settle'],
    [new JobError('wrong-state', 'the job is running'), 409, 'job-conflict', 'settle'],
    [new JobError('not-expired', '12 blocks to go'), 409, 'job-conflict', 'expire'],
    [new JobError('wrong-role', 'only the payer expires'), 409, 'job-conflict', 'expire'],
    [new JobError('unknown-job', 'no such job'), 404, 'unknown-job', 'expire'],
  ];
  for (const [error, status, code, route] of cases) {
    node.jobs.jobError = error;
    const body = await problem(await api(post(`/jobs/${JOB_ID}/${route}`, route === 'settle' ? { cost: '1', payer_sig: SIG } : {})), status);
    assert.equal(body.type, `/problems/${code}`, error.code);
    assert.equal(body.rule, error.code);
  }
});

test('jobs: POST /jobs/:id/expire takes no body or {} and answers 202 {tx_id}', async () => {
  const { api, node } = setup();
  const empty = request(`/jobs/${JOB_ID}/expire`, { method: 'POST', headers: AUTH });
  assert.deepEqual(await ok(await api(empty), 202), { tx_id: EXPIRE_TX_ID });
  assert.deepEqual(await ok(await api(post(`/jobs/${JOB_ID}/expire`, {})), 202), { tx_id: EXPIRE_TX_ID });
  assert.deepEqual(await ok(await api(post(`/jobs/${JOB_ID}/expire`, '')), 202), { tx_id: EXPIRE_TX_ID });
  assert.equal(node.jobs.jobCalls.length, 3);
  await problem(await api(post(`/jobs/${JOB_ID}/expire`, { force: true })), 400);
  await problem(await api(post(`/jobs/${JOB_ID}/expire`, [])), 400);
  await problem(await api(post(`/jobs/${JOB_ID}/expire`, 'x', { ...AUTH, 'content-type': 'text/plain' })), 415);
  assert.equal(node.jobs.jobCalls.length, 3);
});

test('jobs: DELETE /jobs/:id stops a job by job id, container id, id prefix or name: 204, or 404', async () => {
  const { api, node } = setup();
  for (const ref of [JOB_ID, CONTAINER_ID, CONTAINER_ID.slice(0, 12)]) {
    const response = await api(del(`/jobs/${ref}`));
    assert.equal(response.status, 204, ref);
    assert.isNull(response.body);
  }
  for (const ref of ['mesh-job-0b0b0b0b0b0b0b0b', CONTAINER_ID.slice(0, 11), 'ff'.repeat(32)]) {
    assert.equal((await problem(await api(del(`/jobs/${ref}`)), 404)).type, '/problems/unknown-job', ref);
  }
  assert.deepEqual(
    node.jobs.jobCalls.map((c) => c.args[0]),
    [JOB_ID, CONTAINER_ID, CONTAINER_ID.slice(0, 12), 'mesh-job-0b0b0b0b0b0b0b0b', CONTAINER_ID.slice(0, 11), 'ff'.repeat(32)],
  );
  node.jobs.jobCalls.length = 0;
  for (const ref of ['a%20b', 'x'.repeat(129), 'mesh;rm', '-x', '.x', 'a%2Fb', '%00']) {
    const body = await problem(await api(del(`/jobs/${ref}`)), 400);
    assert.deepEqual(
      (body.errors as { name: string }[]).map((e) => e.name),
      ['job_id'],
      ref,
    );
  }
  assert.deepEqual(node.jobs.jobCalls, []);
});

test('jobs: POST and DELETE need the bearer token (401), and reach nothing without it', async () => {
  const { api, node } = setup();
  const noToken = { 'content-type': 'application/json' };
  const calls = [
    post('/jobs/bid', BID, noToken),
    post(`/jobs/${JOB_ID}/settle`, { cost: '1', payer_sig: SIG }, noToken),
    post(`/jobs/${JOB_ID}/expire`, {}, noToken),
    del(`/jobs/${JOB_ID}`, {}),
    del(`/jobs/${JOB_ID}`, { authorization: 'Bearer wrong' }),
  ];
  for (const call of calls) assert.equal((await problem(await api(call), 401)).type, '/problems/unauthorized', `${call.method} ${call.url}`);
  assert.deepEqual(node.jobs.jobCalls, []);
  // Reads need none; POST on a read is 405.
  await ok(await api(request('/jobs')));
  assert.equal((await api(post('/jobs', {}, JSON_POST))).headers.get('allow'), 'GET, HEAD, OPTIONS');
  assert.equal((await api(request(`/jobs/${JOB_ID}`, { method: 'OPTIONS' }))).headers.get('allow'), 'GET, HEAD, DELETE, OPTIONS');
});
