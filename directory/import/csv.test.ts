import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { readCsv } from './csv.ts';

test('csv: a row is reported at the line it starts on, even when quotes carry it over several', () => {
  const text = ['a,b', '1,2', '"three', 'lines', 'long",2,extra', '"p', 'q",r', '6,7,8', ''].join('\n');
  const table = readCsv(text, ['a', 'b']);
  assert.deepEqual(
    table.rows.map((r) => [r.line, r.values.a]),
    [
      [2, '1'],
      [6, 'p\nq'],
    ],
  );
  assert.deepEqual(
    table.problems.map((p) => p.line),
    [3, 8],
    'the skipped three-line row starts on line 3',
  );
  for (const p of table.problems) assert.notMatch(p.message, /on line/, 'the message does not name the last line');
});

test('csv: CRLF line ends count the same, inside quoted fields too', () => {
  const table = readCsv('a,b\r\n"x\r\ny",1,2\r\n3,4\r\n"p\r\nq",r\r\n5,6\r\n', ['a', 'b']);
  assert.deepEqual(
    table.problems.map((p) => p.line),
    [2],
  );
  assert.deepEqual(
    table.rows.map((r) => r.line),
    [4, 5, 7],
  );
});
