import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { RecentSet } from './recent-set.ts';

test('RecentSet: keeps the newest keys, forgets the oldest generation, holds at most its capacity', () => {
  const set = new RecentSet<number>(10);
  for (let i = 0; i < 10; i++) set.add(i);
  for (let i = 0; i < 10; i++) assert.isTrue(set.has(i), `${i}`);
  set.add(10);
  assert.isFalse(set.has(0), 'the oldest generation went');
  assert.isTrue(set.has(5) && set.has(10));
  let held = 0;
  for (let i = 0; i <= 10; i++) if (set.has(i)) held++;
  assert.isAtMost(held, 10);
  assert.isAtLeast(held, 5);
  set.delete(10);
  assert.isFalse(set.has(10));
  set.add(7);
  assert.isTrue(set.has(7), 'a known key is not added twice');
  assert.throws(() => new RecentSet(1), RangeError);
});
