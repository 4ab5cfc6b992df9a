/**
 * The messaging benchmark's machinery: the options parse, the goals and the report read the figures
 * right, and one small `--quick` run end to end on real node processes writes nothing. No speed is
 * asserted.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { captureOutput } from '../../test/capture-output.ts';
import { runBench } from '../cli.ts';
import { beginMarker, endMarker, resultPaths, writeReport } from '../lib/results.ts';
import type { ThroughputRound } from './cases.ts';
import { parseMessagingBenchArgs } from './node.ts';
import { evaluateMessagingGoals, MESSAGING_REPORT, type MessagingReport, renderMessagingSection } from './report.ts';

const dir = await mkdtemp(join(tmpdir(), 'mesh-messaging-bench-test-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

test('options: defaults, --quick defaults, and refusals', () => {
  const full = parseMessagingBenchArgs([]);
  assert.deepEqual(
    { messages: full.messages, count: full.count, rounds: full.rounds, concurrency: full.concurrency, batch: full.batch, size: full.size, write: full.write },
    { messages: 1_000, count: 20_000, rounds: 3, concurrency: 32, batch: 1024, size: 1024, write: true },
  );
  const quick = parseMessagingBenchArgs(['--quick']);
  assert.deepEqual(
    { messages: quick.messages, count: quick.count, rounds: quick.rounds, write: quick.write },
    { messages: 100, count: 2_000, rounds: 1, write: false },
  );
  assert.equal(parseMessagingBenchArgs(['--quick', '--write']).write, true);
  assert.equal(parseMessagingBenchArgs(['--messages', '0', '--count', '0']).count, 0);
  assert.throws(() => parseMessagingBenchArgs(['--size', '4']), /--size takes an integer from 8 to 65536/);
  assert.throws(() => parseMessagingBenchArgs(['--concurrency', '0']), /--concurrency/);
  assert.throws(() => parseMessagingBenchArgs(['--batch', '1025']), /--batch/);
  assert.throws(() => parseMessagingBenchArgs(['--blocks', '5']), RangeError);
});

function round(batchedMs: number, bareMs: number, rpcMs = 2 * bareMs): ThroughputRound {
  return { batchedMs, batchedJsonMs: 1.5 * batchedMs, bareMs, rpcMs, singleMs: 3 * batchedMs, laneMs: batchedMs / 2, batchedCpuMs: { a: 500, b: 400 } };
}

function fakeReport(events: number[], rounds: ThroughputRound[]): MessagingReport {
  return {
    command: 'npx mesh bench messaging',
    date: '2026-11-24T09:00:00.000Z',
    quick: false,
    machine: { cpu: 'Test CPU', cores: 2, os: 'linux 6' },
    node: { version: '24.0.0' },
    othersShare: 0.01,
    latency: events.length === 0 ? null : { size: 1024, warmup: 20, samples: events.map((eventMs) => ({ eventMs, postMs: eventMs + 1 })) },
    throughput: rounds.length === 0 ? null : { count: 1_000, size: 1024, concurrency: 32, batch: 256, rounds },
    source: { commit: 'abc1234', modified: [] },
    elapsedMs: 60_000,
  };
}

test("goals: median under 10 ms, p99 under 50 ms, messages at least half the bare stream's rate; n/a when unmeasured", () => {
  // 100 samples: 98 of 4 ms, then 40 and 60 ms: p99 is the 99th, 40 ms.
  const events = [...Array.from({ length: 98 }, () => 4), 40, 60];
  const good = evaluateMessagingGoals(fakeReport(events, [round(1_000, 1_500), round(1_100, 1_800), round(900, 1_600)]));
  assert.deepEqual(
    good.map((g) => g.met),
    [true, true, true],
  );
  assert.equal(good[0]!.detail, 'median 4.00 ms over 100 messages of 1024 bytes');
  assert.equal(good[1]!.detail, 'p99 40.0 ms, worst 60.0 ms');
  // Medians: messages 1000/s, bare 625/s (as rates: 1000, 909, 1111 → 1000; bare 667, 556, 625 → 625);
  // the share is the median of each round's: 1.5, 1.64, 1.78 → 163.6 %, not 1000/625.
  assert.match(
    good[2]!.detail,
    /^1000 messages\/s against the bare stream's 625\/s: 163\.6 % \(medians of 3 rounds of 1000 messages, the share taken in each round; 256 a POST, 4 POSTs at a time\)$/,
  );
  const bad = evaluateMessagingGoals(fakeReport([12, 12, 70], [round(10_000, 100)]));
  assert.deepEqual(
    bad.map((g) => g.met),
    [false, false, false],
  );
  assert.match(bad[2]!.detail, /^100 messages\/s against the bare stream's 10000\/s: 1\.0 %/);
  assert.deepEqual(
    evaluateMessagingGoals(fakeReport([], [])).map((g) => g.met),
    [null, null, null],
  );
});

test('report: the section and the JSON are written, other sections kept byte for byte', async () => {
  const markdown = join(dir, 'RESULTS.md');
  const json = join(dir, 'results', 'messaging.json');
  const jobs = `${beginMarker('jobs')}\n## Jobs\n\nkept | as is\n${endMarker('jobs')}\n`;
  await writeFile(markdown, `# Results\n\n${jobs}`);
  const report = fakeReport([4, 5, 6], [round(1_000, 100, 500)]);
  const goals = await writeReport(MESSAGING_REPORT, report, { markdown, json });
  const text = await readFile(markdown, 'utf8');
  assert.ok(text.startsWith(`# Results\n\n${jobs}`), 'the jobs section is untouched');
  const section = text.slice(text.indexOf(beginMarker('messaging')), text.indexOf(endMarker('messaging')));
  assert.ok(section.includes(renderMessagingSection(report, goals).trim()));
  assert.match(section, /\| \*\*POST on A → the event on B's stream\*\* \| 5\.00 ms \| 6\.00 ms \| 6\.00 ms \| 4\.00 ms \| 6\.00 ms \|/);
  assert.match(section, /\| \*\*messages: POST \/mesh\/send-batch on A as bytes \(256 a POST\) → B's stream\*\* \| 1000 \| 1\.02 \| 0\.100 \|/);
  assert.match(section, /\| messages: POST \/mesh\/send-batch on A as JSON \(256 a POST\) → B's stream \| 667 \| 0\.68 \| 0\.067 \|/);
  // The single POSTs carry a tenth as many messages (100 here) in three times the batched way's time.
  assert.match(section, /\| messages: POST \/mesh\/send on A \(one a POST\) → B's stream \| 33 \| 0\.03 \| 0\.003 \|/);
  assert.match(section, /\| messages from inside A \(its lane to B, no HTTP into A\), to B's acknowledgement \| 2000 \| 2\.05 \| 0\.200 \|/);
  assert.match(section, /\| one bare libp2p stream, length-prefixed frames \(ref\) \| 10000 \| 10\.24 \| 1\.000 \|/);
  assert.match(section, /CPU per message while the batched API carried them as bytes: A 500 µs, B 400 µs/);
  const saved = JSON.parse(await readFile(json, 'utf8')) as MessagingReport & { goals: unknown[] };
  assert.equal(saved.goals.length, 3);
  await writeReport(MESSAGING_REPORT, report, { markdown, json });
  assert.equal(await readFile(markdown, 'utf8'), text, 'a second run replaces its own section and nothing else');
});

test('mesh bench messaging --quick: a small run on real node processes end to end, writing nothing', async () => {
  const { markdown, json } = resultPaths('messaging');
  const before = await Promise.all([markdown, json].map((p) => readFile(p, 'utf8').catch(() => null)));
  const { result: code, output: said } = await captureOutput(process.stdout, () => runBench(['messaging', '--quick', '--messages', '20', '--count', '100']));
  assert.equal(code, 0, said);
  assert.match(said, /POST on A → event on B: median [\d.]+ ms, p99 [\d.]+ ms/);
  assert.match(
    said,
    /round 1: batched \d+\/s \(CPU a message: A \d+ µs, B \d+ µs\), batched as JSON \d+\/s, bare stream \d+\/s \(\d+ %\), one per POST \d+\/s, lane without HTTP \d+\/s, network-port requests \d+\/s/,
  );
  assert.match(said, /quick run: bench\/RESULTS\.md and bench\/results\/messaging\.json left as they were/);
  assert.deepEqual(await Promise.all([markdown, json].map((p) => readFile(p, 'utf8').catch(() => null))), before);
});
