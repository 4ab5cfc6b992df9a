import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { serializeDataset } from '../dataset.ts';
import { decodeFrsExport, frsFacilityUrl, importEpaFrs, parseFrsDate } from './epa-frs.ts';
import { NaicsMap } from './evidence.ts';
import { readEpaFrsSample, readFixture } from './fixtures/read.ts';
import { mergeDataset } from './merge.ts';

// The sample: eight real FRS rows (five facilities, three spanning two rows each, one with
// `1265 EAST "D" AVENUE` unquoted) and made-up facilities 1199999999xx for evidence and bad rows.
const RETRIEVED = '2026-11-21';
const naicsMap = NaicsMap.parse(new TextDecoder().decode(await readFixture('../../data/naics-category-map.json')));
const text = await readEpaFrsSample();
const result = importEpaFrs(text, { retrieved: RETRIEVED, naicsMap });
const byId = new Map(result.records.map((r) => [r.id, r]));

test('epa: rows of one facility merge into one record per REGISTRY_ID', () => {
  assert.deepEqual(
    result.records.map((r) => r.id),
    [
      'epa-110000788746',
      'epa-110000850151',
      'epa-110000852220',
      'epa-110000861764',
      'epa-110003277515',
      'epa-119999999901',
      'epa-119999999902',
      'epa-119999999903',
    ],
  );
  assert.equal(result.rows, 16);
  const inx = byId.get('epa-110000852220')!;
  assert.equal(inx.name, 'INX INTERNATIONAL INK CO');
  assert.equal(inx.address, '1265 EAST "D" AVENUE', 'a quote inside an unquoted field is kept literally');
  assert.equal(inx.city, 'KALAMAZOO');
  assert.equal(inx.region, 'MI');
  assert.equal(inx.country, 'US');
  assert.equal(inx.verification, 'source-listed');
  assert.deepEqual(inx.sources, [
    {
      key: 'epa-frs',
      name: 'US EPA Facility Registry Service',
      url: frsFacilityUrl('110000852220'),
      licence: 'Public domain (US federal government work)',
      retrieved: RETRIEVED,
    },
  ]);
  assert.equal(frsFacilityUrl('110000852220'), 'https://frs-public.epa.gov/ords/frs_public2/fii_query_detail.disp_program_facility?p_registry_id=110000852220');
});

test('epa: malformed rows are reported with their line and contribute nothing', () => {
  assert.deepEqual(
    result.problems.map((p) => p.line),
    [14, 15, 16, 17],
  );
  assert.match(result.problems[0]!.message, /REGISTRY_ID "11999999990X"/);
  assert.match(result.problems[1]!.message, /CREATE_DATE "2000-02-30"/, 'an ISO date that is no day');
  assert.match(result.problems[2]!.message, /CREATE_DATE "31-FEB-01"/);
  assert.match(result.problems[3]!.message, /column|length/i);
  assert.isUndefined(byId.get('epa-119999999904'), 'the facility whose only row is bad is absent');
  // Line 16 repeats facility 119999999903 in Ohio with a bad date: none of its values came in.
  const wiring = byId.get('epa-119999999903')!;
  assert.equal(wiring.region, 'TX');
  assert.deepEqual(
    wiring.category_evidence.map((e) => e.value),
    ['335931'],
  );
});

test('epa: dates come from the rows (earliest CREATE_DATE, latest UPDATE/LAST_REPORTED)', () => {
  const plating = byId.get('epa-119999999901')!;
  assert.equal(plating.first_seen, '1999-01-05', '05-JAN-99 falls before the retrieval date, so 1999');
  assert.equal(plating.updated, '2017-06-01');
  const shop = byId.get('epa-119999999902')!;
  assert.equal(shop.first_seen, '2001-03-12');
  assert.equal(shop.updated, '2001-03-12', 'no update date: updated is the creation date');
  assert.equal(parseFrsDate('31-DEC-15', RETRIEVED), '2015-12-31');
  assert.equal(parseFrsDate('01-jan-26', RETRIEVED), '2026-01-01');
  assert.equal(parseFrsDate('01-DEC-26', RETRIEVED), '1926-12-01', 'a date after retrieval belongs to the century before');
  assert.equal(parseFrsDate('31-DEC-2015', RETRIEVED), '2015-12-31');
  // ISO, as the Envirofacts service answers.
  assert.equal(parseFrsDate('2015-12-31', RETRIEVED), '2015-12-31');
  assert.equal(parseFrsDate('2015-12-31 00:00:00', RETRIEVED), '2015-12-31');
  assert.equal(parseFrsDate('2015-12-31T13:45:10', RETRIEVED), '2015-12-31');
  for (const bad of ['2015-02-30', '2015-13-01', '2015-12-31 0:00', '15-12-31', '32-JAN-15', '29-FEB-23', '01-XYZ-15', '']) {
    assert.isNull(parseFrsDate(bad, RETRIEVED), bad);
  }
  assert.equal(parseFrsDate('29-FEB-24', RETRIEVED), '2024-02-29');
});

test('epa: NAICS codes give evidence through the map; strong assigns, weak alone does not', () => {
  const plating = byId.get('epa-119999999901')!;
  assert.deepEqual(plating.categories, ['surface-finishing']);
  assert.deepEqual(plating.category_evidence, [
    {
      category: 'surface-finishing',
      source: 'epa-frs',
      property: 'NAICS_CODE',
      value: '332813',
      label: 'Electroplating, Plating, Polishing, Anodizing, and Coloring',
      strength: 'strong',
    },
  ]);
  // 32619 has two US industries (326191, 326199): a 5-digit code only stands for its 6-digit
  // code ending in 0, so it finds nothing.
  assert.notInclude(
    plating.category_evidence.map((e) => e.value),
    '32619',
  );
  const shop = byId.get('epa-119999999902')!;
  assert.deepEqual(shop.categories, ['cnc-machining'], '33271 stands for 332710 Machine Shops');
  assert.equal(shop.category_evidence[0]!.value, '33271');
  const wiring = byId.get('epa-119999999903')!;
  assert.deepEqual(wiring.categories, [], 'weak evidence from one source assigns nothing');
  assert.equal(wiring.category_evidence[0]!.strength, 'weak');
  const ink = byId.get('epa-110000788746')!;
  assert.deepEqual(ink.categories, []);
  assert.deepEqual(ink.category_evidence, [], 'printing ink is in no category: no evidence at all');
});

test('epa: Latin-1 bytes decode; supplemental location joins the address; territories', () => {
  // The fixture is ASCII (test servers may re-encode text files); build a Latin-1 row from it.
  const [header, ...rows] = text.split('\r\n');
  const row = rows
    .find((r) => r.includes('119999999901'))!
    .replace('MUELLER', 'MÜLLER')
    .replace('SAO FIXTURE', 'SÃO FIXTURE');
  const bytes = Uint8Array.from(`${header}\r\n${row}\r\n`, (ch) => ch.charCodeAt(0));
  assert.include([...bytes], 0xdc, 'Ü is one Latin-1 byte');
  const [plating] = importEpaFrs(decodeFrsExport(bytes), { retrieved: RETRIEVED, naicsMap }).records;
  assert.equal(plating!.name, 'FIXTURE GALVANOTECHNIK MÜLLER');
  assert.equal(plating!.city, 'SÃO FIXTURE');
  assert.equal(plating!.address, '1 FIXTURE WAY, BLDG 2');
  const shop = byId.get('epa-119999999902')!;
  assert.equal(shop.country, 'PR', 'Puerto Rico has its own ISO 3166-1 code');
  assert.isNull(shop.region);
});

test('epa: importing the same text twice gives the same bytes', () => {
  const again = importEpaFrs(text, { retrieved: RETRIEVED, naicsMap });
  const once = serializeDataset(mergeDataset(null, [result]));
  const twice = serializeDataset(mergeDataset(mergeDataset(null, [result]), [again]));
  assert.equal(twice, once);
});

test('epa: an export without the needed columns is refused whole', () => {
  const refused = importEpaFrs('REGISTRY_ID,PRIMARY_NAME\n110000852220,X\n', { retrieved: RETRIEVED, naicsMap });
  assert.deepEqual(refused.records, []);
  assert.equal(refused.problems.length, 1);
  assert.match(refused.problems[0]!.message, /LOCATION_ADDRESS/);
});
