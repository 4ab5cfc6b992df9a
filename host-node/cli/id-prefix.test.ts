/** Ids by their first characters: the one rule every id-taking command uses. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { idPrefix, uniqueId } from './id-prefix.ts';

const JOBS = { none: 'no job', plural: 'jobs' };
const ids = ['f83345a8'.padEnd(64, '0'), 'f83399aa'.padEnd(64, '1'), '0b'.repeat(32)];

test('a unique prefix names its id; a whole id names itself', () => {
  assert.equal(uniqueId(ids, 'f8334', JOBS), ids[0]);
  assert.equal(uniqueId(ids, '0', JOBS), ids[2]);
  assert.equal(uniqueId(ids, ids[1]!, JOBS), ids[1]);
});

test('a prefix of several ids says how many and which; one of none says so, with the hint', () => {
  assert.throws(() => uniqueId(ids, 'f833', JOBS), { message: '2 jobs have ids starting with f833 (f83345a800000000, f83399aa11111111): give more of the id' });
  const many = Array.from({ length: 6 }, (_, i) => `a${i}`.padEnd(64, '0'));
  assert.throws(() => uniqueId(many, 'a', JOBS), {
    message: '6 jobs have ids starting with a (a000000000000000, a100000000000000, a200000000000000, a300000000000000, and 2 more): give more of the id',
  });
  assert.throws(() => uniqueId(ids, 'ffff', { ...JOBS, hint: ' (a hint)' }), { message: 'no job whose id starts with ffff (a hint)' });
});

test('the parser takes lowercase hex up to the whole id, and names what it wants', () => {
  const tunnel = idPrefix('a tunnel id', 16);
  assert.equal(tunnel('e621', '<id>'), 'e621');
  assert.equal(tunnel('0'.repeat(16), '<id>'), '0'.repeat(16));
  for (const bad of ['0'.repeat(17), 'E621', 'xyz']) {
    assert.throws(() => tunnel(bad, '<id>'), {
      name: 'UsageError',
      message: `<id> must be a tunnel id or its first characters (lowercase hex), got ${JSON.stringify(bad)}`,
    });
  }
});
