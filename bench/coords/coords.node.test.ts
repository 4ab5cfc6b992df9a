/**
 * The coordinates benchmark's machinery, run tiny: the options parse, the matrix reader takes the
 * files' layout and leaves zeros out, the baseline and the reference are what they say, a replay
 * repeats for a seed and learns a simple matrix, the goals and the report read the figures right,
 * and a short `--quick` run on the real matrices writes nothing. No speed is asserted.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { captureOutput } from '../../test/capture-output.ts';
import { runBench } from '../cli.ts';
import { beginMarker, endMarker, resultPaths, writeReport } from '../lib/results.ts';
import {
  asymmetry,
  type Checkpoint,
  type CoordsCase,
  measureCoords,
  medianBaseline,
  parseMatrix,
  replay,
  SERF_VARIANT,
  symmetricReference,
  triangleViolations,
} from './cases.ts';
import { parseCoordsBenchArgs } from './node.ts';
import { COORDS_REPORT, type CoordsReport, evaluateCoordsGoals, renderCoordsSection } from './report.ts';

test('options: defaults, --quick defaults, and refusals', () => {
  const full = parseCoordsBenchArgs([]);
  assert.deepEqual({ rounds: full.rounds, peers: full.peers, runs: full.runs, write: full.write }, { rounds: 200, peers: 4, runs: 3, write: true });
  const quick = parseCoordsBenchArgs(['--quick']);
  assert.deepEqual({ rounds: quick.rounds, runs: quick.runs, write: quick.write }, { rounds: 50, runs: 1, write: false });
  assert.equal(parseCoordsBenchArgs(['--rounds', '7', '--peers', '2', '--runs', '5']).rounds, 7);
  assert.throws(() => parseCoordsBenchArgs(['--rounds', '0']), /--rounds/);
  assert.throws(() => parseCoordsBenchArgs(['--peers', '65']), /--peers/);
  assert.throws(() => parseCoordsBenchArgs(['--runtime', 'deno']), RangeError);
});

test("matrices: whitespace-separated rows in the file's unit; zero, negative and over 10 s unmeasured; anything else refused", () => {
  const m = parseMatrix('0\t0.05 0.2\n 0.05 0   -1\n\n20 0.3 0 \n', 1000);
  assert.equal(m.hosts, 3);
  assert.deepEqual([...m.rttMs], [0, 50, 200, 50, 0, 0, 0, 300, 0]);
  assert.equal(m.measured, 4);
  assert.equal(m.unmeasured, 2, 'the -1 and the 20 s entry');
  assert.throws(() => parseMatrix('0 1\n1 0 2\n', 1), /row 2 has 3 values, not 2/);
  assert.throws(() => parseMatrix('0 x\n1 0\n', 1), /row 1, column 2 is not a number/);
});

const near = (actual: number, expected: number, what: string): void => assert.ok(Math.abs(actual - expected) < 1e-12, `${what}: ${actual}, not ${expected}`);

test('the baseline predicts every entry by the median; the reference by the geometric mean of both directions', () => {
  const m = parseMatrix('0 10 40\n20 0 90\n40 160 0\n', 1);
  const b = medianBaseline(m);
  assert.equal(b.predictionMs, 40, 'the median of 10, 20, 40, 40, 90, 160');
  // Errors 3, 1, 0, 0, 50/90, 120/160: the median is the mean of the middle two, p90 the 6th of 6.
  near(b.median, (50 / 90 + 0.75) / 2, 'baseline median');
  assert.equal(b.p90, 3);
  // |there − back| ÷ there: 1, 0.5, 0, 0, 70/90, 70/160.
  near(asymmetry(m), (70 / 160 + 0.5) / 2, 'asymmetry');
  // Geometric means √200 for the 10/20 pair, 40, and 120 for the 90/160 pair.
  const r = symmetricReference(m);
  near(r.median, (0.25 + (20 - Math.sqrt(200)) / 20) / 2, 'reference median');
  near(r.p90, (Math.sqrt(200) - 10) / 10, 'reference p90');
});

test('triangles: the inequality checked on the geometric means; beyond the slack, any distance errs on a side', () => {
  // Sides 0-1: √(10·40) = 20, 0-2: 30, 1-2: 60 (> 20 + 30, by 1.2×), 0-3: 10, 1-3: 10 (the 0-1 side, 20, is
  // their sum: not a violation), 2-3 unmeasured one way: triangles 0-2-3 and 1-2-3 are left out.
  const m = parseMatrix('0 10 30 10\n40 0 60 10\n30 60 0 0\n10 10 5 0\n', 1);
  const t = triangleViolations(m, 0.05);
  assert.equal(t.triangles, 2);
  assert.equal(t.violating, 0.5, '0-1-2 breaks it, 0-1-3 is flat');
  assert.equal(t.beyond, 0.5, '60 > 50 × 1.05 ÷ 0.95');
  assert.equal(triangleViolations(m, 0.1).beyond, 0, '60 < 50 × 1.1 ÷ 0.9');
  assert.deepEqual(triangleViolations(parseMatrix('0 5\n5 0\n', 1), 0.11), { triangles: 0, violating: 0, beyond: 0, error: 0.11 });
});

// Eight hosts on a line 10 ms apart, one entry unmeasured each way.
function lineText(): string {
  const rows = Array.from({ length: 8 }, (_, i) =>
    Array.from({ length: 8 }, (_, j) => ((i === 0 && j === 7) || (i === 7 && j === 0) ? 0 : Math.abs(i - j) * 10)),
  );
  return rows.map((r) => r.join(' ')).join('\n');
}

test('a replay repeats for a seed, reports its checkpoints, and learns a line far better than its median', () => {
  const m = parseMatrix(lineText(), 1);
  const options = { rounds: 60, peersPerRound: 3, checkpoints: [5, 20, 500], seed: 4 };
  const run = replay(m, {}, options);
  assert.deepEqual(
    run.map((c) => c.round),
    [5, 20, 60],
    'a checkpoint past the last round is dropped; the last round is always one',
  );
  assert.deepEqual(replay(m, {}, options), run);
  assert.notDeepEqual(replay(m, {}, { ...options, seed: 5 }), run);
  assert.ok(run.at(-1)!.median < medianBaseline(m).median / 4, `${run.at(-1)!.median} against ${medianBaseline(m).median}`);
});

function fakeCase(planetLab: number, seattle: number): CoordsCase {
  const runs = (final: number): Checkpoint[][] => [
    [
      { round: 10, median: 0.3, p90: 1 },
      { round: 200, median: final, p90: 0.4 },
    ],
    [
      { round: 10, median: 0.32, p90: 1.1 },
      { round: 200, median: final + 0.01, p90: 0.42 },
    ],
    [
      { round: 10, median: 0.28, p90: 0.9 },
      { round: 200, median: final - 0.005, p90: 0.38 },
    ],
  ];
  const dataset = (name: string, final: number) => ({
    name,
    file: `netlatency/${name}Data_1`,
    about: 'hosts of a test',
    hosts: 490,
    measured: 239_610,
    unmeasured: 0,
    asymmetry: name === 'Seattle' ? 0.44 : 0,
    baseline: { predictionMs: 135, median: 0.458, p90: 3.27 },
    symmetric: { median: 0, p90: 0 },
    triangles: { triangles: 19_488_280, violating: 0.176, beyond: 0.025, error: 0.11 },
    variants: [
      { label: SERF_VARIANT, dimensionality: 8, runs: runs(final) },
      { label: '2-D + height', dimensionality: 2, runs: runs(final + 0.02) },
    ],
  });
  return { rounds: 200, peersPerRound: 4, checkpoints: [10, 200], seeds: [1, 2, 3], datasets: [dataset('PlanetLab', planetLab), dataset('Seattle', seattle)] };
}

function fakeReport(result: CoordsCase | null): CoordsReport {
  return {
    command: 'npx mesh bench coords',
    date: '2026-11-27T10:00:00.000Z',
    quick: false,
    machine: { cpu: 'Test CPU', cores: 2, os: 'linux 6' },
    node: { version: '24.0.0', v8: '13' },
    result,
    elapsedMs: 40_000,
  };
}

test('coords goals: the median over the runs against 11 % on each matrix, next to the baseline; n/a when unmeasured', () => {
  const goals = evaluateCoordsGoals(fakeReport(fakeCase(0.085, 0.57)));
  assert.deepEqual(
    goals.map((g) => g.met),
    [true, false],
  );
  assert.match(goals[0]!.title, /^PlanetLab: .* below 11\.0 %, the Vivaldi paper's figure/);
  assert.equal(
    goals[0]!.detail,
    '8.5 % (3 runs: 8.0 % to 9.5 %), 90th percentile 40.0 %, after 200 rounds of 4 peers each; the baseline (every pair predicted by the median RTT, 135 ms) 45.8 %, 90th percentile 327.0 %; 2-D + height 10.5 %',
  );
  assert.equal(evaluateCoordsGoals(fakeReport(fakeCase(0.11, 0.1)))[0]!.met, false, "the paper's figure itself is not better than it");
  assert.deepEqual(
    evaluateCoordsGoals(fakeReport(null)).map((g) => g.met),
    [null, null],
  );
});

test('coords report: the section and the JSON are written, other sections kept byte for byte', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-coords-bench-test-'));
  try {
    const markdown = join(dir, 'RESULTS.md');
    const json = join(dir, 'results', 'coords.json');
    const other = `${beginMarker('crypto')}\n## Crypto\n\nkept | as is\n${endMarker('crypto')}\n`;
    await writeFile(markdown, `# Results\n\n${other}`);
    const report = fakeReport(fakeCase(0.085, 0.57));
    const goals = await writeReport(COORDS_REPORT, report, { markdown, json });
    const text = await readFile(markdown, 'utf8');
    assert.ok(text.startsWith(`# Results\n\n${other}`));
    const section = text.slice(text.indexOf(beginMarker('coords')), text.indexOf(endMarker('coords')));
    assert.ok(section.includes(renderCoordsSection(report, goals).trim()));
    assert.match(section, /1\. ✅ met: PlanetLab: /);
    assert.match(section, /2\. ❌ missed: Seattle: /);
    assert.match(section, /\| ▸ Vivaldi, Serf's defaults \(8-D \+ height\) \| 30\.0 % \| \*\*8\.5 %\*\* \(8\.0 %–9\.5 %\) \| 40\.0 % \|/);
    assert.match(section, /\| · baseline: every pair predicted by the median RTT, 135 ms \| 45\.8 % \| \*\*45\.8 %\*\* \| 327\.0 % \|/);
    assert.match(section, /differ by a median 44\.0 % of the entry: a distance, the same both ways, cannot follow that/);
    assert.match(
      section,
      /Of its 19,488,280 triangles of hosts .*, 17\.6 % break the triangle inequality, and 2\.5 % by so much that any distance errs by more than 11\.0 % on at least one of their sides\./,
    );
    const saved = JSON.parse(await readFile(json, 'utf8')) as CoordsReport & { goals: unknown[] };
    assert.equal(saved.result!.datasets.length, 2);
    assert.equal(saved.goals.length, 2);
    await writeReport(COORDS_REPORT, report, { markdown, json });
    assert.equal(await readFile(markdown, 'utf8'), text);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('measureCoords replays every dataset through every variant once per seed', async () => {
  const lines: string[] = [];
  const c = await measureCoords({
    rounds: 8,
    peersPerRound: 2,
    seeds: [1, 2],
    checkpoints: [4],
    load: async (file) => new TextEncoder().encode(file === 'line' ? lineText() : '0 5\n5 0\n'),
    log: (l) => lines.push(l),
    datasets: [
      { name: 'Line', file: 'line', unitMs: 1, about: 'hosts on a line' },
      { name: 'Pair', file: 'pair', unitMs: 1, about: 'two hosts' },
    ],
  });
  assert.deepEqual(c.checkpoints, [4, 8]);
  assert.deepEqual(
    c.datasets.map((d) => [d.name, d.hosts, d.measured, d.variants.length]),
    [
      ['Line', 8, 54, 2],
      ['Pair', 2, 2, 2],
    ],
  );
  for (const d of c.datasets)
    for (const v of d.variants)
      assert.deepEqual(
        v.runs.map((r) => r.map((x) => x.round)),
        [
          [4, 8],
          [4, 8],
        ],
      );
  assert.match(lines[0]!, /^== Line: 8 hosts, 54 measured entries \(2 unmeasured\)$/);
});

test('mesh bench coords --quick: a short run on the real matrices, writing nothing', async () => {
  const { markdown, json } = resultPaths('coords');
  const before = await Promise.all([markdown, json].map((p) => readFile(p, 'utf8').catch(() => null)));
  const { result: code, output: said } = await captureOutput(process.stdout, () => runBench(['coords', '--quick', '--rounds', '3']));
  assert.equal(code, 0, said);
  assert.match(said, /== PlanetLab: 490 hosts, 239,610 measured entries \(0 unmeasured\)/);
  assert.match(said, /== Seattle: 99 hosts, [\d,]+ measured entries \(\d+ unmeasured\)/);
  assert.match(said, /baseline, every entry predicted by the median 135\.0 ms/);
  assert.match(said, /quick run: bench\/RESULTS\.md and bench\/results\/coords\.json left as they were/);
  assert.deepEqual(await Promise.all([markdown, json].map((p) => readFile(p, 'utf8').catch(() => null))), before);
});
