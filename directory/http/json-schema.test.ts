import { assert } from 'chai';
import { array, enums, integer, literal, nullable, number, object, optional, record, string, type, union } from 'superstruct';
import { test } from '../../test/harness.ts';
import { FACTORY_ID_PATTERN, FactoryRecordStruct } from '../record.ts';
import { fixtureDataset } from '../testing/fixtures.ts';
import { annotate, structSchema } from './json-schema.ts';
import './schemas.ts';

test('structSchema reads kinds, members, optional and nullable from the struct itself', () => {
  const struct = object({
    name: string(),
    size: optional(integer()),
    ratio: nullable(number()),
    kind: enums(['a', 'b']),
    tags: array(string()),
    fixed: literal('x'),
    none: literal(null),
  });
  assert.deepEqual(structSchema(struct), {
    type: 'object',
    properties: {
      name: { type: 'string' },
      size: { type: 'integer' },
      ratio: { type: ['number', 'null'] },
      kind: { type: 'string', enum: ['a', 'b'] },
      tags: { type: 'array', items: { type: 'string' } },
      fixed: { const: 'x' },
      none: { type: 'null' },
    },
    required: ['name', 'ratio', 'kind', 'tags', 'fixed', 'none'],
    additionalProperties: false,
  });
  assert.notProperty(structSchema(type({ a: string() })), 'additionalProperties');
});

test('what superstruct hides is annotated; what cannot be read and is not annotated is an error', () => {
  const counts = annotate(record(string(), integer()), { additionalProperties: { type: 'integer' } });
  assert.deepEqual(structSchema(counts), { type: 'object', additionalProperties: { type: 'integer' } });
  assert.throws(() => structSchema(record(string(), integer())), TypeError, /record/);
  assert.throws(() => structSchema(union([string(), integer()])), TypeError, /union/);
});

test('members named in refs become $ref', () => {
  const inner = object({ a: string() });
  const outer = object({ one: inner, many: array(inner) });
  const refs = new Map([[inner, '#/components/schemas/Inner']]);
  assert.deepEqual(structSchema(outer, refs).properties, {
    one: { $ref: '#/components/schemas/Inner' },
    many: { type: 'array', items: { $ref: '#/components/schemas/Inner' } },
  });
});

test('the record schema lists every member, and its annotated patterns agree with the struct', () => {
  const schema = structSchema(FactoryRecordStruct) as { required: string[]; properties: Record<string, { pattern?: string; type?: unknown }> };
  const record = fixtureDataset().records[0]!;
  assert.sameMembers(schema.required, Object.keys(record));
  assert.deepEqual(schema.properties.city!.type, ['string', 'null']);
  const idPattern = new RegExp(schema.properties.id!.pattern!);
  assert.equal(idPattern.source, FACTORY_ID_PATTERN.source);
  for (const id of ['epa-110000000001', 'wd-Q1', 'cn-0123456789abcdef0123', 'epa-1', 'wd-Q01', 'cn-0123456789ABCDEF0123', 'x']) {
    assert.equal(FactoryRecordStruct.is({ ...record, id }), idPattern.test(id), id);
  }
  const countryPattern = new RegExp(schema.properties.country!.pattern!);
  for (const country of ['US', 'us', 'USA', 'U']) assert.equal(FactoryRecordStruct.is({ ...record, country }), countryPattern.test(country), country);
});
