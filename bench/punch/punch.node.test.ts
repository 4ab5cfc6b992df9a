/**
 * The hole-punching benchmark's report: the goal counts attempts right at its threshold, and the
 * section shows both paths with their ratios and says why attempts failed. No speed is asserted;
 * the measurement itself needs the NAT lab (root) and runs as `mesh bench punch`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Attempt, Sample } from './cases.ts';
import { evaluatePunchGoals, medianRate, type PunchReport, renderPunchSection } from './report.ts';

const MIB = 1024 * 1024;

function report(attempts: Attempt[], samples: Sample[] = []): PunchReport {
  return {
    command: 'npx mesh bench punch',
    date: '2026-12-06T01:00:00.000Z',
    quick: false,
    machine: { cpu: 'test cpu', cores: 2, os: 'linux' },
    node: { version: '24.0.0' },
    attempts,
    runs: 1,
    bytes: 16 * MIB,
    samples,
    elapsedMs: 1000,
  };
}

const attempts = (ok: number, failed: number): Attempt[] => [
  ...Array.from({ length: ok }, (_, i) => ({ ok: true, ms: 100 + i, relayRetries: 0 })),
  ...Array.from({ length: failed }, () => ({ ok: false, ms: 15_000, reason: 'hole punching over WebRTC failed (no ICE path in 10000 ms)', relayRetries: 1 })),
];

test('punch goal: 95 % of attempts, counted at the threshold', () => {
  assert.equal(evaluatePunchGoals(report(attempts(48, 2)))[0]!.met, true);
  assert.equal(evaluatePunchGoals(report(attempts(47, 3)))[0]!.met, false);
  assert.match(evaluatePunchGoals(report(attempts(48, 2)))[0]!.detail, /^48 of 50 \(96\.0%\); to direct: median 1\d\d ms/);
  assert.equal(evaluatePunchGoals(report([]))[0]!.met, null);
});

test('punch section: both paths, each next to the bare stream on it, and the failures said', () => {
  const samples: Sample[] = [
    { path: 'direct', via: 'libp2p', bytes: 16 * MIB, ms: 1000 },
    { path: 'direct', via: 'port', bytes: 16 * MIB, ms: 2000 },
    { path: 'relayed', via: 'libp2p', bytes: 16 * MIB, ms: 8000 },
    { path: 'relayed', via: 'port', bytes: 16 * MIB, ms: 16000 },
  ];
  assert.equal(medianRate(samples, 'direct', 'libp2p'), 16);
  const r = report(attempts(49, 1), samples);
  const section = renderPunchSection(r, evaluatePunchGoals(r));
  assert.match(section, /^## Hole punching/);
  assert.match(section, /✅ met: Hole punching between the two cone NATs/);
  assert.match(section, /\| \*\*direct\*\* A–B .*\| 16 MB\/s .*\| 1 \(ref\) \|/);
  assert.match(section, /raw stream of the network port .*\| 8\.00 MB\/s .*\| 0\.50 \|/);
  assert.match(section, /Failures said: “hole punching over WebRTC failed \(no ICE path in 10000 ms\)”/);
  assert.match(section, /1 such retries in this run/);
  assert.match(section, /Direct over relayed, through the network port: 8\.0×/);
});
