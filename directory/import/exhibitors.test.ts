import { assert } from 'chai';
import { sha256 } from '../../core/crypto/sha256.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { test } from '../../test/harness.ts';
import { serializeDataset } from '../dataset.ts';
import { isFactoryId } from '../record.ts';
import { exhibitorId, exhibitorSourceKey, importExhibitors } from './exhibitors.ts';
import { readFixtureText } from './fixtures/read.ts';
import { mergeDataset } from './merge.ts';

const csv = await readFixtureText('exhibitors-sample.csv');
const result = importExhibitors(csv);
const FAIR = 'https://fair.example/2025/exhibitors';
const EXPO = 'https://expo.example/list';

test('exhibitors: the id is cn- + 20 hex of SHA-256 of the documented canonical string', () => {
  const id = exhibitorId(FAIR, 'Fixture Sheet Metal Co.', 'CN');
  const expected = toHex(sha256(new TextEncoder().encode(`exhibitor|${FAIR}|fixture sheet metal co|CN`))).slice(0, 20);
  assert.equal(id, `cn-${expected}`);
  assert.isTrue(isFactoryId(id));
  assert.equal(exhibitorId(FAIR, 'FIXTURE  SHEET-METAL CO', 'CN'), id, 'case, spacing and punctuation do not change it');
  assert.notEqual(exhibitorId(EXPO, 'Fixture Sheet Metal Co.', 'CN'), id, 'another list is another source');
  assert.notEqual(exhibitorId(FAIR, 'Fixture Sheet Metal Co.', 'TW'), id);
});

test('exhibitors: rows become unverified records with observed emails and listed evidence', () => {
  const sheet = result.records.find((r) => r.id === exhibitorId(FAIR, 'Fixture Sheet Metal Co.', 'CN'))!;
  const key = exhibitorSourceKey('Fixture Fair 2025');
  assert.equal(key, 'exhibitor:fixture-fair-2025');
  assert.equal(sheet.name, 'Fixture Sheet Metal Co.');
  assert.equal(sheet.city, 'Fixture City');
  assert.equal(sheet.verification, 'unverified');
  assert.deepEqual(sheet.contacts, [
    { kind: 'website', value: 'https://www.sheetmetal.example', source: key },
    { kind: 'observed-email', value: 'sales@sheetmetal.example', source: key },
  ]);
  assert.deepEqual(sheet.categories, ['sheet-metal']);
  assert.deepEqual(sheet.category_evidence, [
    { category: 'sheet-metal', source: key, property: 'exhibitor-category', value: 'Laser cutting', label: 'Laser cutting', strength: 'weak' },
    { category: 'sheet-metal', source: key, property: 'exhibitor-category', value: 'Sheet metal', label: 'Sheet metal', strength: 'medium' },
  ]);
  assert.deepEqual(sheet.sources, [{ key, name: 'Fixture Fair 2025', url: FAIR, licence: 'not stated by the source', retrieved: '2025-05-20' }]);
  assert.equal(sheet.first_seen, '2025-05-20');
  const mould = result.records.find((r) => r.name === 'Fixture Mould Works')!;
  assert.deepEqual(
    mould.contacts.map((c) => c.value),
    ['https://mould.example/', 'export@mould.example', 'info@mould.example'],
  );
  assert.deepEqual(mould.categories, ['injection-mould']);
  const trading = result.records.find((r) => r.name === 'Fixture Trading Ltd')!;
  assert.equal(trading.country, 'CN', 'the country is upper-cased');
  assert.deepEqual(trading.categories, []);
  assert.deepEqual(trading.category_evidence, [], 'a listed text that names no category is no evidence');
  const quoted = result.records.find((r) => r.name === 'Fixture "Quoted" Assembly')!;
  assert.deepEqual(quoted.categories, ['wire-harness', 'assembly']);
});

test('exhibitors: the same company on two lists is two records, each list a source', () => {
  const named = result.records.filter((r) => r.name === 'Fixture Sheet Metal Co.');
  assert.equal(named.length, 2);
  assert.deepEqual(
    result.sources.map((s) => [s.key, s.url, s.licence, s.retrieved]),
    [
      ['exhibitor:fixture-expo-2024', EXPO, 'Listed facts only', '2024-09-01'],
      ['exhibitor:fixture-fair-2025', FAIR, 'not stated by the source', '2025-05-20'],
    ],
  );
});

test('exhibitors: malformed rows are reported with their line and skipped whole', () => {
  assert.equal(result.rows, 8);
  assert.equal(result.records.length, 5);
  assert.deepEqual(
    result.problems.map((p) => p.line),
    [6, 7, 8],
  );
  assert.match(result.problems[0]!.message, /email "not-an-address"/);
  assert.match(result.problems[1]!.message, /retrieved "20-05-2025"/);
  assert.match(result.problems[2]!.message, /column|length/i);
  assert.isUndefined(result.records.find((r) => r.name.startsWith('Fixture Bad')));
});

test('exhibitors: a list without the required columns is refused; re-importing changes nothing', () => {
  const refused = importExhibitors('name,country\nX,CN\n');
  assert.deepEqual(refused.records, []);
  assert.match(refused.problems[0]!.message, /event, event_url, retrieved/);
  const once = mergeDataset(null, [result]);
  assert.equal(serializeDataset(mergeDataset(once, [importExhibitors(csv)])), serializeDataset(once));
});

test('exhibitors: a country code of the right shape that is not ISO 3166-1 is a row problem at its line', () => {
  const row = (name: string, country: string): string => `Fair 2025,https://fair.example/,2025-05-20,${name},${country}`;
  const text = [
    'event,event_url,retrieved,name,country',
    row('Good Co', 'de'),
    row('Nowhere Co', 'XX'),
    row('Kingdom Co', 'UK'),
    row('Island Co', 'AX'),
    '',
  ].join('\n');
  const imported = importExhibitors(text);
  assert.sameMembers(
    imported.records.map((r) => `${r.name}/${r.country}`),
    ['Good Co/DE', 'Island Co/AX'],
  );
  assert.deepEqual(
    imported.problems.map((p) => p.line),
    [3, 4],
  );
  assert.match(imported.problems[0]!.message, /country "XX" is not an ISO 3166-1 alpha-2 code/);
});

test('exhibitors: an optional region, an ISO 3166-2 code of the row country or its part after the hyphen', () => {
  const row = (name: string, country: string, region: string): string => `Fair 2025,https://fair.example/,2025-05-20,${name},${country},${region}`;
  const text = [
    'event,event_url,retrieved,name,country,region',
    row('Ohio Co', 'US', 'US-OH'),
    row('Bavaria Co', 'de', 'by'),
    row('Plain Co', 'FR', ''),
    row('Wrong Country Co', 'US', 'DE-BY'),
    row('Long Co', 'US', 'US-OHIO'),
    '',
  ].join('\n');
  const imported = importExhibitors(text);
  assert.sameMembers(
    imported.records.map((r) => `${r.name}/${r.country}/${r.region}`),
    ['Ohio Co/US/OH', 'Bavaria Co/DE/BY', 'Plain Co/FR/null'],
  );
  assert.deepEqual(
    imported.problems.map((p) => p.line),
    [5, 6],
  );
  assert.match(imported.problems[0]!.message, /region "DE-BY" is not an ISO 3166-2 code of US/);
});
