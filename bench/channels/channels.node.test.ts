/**
 * The channels benchmark's machinery: the options parse, the goals and the report read the figures
 * right, and one small `--quick` run end to end writes nothing. No speed is asserted.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { captureOutput } from '../../test/capture-output.ts';
import { runBench } from '../cli.ts';
import { beginMarker, endMarker, resultPaths, writeReport } from '../lib/results.ts';
import { CONCURRENT, HOST_ACCEPT, HOST_ACCEPT_MANY, PAYER_SIGN, RAW_SIGN, RAW_VERIFY, RAW_VERIFY_MANY, type Row, UNSYNCED } from './cases.ts';
import { parseChannelsBenchArgs } from './node.ts';
import { CHANNELS_REPORT, type ChannelsReport, evaluateChannelsGoals, renderChannelsSection } from './report.ts';

test('options: defaults, --quick defaults, and refusals', () => {
  const full = parseChannelsBenchArgs([]);
  assert.deepEqual({ samples: full.samples, receipts: full.receipts, write: full.write }, { samples: 9, receipts: 500, write: true });
  const quick = parseChannelsBenchArgs(['--quick']);
  assert.deepEqual({ samples: quick.samples, receipts: quick.receipts, write: quick.write }, { samples: 3, receipts: 50, write: false });
  assert.equal(parseChannelsBenchArgs(['--quick', '--write']).write, true);
  assert.equal(parseChannelsBenchArgs(['--receipts', '10', '--samples', '1']).receipts, 10);
  assert.throws(() => parseChannelsBenchArgs(['--receipts', '5']), /--receipts takes an integer from 10/);
  assert.throws(() => parseChannelsBenchArgs(['--samples', '0']), /--samples/);
  assert.throws(() => parseChannelsBenchArgs(['--runtime', 'deno']), RangeError);
});

function row(name: string, medianUs: number, versus: string | null, baseUs = medianUs): Row {
  return {
    name,
    role: versus === null ? 'baseline' : 'core',
    medianNs: medianUs * 1000,
    opsPerSec: 1e6 / medianUs,
    samplesNs: [medianUs * 1000],
    iterations: 100,
    versus,
    share: baseUs / medianUs,
  };
}

function fakeReport(payerUs: number, writesPerReceipt: number | null): ChannelsReport {
  return {
    command: 'npx mesh bench channels',
    date: '2026-11-24T09:00:00.000Z',
    quick: false,
    machine: { cpu: 'Test CPU', cores: 2, os: 'linux 6' },
    node: { version: '24.0.0', v8: '13', openssl: '3' },
    channels: {
      samples: 9,
      opsPerSample: 500,
      rows: [
        row(RAW_SIGN, 60, null),
        row(PAYER_SIGN, payerUs, RAW_SIGN, 60),
        row(RAW_VERIFY, 100, null),
        row('LevelDB: a synced write of one record alone', 400, RAW_VERIFY, 100),
        row(HOST_ACCEPT, 520, RAW_VERIFY, 100),
        row(HOST_ACCEPT + UNSYNCED, 160, RAW_VERIFY, 100),
        row(RAW_VERIFY_MANY, 50, null),
        row(HOST_ACCEPT_MANY, 80, RAW_VERIFY_MANY, 50),
      ],
      writesPerReceipt,
    },
    source: { commit: 'abc1234', modified: [] },
    elapsedMs: 20_000,
  };
}

test("channels goals: the payer against half of raw signing, the host's writes against one per 10 receipts; n/a when unmeasured", () => {
  const met = evaluateChannelsGoals(fakeReport(100, 0.04));
  assert.deepEqual(
    met.map((g) => g.met),
    [true, true],
  );
  assert.equal(met[0]!.detail, '10,000/s (100 µs a receipt) against 16,667/s (60.0 µs): 60 %');
  assert.match(met[1]!.detail, /^0\.040 writes per receipt \(one per 25 receipts\); the host took 12,500\/s$/);
  const missed = evaluateChannelsGoals(fakeReport(130, 0.2));
  assert.deepEqual(
    missed.map((g) => g.met),
    [false, false],
  );
  const none = evaluateChannelsGoals({ ...fakeReport(100, null), channels: null });
  assert.deepEqual(
    none.map((g) => g.met),
    [null, null],
  );
});

test('channels report: the section and the JSON are written, other sections kept byte for byte', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-channels-bench-test-'));
  try {
    const markdown = join(dir, 'RESULTS.md');
    const json = join(dir, 'results', 'channels.json');
    const other = `${beginMarker('jobs')}\n## Jobs\n\nkept | as is\n${endMarker('jobs')}\n`;
    await writeFile(markdown, `# Results\n\n${other}`);
    const report = { ...fakeReport(100, 0.04), othersCpu: 0.3 };
    const goals = await writeReport(CHANNELS_REPORT, report, { markdown, json });
    const text = await readFile(markdown, 'utf8');
    assert.ok(text.startsWith(`# Results\n\n${other}`), 'the jobs section is untouched');
    const section = text.slice(text.indexOf(beginMarker('channels')), text.indexOf(endMarker('channels')));
    assert.ok(section.includes(renderChannelsSection(report, goals).trim()));
    assert.match(section, /1\. ✅ met: one payer node signs receipts/);
    assert.match(section, /Other processes took 30 % of the machine's CPU time while this was measured/);
    assert.match(section, /\| {3}payer: sign a receipt \(ChannelPayer\.sign\) \| 100 µs \| 10,000\/s \| 60 % \|/);
    assert.match(section, new RegExp(`With ${CONCURRENT} channels at once, .*: 0\\.040 writes per receipt in this run\\.`));
    const saved = JSON.parse(await readFile(json, 'utf8')) as ChannelsReport & { goals: unknown[] };
    assert.equal(saved.channels!.rows.length, 8);
    assert.equal(saved.goals.length, 2);
    await writeReport(CHANNELS_REPORT, report, { markdown, json });
    assert.equal(await readFile(markdown, 'utf8'), text, 'a second run replaces its own section and nothing else');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('mesh bench channels --quick: a small run end to end, writing nothing', async () => {
  const { markdown, json } = resultPaths('channels');
  const before = await Promise.all([markdown, json].map((p) => readFile(p, 'utf8').catch(() => null)));
  const { result: code, output: said } = await captureOutput(process.stdout, () => runBench(['channels', '--quick', '--samples', '1', '--receipts', '10']));
  assert.equal(code, 0, said);
  assert.match(said, /130 channels open from the payer to two hosts/);
  assert.match(said, /payer: sign a receipt \(ChannelPayer\.sign\) +\S+ [µm]s/);
  assert.match(said, /host: verify and store, 64 channels at once +\S+ [µm]s/);
  assert.match(said, /quick run: bench\/RESULTS\.md and bench\/results\/channels\.json left as they were/);
  assert.deepEqual(await Promise.all([markdown, json].map((p) => readFile(p, 'utf8').catch(() => null))), before);
});
