import { assert } from 'chai';
import fc from 'fast-check';
import { WebProblem } from '../../core/web/problem.ts';
import { rejects } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import {
  integerParam,
  type JsonSchema,
  openApiParameter,
  type ParamDef,
  paramSchema,
  paramStruct,
  paramsSchema,
  parseQuery,
  stringParam,
  validateParams,
} from './params.ts';
import { ProblemError } from './problem.ts';
import { FACTORY_ID_PARAM, SEARCH_PARAMS, SUBMISSION_FIELDS } from './schemas.ts';

const RUNS = { numRuns: 300 };

// An independent reading of the published schema: what a client trusting /openapi.json expects.
function schemaAccepts(schema: JsonSchema, value: unknown): boolean {
  if (schema.type === 'integer') {
    return typeof value === 'number' && Number.isInteger(value) && value >= Number(schema.minimum) && value <= Number(schema.maximum);
  }
  if (typeof value !== 'string') return false;
  const length = [...value].length;
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) return false;
  if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value)) return false;
  if (typeof schema.minLength === 'number' && length < schema.minLength) return false;
  if (typeof schema.maxLength === 'number' && length > schema.maxLength) return false;
  return true;
}

const ALL: readonly ParamDef[] = [...SEARCH_PARAMS, FACTORY_ID_PARAM, ...SUBMISSION_FIELDS];

function interesting(def: ParamDef): fc.Arbitrary<unknown> {
  const near = def.type === 'integer' ? [def.minimum - 1, def.minimum, def.minimum + 1, def.maximum, def.maximum + 1] : [];
  return fc.oneof(
    fc.string({ maxLength: 50 }),
    fc.string({ unit: 'binary', minLength: 195, maxLength: 205 }),
    fc.string({ unit: 'binary', maxLength: 4 }),
    fc.string({ unit: fc.constantFrom('A', 'Z', 'a', '1', '-', 'Q', 'e', 'p', 'c', 'n', 'w', 'd', '@', '.'), maxLength: 24 }),
    fc.constantFrom(
      ...(def.type === 'string' && def.enum ? def.enum : ['']),
      'US',
      'us',
      'epa-110000000001',
      'wd-Q1',
      'cn-0123456789abcdef0123',
      'a@b.example',
    ),
    fc.integer({ min: -5, max: 200 }),
    fc.constantFrom(...near, 1.5, -0, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, null, true),
  );
}

test("every JSON value: the server's validator and the published schema agree", () => {
  for (const def of ALL) {
    const struct = paramStruct(def, 'json');
    const schema = paramSchema(def);
    fc.assert(
      fc.property(interesting(def), (value) => {
        assert.equal(struct.is(value), schemaAccepts(schema, value), `${def.name} = ${JSON.stringify(value)}`);
      }),
      RUNS,
    );
  }
});

test('every query string value: accepted exactly when its decimal reading is in the schema', () => {
  for (const def of ALL) {
    const schema = paramSchema(def);
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 30 }), fc.integer({ min: -5, max: 200 }).map(String), fc.constantFrom('1.0', '1e2', ' 5', '+5', '0x10', '007')),
        (text) => {
          const [error, value] = validateParamsSafe(def, text);
          const expected = def.type === 'integer' ? (/^-?[0-9]{1,16}$/.test(text) ? schemaAccepts(schema, Number(text)) : false) : schemaAccepts(schema, text);
          assert.equal(error === undefined, expected, `${def.name} = ${JSON.stringify(text)}`);
          if (error === undefined && def.type === 'integer') assert.equal(value, Number(text));
        },
      ),
      RUNS,
    );
  }
});

function validateParamsSafe(def: ParamDef, text: string): [ProblemError | undefined, unknown] {
  try {
    const out = validateParams<Record<string, unknown>>([def], { [def.name]: text }, 'text');
    return [undefined, out[def.name]];
  } catch (error) {
    assert.instanceOf(error, ProblemError);
    return [error as ProblemError, undefined];
  }
}

test('schemas state each rule: pattern, enumeration, lengths, range, default', () => {
  assert.deepEqual(paramSchema(stringParam('country', 'Country.', { pattern: /^[A-Z]{2}$/, minLength: 2, maxLength: 2 })), {
    type: 'string',
    pattern: '^[A-Z]{2}$',
    minLength: 2,
    maxLength: 2,
    description: 'Country.',
  });
  assert.deepEqual(paramSchema(integerParam('limit', 'Page size.', { minimum: 1, maximum: 100, default: 20 })), {
    type: 'integer',
    minimum: 1,
    maximum: 100,
    default: 20,
    description: 'Page size.',
  });
  assert.deepEqual(paramSchema(stringParam('kind', 'Kind.', { enum: ['a', 'b'], maxLength: 5 })), {
    type: 'string',
    enum: ['a', 'b'],
    maxLength: 5,
    description: 'Kind.',
  });
  const path = openApiParameter(FACTORY_ID_PARAM, 'path');
  assert.deepEqual([path.name, path.in, path.required], ['id', 'path', true]);
  assert.notProperty(path.schema as object, 'description');
  const query = openApiParameter(SEARCH_PARAMS[0]!, 'query');
  assert.deepEqual([query.in, query.required], ['query', false]);
  const object = paramsSchema(SUBMISSION_FIELDS);
  assert.deepEqual(object.required, ['kind', 'company', 'email']);
  assert.equal(object.additionalProperties, false);
});

test('defaults fill absent parameters; values keep their types', () => {
  assert.deepEqual(parseQuery(SEARCH_PARAMS, new URLSearchParams('q=steel')), { q: 'steel', limit: 20, offset: 0 });
  assert.deepEqual(parseQuery(SEARCH_PARAMS, new URLSearchParams('limit=100&offset=40&country=DE')), { limit: 100, offset: 40, country: 'DE' });
  assert.deepEqual(validateParams(SEARCH_PARAMS, { limit: 5 }, 'json'), { limit: 5, offset: 0 });
});

test('unknown, repeated and bad parameters are named, each with its rule', () => {
  const unknown = rejects(() => parseQuery(SEARCH_PARAMS, new URLSearchParams('colour=red&size=2')), ProblemError, 'unknown-parameter', /"colour", "size"/);
  assert.deepEqual((unknown as ProblemError).extra.errors, [
    { name: 'colour', detail: 'unknown parameter' },
    { name: 'size', detail: 'unknown parameter' },
  ]);
  rejects(() => parseQuery(SEARCH_PARAMS, new URLSearchParams('limit=5&limit=6')), WebProblem, 'repeated-parameter', /"limit"/);
  const bad = rejects(() => parseQuery(SEARCH_PARAMS, new URLSearchParams('limit=0&category=welding')), ProblemError, 'invalid-parameter');
  assert.match(bad.message, /limit must be an integer from 1 to 100, got "0"/);
  assert.match(bad.message, /category must be one of cnc-machining, .*inspection, got "welding"/);
  rejects(() => parseQuery([], new URLSearchParams('x=1')), ProblemError, 'unknown-parameter', /takes no parameters/);
  const missing = rejects(() => validateParams(SUBMISSION_FIELDS, { kind: 'join' }, 'json', 'invalid-body'), ProblemError, 'invalid-body');
  assert.match(missing.message, /company is required/);
  assert.equal((missing as ProblemError).status, 400);
});
