import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluateNatGoals, type NatReport, renderNatSection } from './report.ts';

const report = (reachMs: (number | null)[], firstMs: number[]): NatReport => ({
  command: 'npx mesh bench nat',
  date: '2026-12-06T01:00:00.000Z',
  quick: false,
  machine: { cpu: 'cpu', cores: 2, os: 'linux' },
  elapsedMs: 60_000,
  node: { version: '24' },
  nats: [
    { kind: 'cone', hosts: 1 },
    { kind: 'symmetric', hosts: 1 },
  ],
  iptables: 'iptables',
  reach: [{ nodes: 3, pairs: reachMs.map((ms, i) => ({ from: `n${i}`, to: 'relay', ms })) }],
  firstMessages: [{ firstMs, secondMs: firstMs.map((ms) => ms / 10) }],
});

test('bench nat: every pair within 10 s and a first message at a median of 1 s or less meet the goals', () => {
  const [reach, first] = evaluateNatGoals(report([3_000, 9_999, 4_000], [400, 900, 1_200]));
  assert.equal(reach!.met, true);
  assert.match(reach!.detail, /^3 of 3 ordered pairs \(100\.0 %\) within 10 s; median 4\.00 s, slowest 10\.00 s$/);
  assert.equal(first!.met, true);
  assert.match(first!.detail, /^median 0\.90 s over 3 pairs \(p90 1\.20 s\), next to 0\.09 s for the second message/);
});

test('bench nat: one pair late or never reached misses the goal, and says how many', () => {
  const [reach, first] = evaluateNatGoals(report([3_000, 10_001, null], [1_500]));
  assert.equal(reach!.met, false);
  assert.match(reach!.detail, /^1 of 3 ordered pairs \(33\.3 %\) within 10 s; .*; 1 never within 30\.00 s$/);
  assert.equal(first!.met, false);
});

test('bench nat: the section names the lab and shows the first message next to its baseline', () => {
  const section = renderNatSection(report([3_000], [800]));
  assert.match(section, /^## Through NATs: reaching nodes by NodeId/);
  assert.match(section, /behind a cone NAT, 1 host; a symmetric NAT, 1 host\./);
  assert.match(section, /\| \*\*first message, never met\*\* \| 1 \| \*\*0\.80 s\*\* \|/);
  assert.match(section, /\| · baseline: second message \| 1 \| 0\.08 s \|/);
});
