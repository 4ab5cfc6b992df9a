/** The values `mesh sim` takes: spans, partitions, adversaries. */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { UsageError } from './command.ts';
import { adversary, duration, partition } from './sim.ts';

test('sim options: spans in ms, s, m and h', () => {
  assert.equal(duration('250ms', '--duration'), 250);
  assert.equal(duration('90s', '--duration'), 90_000);
  assert.equal(duration('10m', '--duration'), 600_000);
  assert.equal(duration('1.5h', '--duration'), 5_400_000);
  for (const bad of ['10', 'm', '-1m', '0s', '1d', ' 1m']) assert.throws(() => duration(bad, '--duration'), UsageError);
});

test('sim options: a partition is AT:FOR:SHARE, the share at most a half', () => {
  assert.deepEqual(partition('5m:10m:0.33', '--partition'), { atMs: 300_000, forMs: 600_000, share: 0.33 });
  for (const bad of ['5m:10m', '5m:10m:0.6', '5m:10m:0.3:1', 'x:10m:0.3']) assert.throws(() => partition(bad, '--partition'), UsageError);
});

test('sim options: an adversary is KIND:COUNT of a known kind', () => {
  assert.deepEqual(adversary('dropper:3', '--adversary'), { kind: 'dropper', count: 3 });
  for (const bad of ['dropper', 'thief:1', 'sybil:0', 'sybil:1:2']) assert.throws(() => adversary(bad, '--adversary'), UsageError);
});
