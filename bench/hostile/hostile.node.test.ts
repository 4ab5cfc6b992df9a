import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluateHostileGoals, type HostileReport, renderHostileSection } from './report.ts';

const report = (after: readonly (number | null)[]): HostileReport => ({
  command: 'npx mesh bench hostile',
  date: '2026-12-05T23:00:00.000Z',
  quick: false,
  machine: { cpu: 'cpu', cores: 2, os: 'linux' },
  elapsedMs: 1000,
  node: { version: '24' },
  blockIntervalMs: 300,
  runs: after.map((afterAttackMs, i) => ({ afterAttackMs, baselineMs: 20 + i, attackMs: 23_000 })),
});

test('bench hostile: the goal is the median of 5 runs within 30 s; a run that found no tip counts as the longest', () => {
  const [met] = evaluateHostileGoals(report([400, 100, 300, 200, 500]));
  assert.equal(met!.met, true);
  assert.match(met!.detail, /median 0\.30 s, baseline 0\.02 s/);
  assert.equal(evaluateHostileGoals(report([400, null, null, null, 500]))[0]!.met, false);
  assert.equal(evaluateHostileGoals(report([400]))[0]!.met, null);
  const section = renderHostileSection(report([400, 100, 300, 200, null]));
  assert.match(section, /\| 5 \| 23\.0 s \| no tip \| 0\.02 s \|/);
  assert.match(section, /\| \*\*median\*\* \| {2}\| \*\*0\.30 s\*\* \|/);
});
