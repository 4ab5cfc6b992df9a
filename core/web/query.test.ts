import { assert } from 'chai';
import { rejects } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { WebProblem } from './problem.ts';
import { queryValues } from './query.ts';

test('query: one value per name, in an object without a prototype', () => {
  const values = queryValues(new URLSearchParams('limit=5&__proto__=x'));
  assert.equal(values.limit, '5');
  // biome-ignore lint/suspicious/noProto lint/complexity/useLiteralKeys: reads the own key `__proto__`, which the test is about.
  assert.equal(values['__proto__'], 'x');
  assert.isNull(Object.getPrototypeOf(values));
});

test('query: repeated names are refused, all named, with the problem the service picks', () => {
  const error = rejects(() => queryValues(new URLSearchParams('a=1&a=2&b=1&b=2')), WebProblem, 'repeated-parameter', /"a", "b"/) as WebProblem;
  assert.deepEqual(error.extra.errors, [
    { name: 'a', detail: 'given more than once' },
    { name: 'b', detail: 'given more than once' },
  ]);
  rejects(() => queryValues(new URLSearchParams('a=1&a=2'), { repeated: 'invalid-parameter' }), WebProblem, 'invalid-parameter');
});

test('query: names a route does not take are refused when it says what it takes', () => {
  assert.deepEqual({ ...queryValues(new URLSearchParams('limit=1'), { allowed: ['limit'] }) }, { limit: '1' });
  const error = rejects(
    () => queryValues(new URLSearchParams('limt=1&x=2'), { allowed: ['limit'] }),
    WebProblem,
    'unknown-parameter',
    /"limt", "x"; this operation takes limit/,
  ) as WebProblem;
  assert.equal(error.status, 400);
  rejects(() => queryValues(new URLSearchParams('x=1'), { allowed: [] }), WebProblem, 'unknown-parameter', /takes no parameters/);
});
