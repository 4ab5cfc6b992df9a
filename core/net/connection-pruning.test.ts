import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { connectionsToPrune, type PrunableConnection } from './connection-pruning.ts';

type Named = PrunableConnection & { name: string };
const c = (name: string, rank: Named['rank'], direction: Named['direction'], openedAt: number): Named => ({ name, rank, direction, openedAt });
const names = (chosen: Named[]): string[] => chosen.map((x) => x.name);

test('pruning: nothing at or under the limit', () => {
  const held = [c('a', 'other', 'inbound', 1), c('b', 'other', 'inbound', 2)];
  assert.deepEqual(connectionsToPrune(held, 2), []);
  assert.deepEqual(connectionsToPrune(held, 3), []);
});

test('pruning: others go first, then producers; needed peers never', () => {
  const held = [
    c('bootstrap', 'needed', 'outbound', 1),
    c('producer', 'producer', 'inbound', 9),
    c('stranger', 'other', 'outbound', 2),
    c('relay', 'needed', 'inbound', 10),
    c('producer-2', 'producer', 'outbound', 3),
  ];
  assert.deepEqual(names(connectionsToPrune(held, 4)), ['stranger']);
  assert.deepEqual(names(connectionsToPrune(held, 3)), ['stranger', 'producer']);
  assert.deepEqual(names(connectionsToPrune(held, 2)), ['stranger', 'producer', 'producer-2']);
  // Past the others and producers the needed stay, over the limit.
  assert.deepEqual(names(connectionsToPrune(held, 0)), ['stranger', 'producer', 'producer-2']);
});

test('pruning: within a rank, inbound before outbound, then the newest first', () => {
  const held = [
    c('old-in', 'other', 'inbound', 1),
    c('new-out', 'other', 'outbound', 9),
    c('new-in', 'other', 'inbound', 8),
    c('old-out', 'other', 'outbound', 2),
  ];
  assert.deepEqual(names(connectionsToPrune(held, 0)), ['new-in', 'old-in', 'new-out', 'old-out']);
  assert.deepEqual(names(connectionsToPrune(held, 3)), ['new-in']);
});
