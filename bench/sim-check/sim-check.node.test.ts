import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareKinds, propagation, ratesBetween, windowRates } from './compare.ts';
import { firstArrivals, parseSimCheckArgs } from './node.ts';
import { renderSimCheckSection, type SimCheckReport } from './report.ts';

test('sim-check: propagation counts blocks born in the window, to the share of the nodes the simulator takes', () => {
  const arrivals = new Map([
    // Born at 1,000: 4 of 4 nodes by 1,030.
    ['a', [1_010, 1_000, 1_030, 1_020]],
    // Born at 2,000: reached 2 of 4 (an orphan).
    ['b', [2_000, 2_050]],
    // Born before the window.
    ['c', [500, 510, 520, 530]],
  ]);
  const p = propagation(arrivals, 4, 1_000, 3_000);
  assert.equal(p.blocks, 2);
  assert.equal(p.blocksShort, 1);
  // To 50 %: the 2nd node (a: 10, b: 50); to 90 and 99 %: all 4 (a only).
  assert.deepEqual(p.to50, { p50: 50, p90: 50, p99: 50 });
  assert.deepEqual(p.to99, { p50: 30, p90: 30, p99: 30 });
});

test("sim-check: a node's first event for a block is when it had it; a reorganisation's replay is not", () => {
  const streams = [
    { events: [{ hash: 'a' }, { hash: 'b' }, { hash: 'a' }], arrivals: [10, 20, 30] },
    { events: [{ hash: 'a' }], arrivals: [15] },
  ] as unknown as Parameters<typeof firstArrivals>[0];
  assert.deepEqual(
    [...firstArrivals(streams)],
    [
      ['a', [10, 15]],
      ['b', [20]],
    ],
  );
});

test('sim-check: rates per node per second over the window, and the simulator window from two runs of one seed', () => {
  const before: Record<string, number>[] = [{ 'mesh-blocks': 1_000, ping: 100 }, { 'mesh-blocks': 500 }];
  const after = [
    { 'mesh-blocks': 3_000, ping: 300 },
    { 'mesh-blocks': 1_500, ping: 200 },
  ];
  // (2,000 + 1,000) / 2 nodes / 10 s; (200 + 200) / 2 / 10.
  assert.deepEqual(ratesBetween(before, after, 10_000), { 'mesh-blocks': 150, ping: 20 });
  // 10 B/s over 60 s then 110 B/s over 240 s: 30 B/s from 60 to 240 s.
  assert.deepEqual(windowRates({ 'mesh-blocks': 10 }, 60_000, { 'mesh-blocks': 30, ping: 4 }, 240_000), { 'mesh-blocks': 36.7, ping: 5.3 });
});

test('sim-check: kinds side by side, the largest real first, with the ratio and the total', () => {
  const rows = compareKinds({ 'mesh-blocks': 100, ping: 20, 'rpc sync.blocks': 0 }, { 'mesh-blocks': 110, ping: 40, 'gossipsub-control': 5 });
  assert.deepEqual(
    rows.map((r) => [r.kind, r.real, r.sim, r.ratio]),
    [
      ['mesh-blocks', 100, 110, 1.1],
      ['ping', 20, 40, 2],
      ['gossipsub-control', 0, 5, null],
      ['rpc sync.blocks', 0, 0, null],
      ['total', 120, 155, 1.29],
    ],
  );
});

test('sim-check: options; --quick runs 4 nodes briefly and writes nothing unless asked', () => {
  const quick = parseSimCheckArgs(['--quick']);
  assert.deepEqual([quick.nodes, quick.warmupMs, quick.windowMs, quick.write], [[4], 40_000, 30_000, false]);
  const full = parseSimCheckArgs([]);
  assert.deepEqual([full.nodes, full.producers, full.blockIntervalMs, full.windowMs, full.write], [[10, 20], 5, 10_000, 180_000, true]);
  assert.deepEqual(parseSimCheckArgs(['--nodes', '12', '--nodes', '12', '--producers', '3']).nodes, [12]);
});

test('sim-check: the section has its heading, the propagation side by side and a table of kinds per size', () => {
  const p = (ms: number) => ({
    to50: { p50: ms, p90: ms, p99: ms },
    to90: { p50: ms, p90: ms, p99: ms },
    to99: { p50: ms, p90: 2 * ms, p99: 2 * ms },
    blocks: 18,
    blocksShort: 0,
  });
  const report: SimCheckReport = {
    command: 'npx mesh bench sim-check',
    date: '2026-12-06T09:00:00.000Z',
    quick: false,
    machine: { cpu: 'a CPU', cores: 2, os: 'linux' },
    node: { version: '24.0.0' },
    elapsedMs: 600_000,
    producers: 5,
    blockIntervalMs: 10_000,
    warmupMs: 60_000,
    windowMs: 180_000,
    sizes: [
      {
        nodes: 10,
        realPeers: 7.2,
        real: { propagation: p(40), bytesPerNodePerSec: { 'mesh-blocks': 100 }, tcpSentPerNodePerSec: 900 },
        sim: { peers: 7, propagation: p(0), bytesPerNodePerSec: { 'mesh-blocks': 98 } },
        kinds: compareKinds({ 'mesh-blocks': 100 }, { 'mesh-blocks': 98 }),
      },
    ],
  };
  const section = renderSimCheckSection(report);
  assert.match(section, /^## Simulator against real nodes\n/);
  assert.match(section, /\| 10 \| 99 % \| 40 \/ 80 \| 0 \/ 0 \|/);
  assert.match(section, /\| mesh-blocks \| 100\.0 \| 98\.0 \| 0\.98 \|/);
  assert.match(section, /\| 10 \| 7\.2 \/ 7 \| 18 \/ 18 \| 0 \/ 0 \| 900 B\/s \|/);
});
