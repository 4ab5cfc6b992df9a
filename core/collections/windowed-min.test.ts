import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { WindowedMin } from './windowed-min.ts';

test('WindowedMin: the least value of the span, for as long as the span and less than one slot more', () => {
  const least = new WindowedMin(1_000, 10);
  assert.isNull(least.least(0));
  least.add(12, 50);
  least.add(80, 300);
  least.add(40, 320);
  assert.equal(least.least(400), 12);
  assert.equal(least.least(1_050), 12, 'a whole span after it was seen, it still counts');
  assert.equal(least.least(1_100), 40, 'one slot later it is gone; 40 was the least of its slot');
  assert.equal(least.least(1_400), null);
  least.add(30, 2_000);
  least.add(20, 1_950);
  assert.equal(least.least(2_000), 20, 'a value may come late');
  least.add(5, 500);
  assert.equal(least.least(2_000), 20, 'one from before the span is not taken');
  assert.throws(() => new WindowedMin(0), RangeError);
  assert.throws(() => new WindowedMin(1_000, 0), RangeError);
});

test("WindowedMin: many values a slot, rising: the least of the span's oldest slot", () => {
  const least = new WindowedMin(1_000, 10);
  // 10,000 rising values over 5 spans: the slots of the last span count, the oldest of them least.
  for (let t = 0; t < 5_000; t += 0.5) least.add(t, t);
  assert.equal(least.least(5_000), 4_000);
  assert.equal(least.least(5_500), 4_500);
});
