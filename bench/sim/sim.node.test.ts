import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSimBenchArgs } from './node.ts';
import { evaluateSimGoals, overheadPerNode, renderSimSection, type ScaleRun, type SimBenchReport } from './report.ts';

const run = (nodes: number, over: Partial<ScaleRun> = {}): ScaleRun => ({
  nodes,
  durationMs: 3_600_000,
  wallMs: 600_000,
  peakRssBytes: 8 * 2 ** 30,
  invariantsHeld: true,
  to99: { p50: 300, p90: 900, p99: 1_500 },
  blocksShort: 0,
  forksPerHour: 12,
  bytesPerNodePerSec: {
    'mesh-blocks': 800,
    'mesh-transactions': 1_000,
    'rpc sync.blocks': 5,
    'stream /mesh/app/1/messages': 2,
    'mesh-netgraph': 1_200,
    ping: 200,
  },
  ...over,
});

const report = (scale: ScaleRun[], faults: SimBenchReport['faults'] = null): SimBenchReport => ({
  command: 'npx mesh bench sim',
  date: '2026-12-06T06:00:00.000Z',
  quick: false,
  machine: { cpu: 'a CPU', cores: 2, os: 'linux' },
  node: { version: '24.0.0' },
  elapsedMs: 1,
  scale,
  faults,
});

test('bench sim: overhead is every byte but blocks, transactions and app payloads', () => {
  assert.equal(overheadPerNode(run(1_000).bytesPerNodePerSec), 1_400);
});

test('bench sim: the goals are judged on the 1,000-node hour, and not measured without it', () => {
  const met = evaluateSimGoals(report([run(100), run(1_000)]));
  assert.deepEqual(
    met.map((g) => g.met),
    [true, true, true, null],
  );
  const missed = evaluateSimGoals(report([run(1_000, { wallMs: 20 * 60_000, to99: { p50: 300, p90: 900, p99: 40_000 } })]));
  assert.deepEqual(
    missed.slice(0, 2).map((g) => g.met),
    [false, false],
  );
  assert.deepEqual(
    evaluateSimGoals(report([run(100)])).map((g) => g.met),
    [null, null, null, null],
  );
});

test('bench sim: the fault goal misses on any break or slow heal, and is not met before 100 clean seeds', () => {
  const faults = (seeds: number, broke: { seed: string; invariants: string[] }[], healMs: (number | null)[]): SimBenchReport['faults'] => ({
    nodes: 100,
    durationMs: 1_800_000,
    churnPerHour: 0.2,
    partition: { atMs: 600_000, forMs: 600_000, share: 0.33 },
    seeds,
    broke,
    healMs,
  });
  const goal = (f: SimBenchReport['faults']): boolean | null => evaluateSimGoals(report([], f))[3]!.met;
  assert.equal(goal(faults(100, [], new Array(100).fill(2_000))), true);
  assert.equal(goal(faults(3, [], [1_000, 2_000, 3_000])), null);
  assert.equal(goal(faults(3, [{ seed: 'fault-2', invariants: ['supply-conservation'] }], [1_000, 2_000, 3_000])), false);
  assert.equal(goal(faults(3, [], [1_000, null, 3_000])), false);
  assert.equal(goal(faults(3, [], [1_000, 31_000, 3_000])), false);
});

test('bench sim: the section has its heading, the goals and a row per size', () => {
  const section = renderSimSection(report([run(100), run(1_000)]));
  assert.match(section, /^## Simulation\n/);
  assert.match(section, /\| 1000 \| 60 min \| 600 s \| 8\.00 GiB \| 300 \/ 1500 ms \|/);
  const bigger = run(1_000);
  const grown = renderSimSection(report([run(100), { ...bigger, bytesPerNodePerSec: { ...bigger.bytesPerNodePerSec, 'mesh-netgraph': 2_600 } }]));
  assert.match(grown, /Overhead per node against 100 nodes in the same run: ×2\.00 at 1000 nodes\./);
});

test('bench sim: the section says which fault seeds broke and how long the heals took', () => {
  const faults = {
    nodes: 20,
    durationMs: 1_800_000,
    churnPerHour: 0.2,
    partition: { atMs: 600_000, forMs: 600_000, share: 0.33 },
    seeds: 4,
    broke: [{ seed: 'fault-3', invariants: ['one-tip-after-heal'] }],
    healMs: [1_100, 20_400, null, 300],
  };
  const section = renderSimSection(report([], faults));
  assert.match(
    section,
    /Faults: 4 seeds .* of 20 nodes for 30 simulated min, 20 % churning an hour, 33 % parted from 10 min for 10 min: fault-3: one-tip-after-heal;/,
  );
  assert.match(section, /heal p50 1\.1 s, p90 20\.4 s, slowest 20\.4 s, 1 not within the run\./);
});

test('bench sim: options; --quick runs small and writes nothing unless asked', () => {
  const quick = parseSimBenchArgs(['--quick']);
  assert.deepEqual([quick.nodes, quick.durationMs, quick.seeds, quick.write], [[30], 300_000, 3, false]);
  const full = parseSimBenchArgs([]);
  assert.deepEqual([full.nodes, full.durationMs, full.seeds, full.faultNodes, full.write], [[100, 300, 1_000], 3_600_000, 100, 20, true]);
  assert.ok(full.jobs >= 1, 'the fault runs share the cores');
  assert.equal(parseSimBenchArgs(['--jobs', '3']).jobs, 3);
  assert.deepEqual(parseSimBenchArgs(['--nodes', '50', '--nodes', '50', '--duration', '2m']).nodes, [50]);
});
