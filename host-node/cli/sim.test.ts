/** The values `mesh sim` takes: spans, partitions, adversaries; and the run `mesh sim report` reads. */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { UsageError } from './command.ts';
import { adversary, duration, partition } from './sim.ts';
import { parseSimReport } from './sim-report.ts';

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
  assert.deepEqual(adversary('private-miner:1', '--adversary'), { kind: 'private-miner', count: 1 });
  assert.deepEqual(adversary('spammer:2', '--adversary'), { kind: 'spammer', count: 2 });
  for (const bad of ['dropper', 'thief:1', 'sybil:0', 'sybil:1:2']) assert.throws(() => adversary(bad, '--adversary'), UsageError);
});

test('sim report: the run is mesh sim --json output; anything else is a usage error naming what is wrong', () => {
  const run = { options: {}, invariants: [], figures: {}, series: {} };
  assert.deepEqual(parseSimReport(JSON.stringify(run), 'run.json'), run as never);
  assert.throws(() => parseSimReport('mesh sim: 30 nodes', 'run.json'), UsageError, /not JSON/);
  assert.throws(() => parseSimReport('[]', 'run.json'), UsageError, /no options/);
  assert.throws(() => parseSimReport('null', 'run.json'), UsageError, /no options/);
  assert.throws(() => parseSimReport(JSON.stringify({ ...run, series: undefined }), 'run.json'), UsageError, /no series/);
});
