/**
 * The tunnel benchmark's machinery: the options parse, the goal and the report read the figures
 * right, and one small `--quick` run end to end on real peer processes writes nothing. No speed is
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
import type { Case, Sample } from './cases.ts';
import { parseTunnelBenchArgs } from './node.ts';
import type { Direction } from './peer.ts';
import { evaluateTunnelGoals, renderTunnelSection, TUNNEL_REPORT, type TunnelReport } from './report.ts';

const dir = await mkdtemp(join(tmpdir(), 'mesh-tunnel-bench-test-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

const MIB = 1024 * 1024;

test('options: defaults, --quick defaults, and refusals', () => {
  const full = parseTunnelBenchArgs([]);
  assert.deepEqual(
    { runs: full.runs, mib: full.mib, write: full.write, quick: full.quick, prof: full.cpuProfDir },
    { runs: 7, mib: 64, write: true, quick: false, prof: null },
  );
  const quick = parseTunnelBenchArgs(['--quick']);
  assert.deepEqual({ runs: quick.runs, mib: quick.mib, write: quick.write }, { runs: 2, mib: 8, write: false });
  assert.equal(parseTunnelBenchArgs(['--quick', '--write']).write, true);
  assert.deepEqual({ ...parseTunnelBenchArgs(['--runs', '3', '--mib', '16']) }, { ...full, runs: 3, mib: 16 });
  assert.throws(() => parseTunnelBenchArgs(['--runs', '0']), /--runs/);
  assert.throws(() => parseTunnelBenchArgs(['--mib', '5000']), /--mib takes an integer from 1 to 4096/);
  assert.throws(() => parseTunnelBenchArgs(['--size', '5']), RangeError);
});

/** Samples of `bytes` each, taking `ms` per case and direction: 64 MiB in 500 ms is 134 MB/s. */
function samples(ms: Partial<Record<`${Case} ${Direction}`, number[]>>): Sample[] {
  return Object.entries(ms).flatMap(([key, values]) => {
    const [kind, direction] = key.split(' ') as [Case, Direction];
    return values!.map((v) => ({ case: kind, direction, bytes: 64 * MIB, ms: v, cpuMs: kind === 'tcp' ? null : { a: 200, b: 120 } }));
  });
}

function fakeReport(measured: Sample[]): TunnelReport {
  return {
    command: 'npx mesh bench tunnel',
    date: '2026-11-24T09:00:00.000Z',
    quick: false,
    machine: { cpu: 'Test CPU', cores: 2, os: 'linux 6' },
    node: { version: '24.0.0' },
    bytes: 64 * MIB,
    runs: 3,
    othersShare: 0.02,
    samples: measured,
    source: { commit: 'abc1234', modified: [] },
    elapsedMs: 30_000,
  };
}

const FIGURES = {
  'libp2p up': [500, 520, 480],
  'port up': [510, 500, 530],
  'tunnel up': [900, 800, 1_000],
  'tcp up': [100, 100, 100],
  'libp2p down': [400, 400, 400],
  'port down': [420, 410, 400],
  'tunnel down': [700, 700, 800],
  'tcp down': [100, 100, 100],
};

test("tunnel goal: the tunnel's median over the bare stream's, each way; missed when either way is under half; n/a when unmeasured", () => {
  const [goal] = evaluateTunnelGoals(fakeReport(samples(FIGURES)));
  assert.equal(goal!.met, true);
  // Up: 64 MiB in 900 ms is 75 MB/s, in 500 ms 134 MB/s: 56%. Down: 96 MB/s vs 168 MB/s: 57%.
  assert.equal(goal!.detail, 'A → B 75 MB/s vs 134 MB/s: 56%; B → A 96 MB/s vs 168 MB/s: 57% (medians of 3 runs of 64 MiB)');
  const [missed] = evaluateTunnelGoals(fakeReport(samples({ ...FIGURES, 'tunnel down': [900, 900, 900] })));
  assert.equal(missed!.met, false);
  assert.match(missed!.detail, /B → A 75 MB\/s vs 168 MB\/s: 44%/);
  assert.equal(evaluateTunnelGoals(fakeReport(samples({ 'libp2p up': [500] })))[0]!.met, null);
});

test('tunnel report: the section and the JSON are written, other sections kept byte for byte', async () => {
  const markdown = join(dir, 'RESULTS.md');
  const json = join(dir, 'results', 'tunnel.json');
  const jobs = `${beginMarker('jobs')}\n## Jobs\n\nkept | as is\n${endMarker('jobs')}\n`;
  await writeFile(markdown, `# Results\n\n${jobs}`);
  const report = fakeReport(samples(FIGURES));
  const goals = await writeReport(TUNNEL_REPORT, report, { markdown, json });
  const text = await readFile(markdown, 'utf8');
  assert.ok(text.startsWith(`# Results\n\n${jobs}`), 'the jobs section is untouched');
  const section = text.slice(text.indexOf(beginMarker('tunnel')), text.indexOf(endMarker('tunnel')));
  assert.ok(section.includes(renderTunnelSection(report, goals).trim()));
  assert.match(section, /1\. ✅ met: Through a tunnel/);
  assert.match(section, /\| \*\*A → B\*\* \| · bare libp2p stream \(send \/ message events\) \| 134 MB\/s \| 129 MB\/s – 140 MB\/s \| 1 \(ref\) \| 5\.0 ms \|/);
  assert.match(section, /\|  \| ▸ tunnel: TCP → A → libp2p → B → TCP \| 75 MB\/s \| 67 MB\/s – 84 MB\/s \| 0\.56 \| 5\.0 ms \|/);
  assert.match(section, /\|  \| · loopback TCP, this process to itself \| 671 MB\/s \| 671 MB\/s – 671 MB\/s \| 5\.00 \| – \|/);
  assert.match(section, /Other processes kept 2% of the machine busy just before the runs\./);
  const saved = JSON.parse(await readFile(json, 'utf8')) as TunnelReport & { goals: unknown[] };
  assert.equal(saved.samples.length, 24);
  assert.equal(saved.goals.length, 1);
  await writeReport(TUNNEL_REPORT, report, { markdown, json });
  assert.equal(await readFile(markdown, 'utf8'), text, 'a second run replaces its own section and nothing else');
});

test('mesh bench tunnel --quick: a small run on real peer processes end to end, writing nothing', async () => {
  const { markdown, json } = resultPaths('tunnel');
  const results = [markdown, json];
  const before = await Promise.all(results.map((p) => readFile(p, 'utf8').catch(() => null)));
  const { result: code, output: said } = await captureOutput(process.stdout, () => runBench(['tunnel', '--quick', '--runs', '1', '--mib', '2']));
  assert.equal(code, 0, said);
  assert.match(said, /round 1: libp2p up \d+, port up \d+, tunnel up \d+, tcp up \d+, libp2p down \d+, port down \d+, tunnel down \d+, tcp down \d+ MB\/s/);
  assert.match(said, /(met |MISS) Through a tunnel/);
  assert.match(said, /quick run: bench\/RESULTS\.md and bench\/results\/tunnel\.json left as they were/);
  assert.deepEqual(await Promise.all(results.map((p) => readFile(p, 'utf8').catch(() => null))), before);
});
