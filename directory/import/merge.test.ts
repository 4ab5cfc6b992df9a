import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { serializeDataset } from '../dataset.ts';
import type { CategoryEvidence, FactoryRecord, SourceRef } from '../record.ts';
import { assignCategories, evidenceFromText, NaicsMap } from './evidence.ts';
import { datasetChanges, mergeDataset, mergeRecords, normalizeRecord } from './merge.ts';

const source = (key: string, retrieved: string): SourceRef => ({
  key,
  name: key,
  url: `https://${key.replace(':', '-')}.example/`,
  licence: 'test',
  retrieved,
});

const evidence = (category: CategoryEvidence['category'], src: string, strength: CategoryEvidence['strength'], value = 'v'): CategoryEvidence => ({
  category,
  source: src,
  property: 'p',
  value,
  label: value,
  strength,
});

function record(patch: Partial<FactoryRecord>): FactoryRecord {
  return {
    id: 'wd-Q1',
    name: 'Fixture',
    country: 'DE',
    region: null,
    city: null,
    address: null,
    postal_code: null,
    categories: [],
    category_evidence: [],
    contacts: [],
    sources: [source('wikidata', '2025-01-01')],
    verification: 'unverified',
    first_seen: '2025-01-01',
    updated: '2025-01-01',
    ...patch,
  };
}

test('categories: strong or medium evidence assigns; weak needs a second source', () => {
  assert.deepEqual(assignCategories([evidence('sheet-metal', 'a', 'strong')]), ['sheet-metal']);
  assert.deepEqual(assignCategories([evidence('sheet-metal', 'a', 'medium')]), ['sheet-metal']);
  assert.deepEqual(assignCategories([evidence('sheet-metal', 'a', 'weak')]), []);
  assert.deepEqual(assignCategories([evidence('sheet-metal', 'a', 'weak', 'x'), evidence('sheet-metal', 'a', 'weak', 'y')]), []);
  assert.deepEqual(assignCategories([evidence('sheet-metal', 'a', 'weak'), evidence('sheet-metal', 'b', 'weak')]), ['sheet-metal']);
  assert.deepEqual(
    assignCategories([evidence('inspection', 'a', 'medium'), evidence('cnc-machining', 'a', 'strong')]),
    ['cnc-machining', 'inspection'],
    'in the order of CATEGORIES',
  );
});

test('text evidence: folded words, strongest rule per category, slugs count', () => {
  const origin = { source: 's', property: 'p', value: 'v' };
  const kinds = (text: string): string[] => evidenceFromText(text, origin).map((e) => `${e.category}:${e.strength}`);
  assert.deepEqual(kinds('CNC-Bearbeitung'), ['cnc-machining:medium']);
  assert.deepEqual(kinds('Injection Molding'), ['injection-mould:medium']);
  assert.deepEqual(kinds('surface-finishing'), ['surface-finishing:medium']);
  assert.deepEqual(kinds('ANODIZING & powder coating'), ['surface-finishing:medium']);
  assert.deepEqual(kinds('PCB assembly'), ['pcba-smt:medium', 'assembly:weak']);
  assert.deepEqual(kinds('Non-destructive testing'), ['inspection:medium']);
  assert.deepEqual(kinds('Printing inks'), []);
  assert.deepEqual(kinds('machinery'), [], 'a word that merely begins like a category word is no evidence');
});

test('NAICS map: parsed and validated; a 5-digit code finds its 6-digit code ending in 0', () => {
  const map = NaicsMap.parse(
    JSON.stringify({ _note: 'x', mappings: [{ naics: '332710', title: 'Machine Shops', category: 'cnc-machining', strength: 'strong' }] }),
  );
  assert.equal(map.lookup('332710')[0]!.category, 'cnc-machining');
  assert.equal(map.lookup('33271')[0]!.naics, '332710');
  assert.deepEqual(map.lookup('3327'), []);
  assert.throws(() => NaicsMap.parse('{"mappings":[{"naics":"33271","title":"x","category":"cnc-machining","strength":"strong"}]}'), /mappings\.0\.naics/);
  assert.throws(() => NaicsMap.parse('{"mappings":[{"naics":"332710","title":"x","category":"welding","strength":"strong"}]}'), /category/);
  assert.throws(() => NaicsMap.parse('nope'), /not JSON/);
});

test('merge: the newer import of a source replaces what it said; other sources stay', () => {
  const older = record({
    name: 'Old name',
    category_evidence: [evidence('sheet-metal', 'wikidata', 'medium'), evidence('sheet-metal', 'exhibitor:x', 'weak')],
    contacts: [
      { kind: 'website', value: 'https://old.example/', source: 'wikidata' },
      { kind: 'observed-email', value: 'a@x.example', source: 'exhibitor:x' },
    ],
    sources: [source('wikidata', '2024-01-01'), source('exhibitor:x', '2024-02-01')],
    first_seen: '2024-01-01',
    updated: '2024-06-01',
  });
  const newer = record({
    name: 'New name',
    category_evidence: [evidence('assembly', 'wikidata', 'medium')],
    contacts: [{ kind: 'website', value: 'https://new.example/', source: 'wikidata' }],
    sources: [source('wikidata', '2025-01-01')],
    first_seen: '2025-01-01',
    updated: '2025-01-01',
  });
  const merged = mergeRecords(older, newer);
  assert.equal(merged.name, 'New name');
  assert.deepEqual(
    merged.category_evidence.map((e) => `${e.category}/${e.source}`),
    ['sheet-metal/exhibitor:x', 'assembly/wikidata'],
  );
  assert.deepEqual(merged.categories, ['assembly'], 'the withdrawn medium evidence no longer assigns sheet-metal');
  assert.deepEqual(
    merged.contacts.map((c) => c.value),
    ['https://new.example/', 'a@x.example'],
  );
  assert.deepEqual(
    merged.sources.map((s) => `${s.key}@${s.retrieved}`),
    ['exhibitor:x@2024-02-01', 'wikidata@2025-01-01'],
  );
  assert.equal(merged.first_seen, '2024-01-01');
  assert.equal(merged.updated, '2025-01-01');
});

test('normalize: evidence, contacts and sources sorted, duplicates dropped, categories recomputed', () => {
  const r = normalizeRecord(
    record({
      categories: ['inspection'],
      category_evidence: [evidence('assembly', 'b', 'medium'), evidence('sheet-metal', 'a', 'weak'), evidence('assembly', 'b', 'medium')],
      contacts: [
        { kind: 'observed-email', value: 'b@x.example', source: 's' },
        { kind: 'website', value: 'https://x.example/', source: 's' },
        { kind: 'observed-email', value: 'b@x.example', source: 's' },
      ],
    }),
  );
  assert.deepEqual(r.categories, ['assembly']);
  assert.deepEqual(
    r.category_evidence.map((e) => e.category),
    ['sheet-metal', 'assembly'],
  );
  assert.deepEqual(
    r.contacts.map((c) => c.kind),
    ['website', 'observed-email'],
  );
});

test('merge dataset: dated by its sources, never by the clock', () => {
  const a = { sources: [source('wikidata', '2025-03-01')], records: [record({ id: 'wd-Q2' })], rows: 1, problems: [] };
  const b = { sources: [source('epa-frs', '2025-01-01')], records: [record({ id: 'wd-Q1' })], rows: 1, problems: [] };
  const dataset = mergeDataset(null, [a, b]);
  assert.equal(dataset.generated, '2025-03-01');
  assert.deepEqual(
    dataset.records.map((r) => r.id),
    ['wd-Q1', 'wd-Q2'],
  );
  assert.deepEqual(
    dataset.sources.map((s) => s.key),
    ['epa-frs', 'wikidata'],
  );
  assert.equal(mergeDataset(null, [a], '2025-12-31').generated, '2025-12-31');
  assert.throws(() => mergeDataset(null, []), /no date/);
});

test('merge dataset: a re-import replaces its source; unlisted records lose it, and go when no other source lists them', () => {
  const wd = source('wikidata', '2025-01-01');
  const fair = source('exhibitor:x', '2025-01-01');
  const listing = (sources: SourceRef[], records: FactoryRecord[]): { sources: SourceRef[]; records: FactoryRecord[]; rows: number; problems: [] } => ({
    sources,
    records,
    rows: records.length,
    problems: [],
  });
  const shared = record({
    id: 'wd-Q1',
    sources: [wd, fair],
    category_evidence: [evidence('sheet-metal', 'wikidata', 'medium'), evidence('assembly', 'exhibitor:x', 'medium')],
    contacts: [
      { kind: 'website', value: 'https://q1.example/', source: 'wikidata' },
      { kind: 'observed-email', value: 'a@q1.example', source: 'exhibitor:x' },
    ],
  });
  const base = mergeDataset(null, [listing([wd, fair], [shared, record({ id: 'wd-Q2' }), record({ id: 'wd-Q3' }), record({ id: 'wd-Q4', sources: [fair] })])]);
  assert.deepEqual(datasetChanges(null, base), { added: 4, updated: 0, removed: 0 });

  const newer = source('wikidata', '2025-02-01');
  const update = listing(
    [newer],
    [record({ id: 'wd-Q3', name: 'Renamed', sources: [newer], first_seen: '2025-02-01', updated: '2025-02-01' }), record({ id: 'wd-Q5', sources: [newer] })],
  );
  const next = mergeDataset(base, [update]);
  assert.deepEqual(
    next.records.map((r) => r.id),
    ['wd-Q1', 'wd-Q3', 'wd-Q4', 'wd-Q5'],
    'wd-Q2 was listed by wikidata alone',
  );
  const q1 = next.records[0]!;
  assert.deepEqual(
    q1.sources.map((s) => s.key),
    ['exhibitor:x'],
  );
  assert.deepEqual(
    q1.category_evidence.map((e) => `${e.category}/${e.source}`),
    ['assembly/exhibitor:x'],
  );
  assert.deepEqual(q1.categories, ['assembly'], 'the withdrawn evidence no longer assigns sheet-metal');
  assert.deepEqual(
    q1.contacts.map((c) => c.value),
    ['a@q1.example'],
  );
  assert.deepEqual([next.records[1]!.name, next.records[1]!.first_seen], ['Renamed', '2025-01-01']);
  assert.deepEqual(next.records[2], base.records[3], 'a record of another source alone is untouched');
  assert.equal(next.generated, '2025-02-01');
  assert.deepEqual(datasetChanges(base, next), { added: 1, updated: 2, removed: 1 });

  const again = mergeDataset(next, [update]);
  assert.equal(serializeDataset(again), serializeDataset(next), 'the same import twice changes nothing');
  assert.deepEqual(datasetChanges(next, again), { added: 0, updated: 0, removed: 0 });
  assert.equal(
    serializeDataset(mergeDataset(next, [listing([], [])], next.generated)),
    serializeDataset(next),
    'an import that read nothing withdraws nothing',
  );
});

test('merge dataset: files of one source given together make its new contribution together', () => {
  const wd = source('wikidata', '2025-01-01');
  const part = (id: string): { sources: SourceRef[]; records: FactoryRecord[]; rows: number; problems: [] } => ({
    sources: [wd],
    records: [record({ id })],
    rows: 1,
    problems: [],
  });
  const base = mergeDataset(null, [part('wd-Q1')]);
  const next = mergeDataset(base, [part('wd-Q2'), part('wd-Q3')]);
  assert.deepEqual(
    next.records.map((r) => r.id),
    ['wd-Q2', 'wd-Q3'],
  );
});

test('merge dataset: an import scoped to some NAICS codes replaces what its source said for those codes alone', () => {
  const frs = source('epa-frs', '2025-01-01');
  const fair = source('exhibitor:x', '2025-01-01');
  const naics = (category: CategoryEvidence['category'], code: string): CategoryEvidence => ({
    ...evidence(category, 'epa-frs', 'strong', code),
    property: 'NAICS_CODE',
  });
  const machining = naics('cnc-machining', '332710');
  const sheet = naics('sheet-metal', '332322');
  const base = mergeDataset(null, [
    {
      sources: [frs, fair],
      records: [
        record({ id: 'epa-A', sources: [frs], category_evidence: [machining] }),
        record({ id: 'epa-B', sources: [frs], category_evidence: [sheet] }),
        record({ id: 'epa-C', sources: [frs], category_evidence: [machining, sheet] }),
        record({ id: 'epa-D', sources: [frs], category_evidence: [machining] }),
        record({ id: 'epa-E', sources: [frs, fair], category_evidence: [machining, evidence('assembly', 'exhibitor:x', 'medium')] }),
        record({ id: 'epa-F', sources: [frs], category_evidence: [sheet, machining] }),
      ],
      rows: 6,
      problems: [],
    },
  ]);
  const newer = source('epa-frs', '2025-02-01');
  const scoped = {
    sources: [newer],
    records: [
      record({ id: 'epa-A', name: 'Renamed', sources: [newer], category_evidence: [machining] }),
      record({ id: 'epa-C', sources: [newer], category_evidence: [machining] }),
    ],
    rows: 2,
    problems: [],
    scope: { property: 'NAICS_CODE', values: ['332710'] },
  };
  const next = mergeDataset(base, [scoped]);
  const byId = new Map(next.records.map((r) => [r.id, r]));
  assert.deepEqual([...byId.keys()], ['epa-A', 'epa-B', 'epa-C', 'epa-E', 'epa-F'], 'epa-D was listed for 332710 alone');
  assert.equal(byId.get('epa-A')!.name, 'Renamed');
  assert.deepEqual(byId.get('epa-B'), base.records[1], 'a record of another code is untouched');
  assert.deepEqual(byId.get('epa-C')!.categories, ['cnc-machining', 'sheet-metal'], 'listed again, it keeps its other code');
  assert.deepEqual(
    byId.get('epa-E')!.sources.map((s) => s.key),
    ['exhibitor:x'],
  );
  assert.deepEqual(
    byId.get('epa-F')!.category_evidence.map((e) => e.value),
    ['332322'],
    'unlisted: loses the code, keeps the source for the other',
  );
  assert.deepEqual(
    byId.get('epa-F')!.sources.map((s) => s.key),
    ['epa-frs'],
  );
  assert.deepEqual(datasetChanges(base, next), { added: 0, updated: 4, removed: 1 });
  assert.equal(serializeDataset(mergeDataset(next, [scoped])), serializeDataset(next), 'the same scoped import twice changes nothing');

  const whole = mergeDataset(base, [{ ...scoped, scope: undefined }]);
  assert.deepEqual(
    whole.records.map((r) => r.id),
    ['epa-A', 'epa-C', 'epa-E'],
    'without a scope the import is the whole source',
  );
});
