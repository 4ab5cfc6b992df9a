// Strict JSON bodies: a member named twice is refused, numbers written with a fraction or an
// exponent are noted. Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { DuplicateMemberError, parseStrictJson, writtenAsFraction } from './strict-json.ts';

function duplicateAt(text: string): string | undefined {
  try {
    parseStrictJson(text);
    return undefined;
  } catch (error) {
    if (error instanceof DuplicateMemberError) return error.path;
    throw error;
  }
}

test('strict json: a member named twice in one object is refused, with its path', () => {
  assert.equal(duplicateAt('{"to":"x","amount":"1","amount":"1000"}'), 'amount');
  assert.equal(duplicateAt('{"a":1,"\\u0061":2}'), 'a', 'the same name escaped');
  assert.equal(duplicateAt('{"m":[{"t":1},{"t":1,"t":2}]}'), 'm.1.t');
  assert.equal(duplicateAt('{"a":{"b":1},"a":{"b":1}}'), 'a');
  assert.equal(duplicateAt('{"__proto__":1,"__proto__":2}'), '__proto__');
  assert.equal(duplicateAt('{"a\\"":1,"a\\\\":2,"a":3}'), undefined, 'escaped quotes and backslashes end no name early');
  assert.equal(duplicateAt('[{"a":1},{"a":1}]'), undefined, 'one name in two objects');
  assert.equal(duplicateAt('{"a":{"a":{"a":1}}}'), undefined, 'one name at three depths');
  assert.equal(duplicateAt('{"a":"b","b":"a"}'), undefined, 'values are not names');
  assert.equal(duplicateAt('{"a":["a","a"]}'), undefined);
});

test('strict json: what JSON.parse refuses is still a SyntaxError; the value is what JSON.parse makes', () => {
  for (const text of ['', '{', '{"a":1,}', "{'a':1}", '01', '1.', '.5', '{"a":1}x']) {
    assert.throws(() => parseStrictJson(text), SyntaxError, undefined, JSON.stringify(text));
  }
  const text = '{"a":[1,2.5,{"b":null,"c":true}],"d":"\\"}{","e":-0}';
  assert.deepEqual(parseStrictJson(text), JSON.parse(text));
  assert.equal(parseStrictJson('"x"'), 'x');
});

test('strict json: numbers written with a fraction or an exponent are noted where they stand', () => {
  const body = parseStrictJson('{"a":1,"b":1.0,"c":1e3,"d":1E+3,"e":-2.50,"f":[5,6.0,{"g":7e-0}],"h":"1.0","i":10}') as Record<string, unknown>;
  assert.deepEqual(body.b, 1);
  assert.deepEqual(body.c, 1000);
  for (const key of ['b', 'c', 'd', 'e']) assert.isTrue(writtenAsFraction(body, key), key);
  for (const key of ['a', 'h', 'i', 'missing']) assert.isFalse(writtenAsFraction(body, key), key);
  const list = body.f as unknown[];
  assert.isFalse(writtenAsFraction(list, 0));
  assert.isTrue(writtenAsFraction(list, 1));
  assert.isTrue(writtenAsFraction(list[2], 'g'));
  assert.isFalse(writtenAsFraction(null, 'a'));
  assert.isFalse(writtenAsFraction(7, 'a'));
});

test('strict json: deep nesting is scanned without recursion', () => {
  const depth = 100_000;
  const text = `${'['.repeat(depth)}1.5${']'.repeat(depth)}`;
  let value: unknown;
  try {
    value = parseStrictJson(text);
  } catch (error) {
    // A runtime's JSON.parse may refuse such depth itself; the scan must not be what fails.
    assert.instanceOf(error, RangeError);
    assert.notInclude((error as Error).stack ?? '', 'strict-json');
    return;
  }
  assert.isArray(value);
});

test('strict json: many numbers deep down take time linear in the text, not in depth times numbers', () => {
  const depth = 20_000;
  const text = `${'['.repeat(depth)}${Array(20_000).fill('1.5').join(',')}${']'.repeat(depth)}`;
  const started = performance.now();
  parseStrictJson(text);
  // A scan that copied the path for every number would take seconds here.
  assert.isBelow(performance.now() - started, 1000);
});
