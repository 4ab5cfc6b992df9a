/**
 * The shared machinery of the benchmarks, on Node: the median and the interleaved sampling, and
 * the results file's sections. No speed is asserted anywhere.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { otherProcessesShare } from './processes.ts';
import { beginMarker, endMarker, replaceSection } from './results.ts';
import { compare, median } from './timing.ts';

test('median: odd and even counts, unsorted input left as it was', () => {
  assert.equal(median([5]), 5);
  assert.equal(median([9, 1, 5]), 5);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([7, 7, 1, 100, 7]), 7);
  const values = [3, 1, 2];
  median(values);
  assert.deepEqual(values, [3, 1, 2]);
  assert.throws(() => median([]), RangeError);
});

test('compare: every contender gets its samples, each sample the median of which is reported', async () => {
  let setups = 0;
  const results = await compare(
    [
      { name: 'sync', role: 'baseline', op: () => Math.sqrt(2) },
      { name: 'async', role: 'core', op: async () => 1, samples: 2 },
      { name: 'with setup', role: 'core', op: () => 1, setup: () => void setups++ },
    ],
    { samples: 3, minSampleMs: 1, warmupMs: 0 },
  );
  assert.deepEqual(
    results.map((r) => [r.name, r.samplesNs.length]),
    [
      ['sync', 3],
      ['async', 2],
      ['with setup', 3],
    ],
  );
  for (const r of results) {
    assert.equal(r.medianNs, median(r.samplesNs));
    assert.equal(r.opsPerSec, 1e9 / r.medianNs);
  }
  assert.equal(results[2]!.iterations, 1, 'a contender with setup is timed one call per sample');
  assert.equal(setups, 1 + 3, 'setup before the first call and before every sample');
});

test('replaceSection: creates, appends, replaces between markers and keeps the rest', () => {
  const created = replaceSection(null, 'crypto', 'one', '# Results\n');
  assert.equal(created, `# Results\n\n${beginMarker('crypto')}\none\n${endMarker('crypto')}\n`);

  const other = `${beginMarker('ledger')}\nledger figures\n${endMarker('ledger')}`;
  const withOther = `# Results\n\nintro\n\n${other}\n`;
  const appended = replaceSection(withOther, 'crypto', 'two');
  assert.ok(appended.startsWith(withOther));
  assert.ok(appended.endsWith(`${beginMarker('crypto')}\ntwo\n${endMarker('crypto')}\n`));

  const replaced = replaceSection(`${appended}\ntrailing text\n`, 'crypto', 'three');
  assert.equal(replaced, `# Results\n\nintro\n\n${other}\n\n${beginMarker('crypto')}\nthree\n${endMarker('crypto')}\n\ntrailing text\n`);
  assert.throws(() => replaceSection(`${beginMarker('crypto')}\nno end`, 'crypto', 'x'), /unpaired/);
});

test('otherProcessesShare: a share of the machine, null when a named process cannot be read', async () => {
  const { share, cpuMs } = await otherProcessesShare([], 50);
  assert.ok(share !== null && share >= 0 && share <= 1, `share ${share}`);
  assert.deepEqual(cpuMs, []);
  const unread = await otherProcessesShare([undefined], 10);
  assert.equal(unread.share, null);
  assert.deepEqual(unread.cpuMs, [null]);
});
