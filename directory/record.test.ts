import { assert } from 'chai';
import fc from 'fast-check';
import { validate } from 'superstruct';
import { test } from '../test/harness.ts';
import {
  CATEGORIES,
  CONTACT_KINDS,
  EVIDENCE_STRENGTHS,
  FACTORY_ID_PATTERN,
  type FactoryRecord,
  FactoryRecordStruct,
  isFactoryId,
  isFactoryRecord,
  isIsoDate,
} from './record.ts';

test('ids: the three formats of the spec, nothing else', () => {
  for (const id of ['cn-0123456789abcdef0123', 'wd-Q1', 'wd-Q42', 'wd-Q123456789', 'epa-110000852220', 'epa-000000000000']) {
    assert.isTrue(isFactoryId(id), id);
  }
  for (const id of [
    'cn-0123456789ABCDEF0123', // upper case
    'cn-0123456789abcdef012', // 19
    'cn-0123456789abcdef01234', // 21
    'wd-Q0',
    'wd-Q042',
    'wd-q42',
    'wd-42',
    'epa-11000085222', // 11 digits
    'epa-1100008522200',
    'EPA-110000852220',
    ' epa-110000852220',
    'epa-110000852220\n',
    '',
  ]) {
    assert.isFalse(isFactoryId(id), JSON.stringify(id));
  }
  assert.equal(FACTORY_ID_PATTERN.source, '^(cn-[0-9a-f]{20}|wd-Q[1-9][0-9]*|epa-[0-9]{12})$');
});

test('dates: YYYY-MM-DD and a real day', () => {
  assert.isTrue(isIsoDate('2024-02-29'));
  assert.isTrue(isIsoDate('1999-12-31'));
  for (const bad of ['2023-02-29', '2024-13-01', '2024-00-10', '2024-1-01', '24-01-01', '2024-01-01T00:00:00Z', '']) {
    assert.isFalse(isIsoDate(bad), bad);
  }
});

const good: FactoryRecord = {
  id: 'wd-Q900000001',
  name: 'Fixture GmbH',
  country: 'DE',
  region: null,
  city: 'Fixturestadt',
  address: null,
  postal_code: null,
  categories: ['cnc-machining'],
  category_evidence: [{ category: 'cnc-machining', source: 'wikidata', property: 'P452', value: 'Q1', label: 'machining', strength: 'medium' }],
  contacts: [{ kind: 'website', value: 'https://fixture.example/', source: 'wikidata' }],
  sources: [{ key: 'wikidata', name: 'Wikidata', url: 'https://www.wikidata.org/wiki/Q900000001', licence: 'CC0 1.0', retrieved: '2025-01-01' }],
  verification: 'unverified',
  first_seen: '2025-01-01',
  updated: '2025-01-02',
};

test('FactoryRecordStruct accepts a whole record and refuses each kind of fault', () => {
  assert.isUndefined(validate(good, FactoryRecordStruct)[0]);
  const faults: [string, unknown][] = [
    ['id', { ...good, id: 'wd-Q01' }],
    ['country', { ...good, country: 'de' }],
    ['categories', { ...good, categories: ['welding'] }],
    ['category_evidence', { ...good, category_evidence: [{ ...good.category_evidence[0], strength: 'certain' }] }],
    ['contacts', { ...good, contacts: [{ kind: 'phone', value: '1', source: 'x' }] }],
    ['sources', { ...good, sources: [] }],
    ['sources', { ...good, sources: [{ ...good.sources[0], url: 'ftp://x' }] }],
    ['verification', { ...good, verification: 'verified' }],
    ['updated', { ...good, updated: '2025-02-30' }],
    ['extra', { ...good, extra: 1 }],
    ['name', { ...good, name: '' }],
  ];
  for (const [path, value] of faults) {
    const [error] = validate(value, FactoryRecordStruct);
    assert.instanceOf(error, Error, path);
    assert.equal(String(error!.path[0]), path);
  }
});

// The fast check the loader uses must never accept what the schema refuses, and must accept the
// valid records it is there to speed up.
const text = fc.string({ maxLength: 8 });
const validRecord: fc.Arbitrary<FactoryRecord> = fc.record({
  id: fc.oneof(
    fc.stringMatching(/^cn-[0-9a-f]{20}$/),
    fc.integer({ min: 1 }).map((n) => `wd-Q${n}`),
    fc.stringMatching(/^epa-[0-9]{12}$/),
  ),
  name: fc.string({ minLength: 1, maxLength: 12 }),
  country: fc.stringMatching(/^[A-Z]{2}$/),
  region: fc.option(text, { nil: null }),
  city: fc.option(text, { nil: null }),
  address: fc.option(text, { nil: null }),
  postal_code: fc.option(text, { nil: null }),
  categories: fc.subarray([...CATEGORIES]),
  category_evidence: fc.array(
    fc.record({
      category: fc.constantFrom(...CATEGORIES),
      source: fc.string({ minLength: 1, maxLength: 6 }),
      property: fc.string({ minLength: 1, maxLength: 6 }),
      value: fc.string({ minLength: 1, maxLength: 6 }),
      label: text,
      strength: fc.constantFrom(...EVIDENCE_STRENGTHS),
    }),
    { maxLength: 3 },
  ),
  contacts: fc.array(
    fc.record({ kind: fc.constantFrom(...CONTACT_KINDS), value: fc.string({ minLength: 1, maxLength: 6 }), source: fc.string({ minLength: 1, maxLength: 6 }) }),
    { maxLength: 3 },
  ),
  sources: fc.array(
    fc.record({
      key: fc.string({ minLength: 1, maxLength: 6 }),
      name: fc.string({ minLength: 1, maxLength: 6 }),
      url: fc.stringMatching(/^https?:\/\/[a-z]{1,8}\.example\/[a-z]{0,4}$/),
      licence: fc.string({ minLength: 1, maxLength: 6 }),
      retrieved: fc.date({ min: new Date('1990-01-01'), max: new Date('2030-12-31'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
    }),
    { minLength: 1, maxLength: 2 },
  ),
  verification: fc.constantFrom('unverified', 'source-listed'),
  first_seen: fc.constantFrom('2020-01-01', '2024-02-29'),
  updated: fc.constantFrom('2021-12-31', '2025-06-30'),
});

/** A record with one value somewhere replaced, removed or added. */
const mutated = fc
  .tuple(validRecord, fc.nat(), fc.nat(), fc.anything({ maxDepth: 1 }), fc.constantFrom('set', 'delete', 'add'))
  .map(([record, a, b, value, how]) => {
    const copy = JSON.parse(JSON.stringify(record)) as Record<string, unknown>;
    const keys = Object.keys(copy);
    let target: Record<string, unknown> = copy;
    let key = keys[a % keys.length]!;
    const inner = copy[key];
    if (Array.isArray(inner) && inner.length > 0 && typeof inner[0] === 'object') {
      target = inner[b % inner.length] as Record<string, unknown>;
      const innerKeys = Object.keys(target);
      key = innerKeys[b % innerKeys.length]!;
    }
    if (how === 'delete') delete target[key];
    else if (how === 'add') target[`extra${a % 3}`] = value;
    else target[key] = value;
    return copy;
  });

test('isFactoryRecord accepts the valid records and only what FactoryRecordStruct accepts', () => {
  fc.assert(
    fc.property(validRecord, (record) => {
      assert.isUndefined(validate(record, FactoryRecordStruct)[0]);
      assert.isTrue(isFactoryRecord(record));
    }),
    { numRuns: 300 },
  );
  fc.assert(
    fc.property(mutated, (value) => {
      if (isFactoryRecord(value)) assert.isUndefined(validate(value, FactoryRecordStruct)[0], JSON.stringify(value));
    }),
    { numRuns: 1000 },
  );
  assert.isTrue(isFactoryRecord(good));
  assert.isFalse(isFactoryRecord({ ...good, updated: '2025-02-30' }));
  assert.isFalse(isFactoryRecord({ ...good, extra: 1 }));
  assert.isFalse(isFactoryRecord({ ...good, sources: [] }));
  assert.isFalse(isFactoryRecord(null));
});
