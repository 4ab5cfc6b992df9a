import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { NodeTable } from './node-table.ts';

const table = (): NodeTable<{ at: number }> => new NodeTable(2, (entry, now) => now - entry.at < 10);

test('node table: the least recently updated goes first past the bound; an update makes an entry newest', () => {
  const t = table();
  t.set('b', { at: 0 });
  t.set('a', { at: 0 });
  t.set('b', { at: 1 });
  t.set('c', { at: 2 });
  assert.isUndefined(t.get('a', 3), 'a was the least recently updated');
  assert.deepEqual(t.live(3), [{ at: 1 }, { at: 2 }], 'b and c, by id');
  assert.equal(t.size, 2);
});

test('node table: a dead entry is not given and is dropped for good', () => {
  const t = table();
  t.set('a', { at: 0 });
  t.set('b', { at: 5 });
  assert.deepEqual(t.get('a', 9), { at: 0 });
  assert.isUndefined(t.get('a', 10));
  assert.equal(t.size, 1, 'dropped on get');
  assert.deepEqual(t.live(15), []);
  assert.equal(t.size, 0, 'dropped on live');
  assert.throws(() => new NodeTable(0, () => true), RangeError);
});
