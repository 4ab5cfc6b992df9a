/**
 * The jobs benchmark's machinery: the options parse, the goals and the report read the figures
 * right, and one small `--quick` run end to end on real node processes and the Podman service
 * writes nothing. No speed is asserted.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CREDIT } from '../../core/encoding/amount.ts';
import { captureOutput } from '../../test/capture-output.ts';
import { runBench } from '../cli.ts';
import { beginMarker, endMarker, resultPaths, writeReport } from '../lib/results.ts';
import { type Balances, type BareSample, balancesExact, blocksToSettle, type JobBatch, type JobSample } from './cases.ts';
import { parseJobsBenchArgs } from './node.ts';
import { evaluateJobsGoals, JOBS_REPORT, type JobsReport, renderJobsSection, shellWords } from './report.ts';

const dir = await mkdtemp(join(tmpdir(), 'mesh-jobs-bench-test-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

test('options: defaults, --quick defaults, and refusals', () => {
  const full = parseJobsBenchArgs([]);
  assert.deepEqual(
    { runs: full.runs, concurrent: full.concurrent, interval: full.blockIntervalMs, write: full.write, quick: full.quick },
    { runs: 9, concurrent: 20, interval: 1_000, write: true, quick: false },
  );
  const quick = parseJobsBenchArgs(['--quick']);
  assert.deepEqual({ runs: quick.runs, concurrent: quick.concurrent, write: quick.write }, { runs: 3, concurrent: 4, write: false });
  assert.equal(parseJobsBenchArgs(['--quick', '--write']).write, true);
  assert.deepEqual(parseJobsBenchArgs(['--runs', '0', '--concurrent', '0', '--block-interval-ms', '500']), {
    ...parseJobsBenchArgs([]),
    runs: 0,
    concurrent: 0,
    blockIntervalMs: 500,
  });
  assert.throws(() => parseJobsBenchArgs(['--runs', '-1']), /--runs/);
  assert.throws(() => parseJobsBenchArgs(['--concurrent', '201']), /--concurrent takes an integer from 0 to 200/);
  assert.throws(() => parseJobsBenchArgs(['--block-interval-ms', '50']), /--block-interval-ms/);
  assert.throws(() => parseJobsBenchArgs(['--blocks', '5']), RangeError);
});

test('shell words, blocks to settle, and exact balances', () => {
  assert.equal(shellWords(['sh', '-c', 'echo x; sleep 1']), "sh -c 'echo x; sleep 1'");
  assert.equal(shellWords(['echo', "it's"]), "echo 'it'\\''s'");
  assert.equal(blocksToSettle(job({ settleHeight: 12, firstBlockAfterExit: 11 })), 2);
  assert.equal(blocksToSettle(job({ settleHeight: 11, firstBlockAfterExit: 11 })), 1);
  assert.equal(blocksToSettle(job({ exitMs: null, firstBlockAfterExit: null })), null);
  assert.equal(balancesExact(balances()), true);
  assert.equal(balancesExact({ ...balances(), hostDelta: '99' }), false);
  assert.equal(balancesExact({ ...balances(), lockedBids: '1' }), false);
});

function bare(startMs: number, extra: Partial<BareSample> = {}): BareSample {
  return { startMs, engineStartedMs: startMs - 10, exitNoticeMs: 900, ...extra };
}

/** A job running 400 ms after its bid, exiting 1 s later, settled in the second block after. */
function job(extra: Partial<JobSample> = {}): JobSample {
  return {
    jobId: 'ab'.repeat(32),
    postMs: 20,
    hostRunningMs: 400,
    payerRunningMs: 420,
    engineStartedMs: 390,
    exitMs: 1_400,
    hostEndedMs: 2_300,
    payerEndedMs: 2_350,
    settlePooledMs: 2_380,
    settledBlockMs: 3_100,
    payerSettledMs: 3_110,
    settleHeight: 12,
    firstBlockAfterExit: 11,
    cost: (CREDIT / 6n).toString(),
    ...extra,
  };
}

function balances(): Balances {
  return {
    hostDelta: '990',
    hostExpected: '990',
    payerDelta: '3999000',
    payerExpected: '3999000',
    burnedDelta: '10',
    burnedExpected: '10',
    lockedBids: '0',
    costs: ['500', '500'],
  };
}

function batch(extra: Partial<JobBatch> = {}): JobBatch {
  return {
    count: 2,
    allRunningMs: 1_500,
    allSettledMs: 4_000,
    heights: [30, 34],
    settleHeights: [34, 34],
    hostCpuMs: 200,
    hostIdleCpuPerSec: 10,
    othersShareBefore: 0.01,
    payerCpuMs: 150,
    engineCpuMs: 800,
    machineCpuMs: 5_000,
    balances: balances(),
    ...extra,
  };
}

function fakeReport(bares: BareSample[], jobs: JobSample[], withBatch: JobBatch | null = batch()): JobsReport {
  return {
    command: 'npx mesh bench jobs',
    date: '2026-11-24T09:00:00.000Z',
    quick: false,
    machine: { cpu: 'Test CPU', cores: 2, os: 'linux 6' },
    node: { version: '24.0.0' },
    engine: { engine: 'podman 4.3.1', runtime: 'runc', sandboxed: false },
    blockIntervalMs: 1_000,
    job: { image: 'localhost/busybox:test', cmd: ['sh', '-c', 'echo x; sleep 1'], cpuCores: 1, memMb: 64, bid: (10n * CREDIT).toString(), durationSecs: 60 },
    pollMs: 20,
    othersShare: 0.02,
    sequential: bares.length === 0 && jobs.length === 0 ? null : { bare: bares, jobs, warmup: 1, blockGapMs: 1_010 },
    batch: withBatch === null ? null : { bare: { count: 2, allStartedMs: 600, allExitedMs: 2_000, engineCpuMs: 700, machineCpuMs: 3_000 }, jobs: withBatch },
    source: { commit: 'abc1234', modified: [] },
    elapsedMs: 90_000,
  };
}

test("jobs goals: the market's part of bid → running against a block + 1 s, blocks to settle against 2, exact balances; n/a when unmeasured", () => {
  const report = fakeReport([bare(300), bare(320), bare(310)], [job(), job({ hostRunningMs: 500 }), job({ settleHeight: 13 })]);
  const goals = evaluateJobsGoals(report);
  assert.deepEqual(
    goals.map((g) => g.met),
    [true, true, true],
  );
  // Medians: jobs 400 ms, bare 310 ms.
  assert.match(
    goals[0]!.detail,
    /^bid → running on the host 400 ms vs bare 310 ms: \+90\.0 ms, 1\.29×; to the engine's StartedAt 390 ms vs 300 ms \(medians of 3 runs\)$/,
  );
  assert.match(goals[0]!.title, /within one block interval \+ 1 s \(2000 ms on the devnet of 1000 ms blocks\)/);
  // Blocks 2, 2, 3; exit → block 1700 ms each.
  assert.match(goals[1]!.detail, /^median 2 blocks, worst 3 \(1 of 3 runs over 2\); exit → the JobSettle's block median 1700 ms, 1\.70× the block interval$/);
  assert.match(
    goals[2]!.detail,
    /^all 2 settled 4\.00 s after the first bid \(2 bare containers at once: all exited in 2\.00 s, 2\.00×\); the host's CPU 100 ms per job;/,
  );

  const missed = evaluateJobsGoals(
    fakeReport([bare(300)], [job({ hostRunningMs: 2_400, settleHeight: 14 })], batch({ balances: { ...balances(), hostDelta: '989' } })),
  );
  assert.deepEqual(
    missed.map((g) => g.met),
    [false, false, false],
  );
  assert.match(missed[2]!.detail, /host \+0\.000000000000000989 credits against Σ \(cost − burn\) 0\.00000000000000099/);

  const none = evaluateJobsGoals(fakeReport([], [], null));
  assert.deepEqual(
    none.map((g) => g.met),
    [null, null, null],
  );
  // No exit time read for any job: the second goal cannot be judged, the first still can.
  const noExit = evaluateJobsGoals(fakeReport([bare(300)], [job({ exitMs: null, firstBlockAfterExit: null })], null));
  assert.deepEqual(
    noExit.map((g) => g.met),
    [true, null, null],
  );
});

test('jobs report: the section and the JSON are written, other sections kept byte for byte', async () => {
  const markdown = join(dir, 'RESULTS.md');
  const json = join(dir, 'results', 'jobs.json');
  const mesh = `${beginMarker('mesh')}\n## Mesh nodes\n\nkept | as is\n${endMarker('mesh')}\n`;
  await writeFile(markdown, `# Results\n\n${mesh}`);
  const report = fakeReport([bare(300), bare(320), bare(310)], [job(), job({ hostRunningMs: 500 }), job({ exitMs: null, firstBlockAfterExit: null })]);
  const goals = await writeReport(JOBS_REPORT, report, { markdown, json });
  const text = await readFile(markdown, 'utf8');
  assert.ok(text.startsWith(`# Results\n\n${mesh}`), 'the mesh section is untouched');
  const section = text.slice(text.indexOf(beginMarker('jobs')), text.indexOf(endMarker('jobs')));
  assert.ok(section.includes(renderJobsSection(report, goals).trim()));
  assert.match(section, /runs `localhost\/busybox:test` with `sh -c 'echo x; sleep 1'`/);
  assert.match(section, /Other processes on the machine kept 2% of its 2 cores busy while the benchmark waited before the runs and 1% before the batch\./);
  assert.match(section, /\| \*\*job: bid → running on the host\*\* \| 400 ms \| 400 ms \| 500 ms \| 1\.29 \|/);
  assert.match(section, /\| \*\*job: exit → the block holding the JobSettle\*\* \| 1700 ms \| 1700 ms \| 1700 ms \| 1\.70 \|/);
  assert.match(section, /Blocks from the exit to the JobSettle's block: 2 blocks: 2 runs\. The payer's blocks came 1010 ms apart/);
  assert.match(section, /1 of 3 jobs are left out: the host removed the container before its FinishedAt was read/);
  assert.match(section, /\| the host's balance \| \+0\.00000000000000099 \| Σ \(cost − burn\) = 0\.00000000000000099 \| exact \|/);
  assert.match(section, /The JobSettles went into block 34 \(the payer was at height 30 when it bid\)/);
  const saved = JSON.parse(await readFile(json, 'utf8')) as JobsReport & { goals: unknown[] };
  assert.equal(saved.sequential!.jobs.length, 3);
  assert.equal(saved.goals.length, 3);
  await writeReport(JOBS_REPORT, report, { markdown, json });
  assert.equal(await readFile(markdown, 'utf8'), text, 'a second run replaces its own section and nothing else');
});

test('mesh bench jobs --quick: a small run on real nodes and Podman end to end, writing nothing', async () => {
  const { markdown, json } = resultPaths('jobs');
  const results = [markdown, json];
  const before = await Promise.all(results.map((p) => readFile(p, 'utf8').catch(() => null)));
  const { result: code, output: said } = await captureOutput(process.stdout, () => runBench(['jobs', '--quick', '--runs', '1', '--concurrent', '2']));
  assert.equal(code, 0, said);
  assert.match(said, /run 1: job running on the host \d+ ms after its bid/);
  assert.match(said, /run 1: bare container started in \d+ ms/);
  assert.match(said, /2 jobs: all running in .* s, all settled in .* s after the first bid/);
  // Exact balances are not a speed: they must hold on any machine.
  assert.match(said, /met {2}2 jobs at once on one host all settle with exact balances/);
  assert.match(said, /quick run: bench\/RESULTS\.md and bench\/results\/jobs\.json left as they were/);
  assert.deepEqual(await Promise.all(results.map((p) => readFile(p, 'utf8').catch(() => null))), before);
});
