import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { serializeDataset } from '../dataset.ts';
import { readFixtureText } from './fixtures/read.ts';
import { mergeDataset } from './merge.ts';
import { bindingLines, importWikidata } from './wikidata.ts';

const RETRIEVED = '2025-06-01';
const json = await readFixtureText('wikidata-sample.json');
const result = importWikidata(json, { retrieved: RETRIEVED });
const byId = new Map(result.records.map((r) => [r.id, r]));

test('wikidata: rows of one item merge into one wd-Q record with every industry and website', () => {
  assert.deepEqual(
    result.records.map((r) => r.id),
    ['wd-Q900000001', 'wd-Q900000002'],
  );
  assert.equal(result.rows, 6);
  const r = byId.get('wd-Q900000001')!;
  assert.equal(r.name, 'Fixture Präzisionsteile GmbH');
  assert.equal(r.country, 'DE');
  assert.equal(r.city, 'Fixturestadt');
  assert.deepEqual(r.contacts, [{ kind: 'website', value: 'https://praezision.example/', source: 'wikidata' }]);
  assert.deepEqual(r.sources, [
    { key: 'wikidata', name: 'Wikidata', url: 'https://www.wikidata.org/wiki/Q900000001', licence: 'CC0 1.0', retrieved: RETRIEVED },
  ]);
  assert.equal(r.verification, 'unverified');
  assert.equal(r.updated, '2025-03-04', "the item's modification date");
  assert.equal(r.first_seen, '2025-03-04');
  assert.deepEqual(result.sources, [{ key: 'wikidata', name: 'Wikidata', url: 'https://query.wikidata.org/', licence: 'CC0 1.0', retrieved: RETRIEVED }]);
});

test('wikidata: industries become P452 evidence through their labels', () => {
  const r = byId.get('wd-Q900000001')!;
  assert.deepEqual(r.categories, ['cnc-machining', 'surface-finishing']);
  assert.deepEqual(r.category_evidence, [
    { category: 'cnc-machining', source: 'wikidata', property: 'P452', value: 'Q900000201', label: 'machining', strength: 'medium' },
    {
      category: 'surface-finishing',
      source: 'wikidata',
      property: 'P452',
      value: 'Q900000202',
      label: 'electroplating',
      strength: 'medium',
    },
  ]);
  const plastics = byId.get('wd-Q900000002')!;
  assert.deepEqual(plastics.categories, [], '"plastic products" is weak evidence for injection moulding');
  assert.deepEqual(
    plastics.category_evidence.map((e) => [e.category, e.strength]),
    [['injection-mould', 'weak']],
  );
  assert.isNull(plastics.city);
  assert.deepEqual(plastics.contacts, []);
  assert.equal(plastics.updated, RETRIEVED, 'no modification date: the retrieval date');
});

test('wikidata: bad bindings are reported with the line they start on', () => {
  const lines = bindingLines(json);
  assert.equal(lines.length, 6);
  assert.equal(json.split('\n')[lines[3]! - 1]!.trim(), '}, {', 'each line is where a binding opens');
  assert.deepEqual(
    result.problems.map((p) => p.line),
    [lines[3], lines[4], lines[5]],
  );
  assert.match(result.problems[0]!.message, /Q900000003 has no label/);
  assert.match(result.problems[1]!.message, /countryCode "SWEDEN"/);
  assert.match(result.problems[2]!.message, /website "not a url"/);
  assert.isUndefined(byId.get('wd-Q900000005'), 'a binding with a bad value is skipped whole');
});

test('wikidata: results of another query, or not JSON, are refused whole', () => {
  const other = importWikidata(JSON.stringify({ head: { vars: ['item'] }, results: { bindings: [] } }), { retrieved: RETRIEVED });
  assert.deepEqual(other.records, []);
  assert.match(other.problems[0]!.message, /\?itemLabel, \?countryCode/);
  assert.match(importWikidata('{', { retrieved: RETRIEVED }).problems[0]!.message, /not JSON/);
});

test('wikidata: importing the same results twice gives the same bytes', () => {
  const once = mergeDataset(null, [result]);
  const twice = mergeDataset(once, [importWikidata(json, { retrieved: RETRIEVED })]);
  assert.equal(serializeDataset(twice), serializeDataset(once));
});

test('wikidata: a country code of two letters that names no ISO 3166-1 country is refused', () => {
  const binding = (qid: string, code: string): Record<string, { type: string; value: string }> => ({
    item: { type: 'uri', value: `http://www.wikidata.org/entity/${qid}` },
    itemLabel: { type: 'literal', value: `Works ${qid}` },
    countryCode: { type: 'literal', value: code },
  });
  const text = JSON.stringify({
    head: { vars: ['item', 'itemLabel', 'countryCode'] },
    results: { bindings: [binding('Q11', 'SE'), binding('Q12', 'XK'), binding('Q13', 'zz')] },
  });
  const imported = importWikidata(text, { retrieved: RETRIEVED });
  assert.deepEqual(
    imported.records.map((r) => [r.id, r.country]),
    [['wd-Q11', 'SE']],
  );
  assert.deepEqual(
    imported.problems.map((p) => p.message.match(/countryCode "([A-Z]+)"/)?.[1]),
    ['XK', 'ZZ'],
  );
});

test('wikidata: ?regionCode gives the region where it is a subdivision code of the item country', () => {
  const binding = (item: number, country: string, regionCode?: string): Record<string, unknown> => ({
    item: { type: 'uri', value: `http://www.wikidata.org/entity/Q${item}` },
    itemLabel: { type: 'literal', value: `Works ${item}` },
    countryCode: { type: 'literal', value: country },
    ...(regionCode !== undefined && { regionCode: { type: 'literal', value: regionCode } }),
  });
  const results = {
    head: { vars: ['item', 'itemLabel', 'countryCode', 'regionCode'] },
    // Q1: two codes, the first in code order kept; Q2: a code of another country; Q3: none.
    results: { bindings: [binding(1, 'FR', 'FR-IDF'), binding(1, 'FR', 'FR-75C'), binding(2, 'DE', 'AT-9'), binding(3, 'US')] },
  };
  const imported = importWikidata(JSON.stringify(results), { retrieved: RETRIEVED });
  assert.deepEqual(
    imported.records.map((r) => [r.id, r.region]),
    [
      ['wd-Q1', '75C'],
      ['wd-Q2', null],
      ['wd-Q3', null],
    ],
  );
});
