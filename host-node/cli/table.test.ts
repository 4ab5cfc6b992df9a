/** Tables for people: padded columns within 100 characters, the widest cut first with `…`. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { columns } from './table.ts';

test('columns pad every cell but the last to its column, two spaces apart', () => {
  assert.equal(
    columns([
      ['ID', 'STATUS', 'NOTE'],
      ['a', 'running', 'x'],
    ]),
    'ID  STATUS   NOTE\na   running  x\n',
  );
});

test('a table wider than its width cuts the widest columns first, never below the heading', () => {
  const rows = [
    ['ID', 'STATUS', 'BID'],
    ['0b0b', 's'.repeat(30), 'b'.repeat(12)],
  ];
  assert.deepEqual(columns(rows, 30).split('\n'), ['ID    STATUS       BID', `0b0b  ${'s'.repeat(10)}…  ${'b'.repeat(10)}…`, '']);
  assert.deepEqual(columns(rows, 10).split('\n'), ['ID  STATUS  BID', '0…  sssss…  bb…', ''], 'at the headings the cutting stops');
});
