/**
 * The sync benchmark's report, on Node: the heal goal is judged on pairs of runs taken back to
 * back, and the table shows each pair with its ratio. No speed is asserted anywhere.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SyncRun } from './cases.ts';
import type { ForkInfo } from './chains.ts';
import { evaluateSyncGoals, renderSyncSection, type SyncReport } from './report.ts';

const runs = (seconds: number[]): SyncRun[] => seconds.map((s) => ({ syncMs: s * 1000, cpuMs: null }));

const chains: ForkInfo = {
  shared: 40,
  longer: 10_000,
  shorter: 9_990,
  transfersPerBlock: 5,
  blockIntervalMs: 500,
  longerTip: '00'.repeat(32),
  longerHeight: 10_040,
  shorterTip: '11'.repeat(32),
  longerBytes: 11_000_000,
  generateSeconds: null,
};

function report(heal: number[], catchUp: number[]): SyncReport {
  return {
    command: 'npx mesh bench sync',
    date: '2026-12-06T09:00:00.000Z',
    quick: false,
    machine: { cpu: 'test', cores: 2, os: 'linux' },
    node: { version: '24.0.0' },
    chains,
    heal: runs(heal),
    catchUp: runs(catchUp),
    flood: null,
    elapsedMs: 1_000,
  };
}

test('the heal goal is judged on the median of the ratios of pairs taken back to back', () => {
  // A busy moment slows the second pair's runs both: its ratio is 1.2. The medians of each kind,
  // taken apart, would make it 13 s against 10 s, 1.3 times.
  const [heal] = evaluateSyncGoals(report([9, 24, 13], [10, 20, 10]));
  assert.equal(heal!.met, true);
  assert.match(heal!.detail!, /^1\.20×, the median of 3 pairs/);
  const [missed] = evaluateSyncGoals(report([13, 26, 13], [10, 20, 10]));
  assert.equal(missed!.met, false);
  assert.match(missed!.detail!, /^1\.30×/);
});

test('the report shows each pair with its ratio', () => {
  const section = renderSyncSection(report([9, 24], [10, 20]));
  assert.match(section, /\| 1 \| 9\.0 s \| 10\.0 s \| 0\.90× \|/);
  assert.match(section, /\| 2 \| 24\.0 s \| 20\.0 s \| 1\.20× \|/);
});
