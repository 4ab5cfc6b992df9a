// The count of open streams, in all and per client. Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { StreamSlots } from './stream-slots.ts';

test('stream slots: a slot per stream up to each bound; a release gives one back once, however often it is called', () => {
  const slots = new StreamSlots({ total: 3, perClient: 2 });
  const a1 = slots.take('a')!;
  const a2 = slots.take('a')!;
  assert.isUndefined(slots.take('a'));
  assert.equal(slots.full('a'), 'per-client');
  const b1 = slots.take('b')!;
  assert.isUndefined(slots.take('c'));
  assert.equal(slots.full('c'), 'total');
  assert.deepEqual([slots.open, slots.openFor('a'), slots.openFor('b')], [3, 2, 1]);
  a1();
  a1();
  assert.deepEqual([slots.open, slots.openFor('a')], [2, 1]);
  assert.isDefined(slots.take('c'));
  assert.isUndefined(slots.take('a'), 'the total is reached again');
  a2();
  b1();
  assert.deepEqual([slots.open, slots.openFor('a'), slots.openFor('b'), slots.openFor('c')], [1, 0, 0, 1]);
});
