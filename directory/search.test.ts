import { assert } from 'chai';
import fc from 'fast-check';
import { concatBytes } from '../core/encoding/bytes.ts';
import { rejects, rejectsAsync } from '../test/assert.ts';
import { test } from '../test/harness.ts';
import { type Dataset, InvalidDatasetError, serializeDataset } from './dataset.ts';
import { indexFileChunks, readIndexFile } from './index-file.ts';
import { CATEGORIES, type Category, CONTACT_KINDS, type ContactKind, type FactoryRecord } from './record.ts';
import { DirectoryIndex, type SearchQuery } from './search.ts';
import { foldPhrase, words } from './text.ts';

// Made-up records: the index is tested on what it does with names, cities, evidence and filters.
interface Spec {
  name: string;
  country?: string;
  region?: string | null;
  city?: string | null;
  categories?: Category[];
  weak?: Category[];
  contacts?: ContactKind[];
  source?: string;
}

function makeRecord(id: string, spec: Spec): FactoryRecord {
  const source = spec.source ?? 'wikidata';
  const evidence = [
    ...(spec.categories ?? []).map((category) => ({ category, strength: 'medium' as const })),
    ...(spec.weak ?? []).map((category) => ({ category, strength: 'weak' as const })),
  ];
  return {
    id,
    name: spec.name,
    country: spec.country ?? 'DE',
    region: spec.region ?? null,
    city: spec.city === undefined ? 'Berlin' : spec.city,
    address: null,
    postal_code: null,
    categories: spec.categories ?? [],
    category_evidence: evidence.map(({ category, strength }) => ({
      category,
      source,
      property: 'P452',
      value: `Q${CATEGORIES.indexOf(category) + 100}`,
      label: `${category} services`,
      strength,
    })),
    contacts: (spec.contacts ?? []).map((kind) => ({ kind, value: `${kind}@fixture.example`, source })),
    sources: [{ key: source, name: source, url: 'https://fixture.example/', licence: 'test', retrieved: '2025-01-01' }],
    verification: 'unverified',
    first_seen: '2025-01-01',
    updated: '2025-01-01',
  };
}

function datasetOf(specs: readonly Spec[]): Dataset {
  const records = specs.map((spec, i) => makeRecord(`wd-Q${i + 1}`, spec)).sort((a, b) => (a.id < b.id ? -1 : 1));
  return { generated: '2025-02-03', sources: [], records };
}

// A fixed scramble of ids (not their order), to feed records out of order.
const hash = (id: string): number => [...id].reduce((h, ch) => Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0, 0x811c9dc5);

const q = (query: Partial<SearchQuery>): SearchQuery => ({ limit: 20, offset: 0, ...query });

/** `index` written to an index file and read back. */
function throughIndexFile(index: DirectoryIndex, dataset: Dataset): DirectoryIndex {
  const bytes = concatBytes(...indexFileChunks(index.parts, dataset, '00'.repeat(32)));
  return new DirectoryIndex({ generated: dataset.generated, parts: readIndexFile(bytes).parts });
}
const names = (index: DirectoryIndex, query: Partial<SearchQuery>): string[] => index.search(q(query)).factories.map((f) => f.name);

const fixture = new DirectoryIndex(
  datasetOf([
    { name: 'Berlin Steel Works', city: 'Hamburg' }, // wd-Q1
    { name: 'Acme Steel', city: 'São Paulo', country: 'BR', categories: ['sheet-metal'], contacts: ['website'] }, // wd-Q2
    { name: 'Steel', city: 'Köln', categories: ['cnc-machining'], contacts: ['email', 'website'] }, // wd-Q3
    { name: 'Müller Präzision', city: 'München', categories: ['cnc-machining'], contacts: ['observed-email'], source: 'exhibitor:fixture-fair' }, // wd-Q4
    { name: 'Steelworks United', city: 'Berlin', weak: ['assembly'] }, // wd-Q5
    { name: 'Plating Co', city: 'Sao Paulo', country: 'BR', categories: ['surface-finishing'] }, // wd-Q6
    { name: '深圳精密五金', city: '深圳', country: 'CN', categories: ['cnc-machining'] }, // wd-Q7
    { name: 'Quality Steel Inspection', city: 'Berlin', categories: ['inspection'] }, // wd-Q8
    { name: 'STEEL', city: null, country: 'AT' }, // wd-Q9
  ]),
);

test('search: exact name first, then name beginning with the word, then name holding it, then elsewhere', () => {
  // Exact: Steel, STEEL. Holding "steel": Berlin Steel Works, Acme Steel, Quality Steel Inspection (by id).
  // Only as a prefix: Steelworks United.
  const ids = fixture.search(q({ q: 'steel' })).factories.map((f) => f.id);
  assert.deepEqual(ids, ['wd-Q3', 'wd-Q9', 'wd-Q1', 'wd-Q2', 'wd-Q8', 'wd-Q5']);
  // "berlin": the name beginning with it first, then records only in Berlin.
  assert.deepEqual(names(fixture, { q: 'berlin' }), ['Berlin Steel Works', 'Steelworks United', 'Quality Steel Inspection']);
  // Two words: the name beginning with the first and holding both before one holding both.
  assert.deepEqual(names(fixture, { q: 'steel works' }), ['Berlin Steel Works']);
  assert.deepEqual(names(fixture, { q: 'steel work' }), ['Berlin Steel Works'], 'the last word completes: work → works');
});

test('search: the last word completes as a prefix from three letters on', () => {
  assert.deepEqual(names(fixture, { q: 'steelw' }), ['Steelworks United']);
  assert.deepEqual(names(fixture, { q: 'pla' }), ['Plating Co']);
  assert.deepEqual(names(fixture, { q: 'pl' }), [], 'two letters match whole words only');
  assert.deepEqual(names(fixture, { q: 'acme ste' }), ['Acme Steel']);
  assert.deepEqual(names(fixture, { q: 'ste acme' }), [], 'only the last word completes');
});

test('search: case and accents do not matter, in q and in the city filter', () => {
  assert.deepEqual(names(fixture, { q: 'MULLER' }), ['Müller Präzision']);
  assert.deepEqual(names(fixture, { q: 'müller präzision' }), ['Müller Präzision']);
  assert.deepEqual(names(fixture, { q: 'munchen' }), ['Müller Präzision'], 'the city is searched');
  assert.deepEqual(names(fixture, { city: 'sao paulo' }), ['Acme Steel', 'Plating Co']);
  assert.deepEqual(names(fixture, { city: 'SÃO PAULO' }), ['Acme Steel', 'Plating Co']);
  assert.deepEqual(names(fixture, { city: 'Paulo' }), [], 'the city filter compares the whole city');
  assert.deepEqual(names(fixture, { q: '深圳' }), ['深圳精密五金']);
  assert.deepEqual(names(fixture, { q: '精密' }), ['深圳精密五金'], 'CJK characters match one by one');
});

test('search: evidence is searched (category, code, label), weak evidence included', () => {
  assert.deepEqual(names(fixture, { q: 'surface finishing' }), ['Plating Co']);
  assert.deepEqual(names(fixture, { q: 'assembly' }), ['Steelworks United']);
  assert.deepEqual(names(fixture, { q: 'Q100' }), ['Steel', 'Müller Präzision', '深圳精密五金'], 'a Wikidata industry id');
});

test('search: filters combine with AND, and with q', () => {
  assert.deepEqual(names(fixture, { category: 'cnc-machining' }), ['Steel', 'Müller Präzision', '深圳精密五金']);
  assert.deepEqual(names(fixture, { category: 'cnc-machining', country: 'DE' }), ['Steel', 'Müller Präzision']);
  assert.deepEqual(names(fixture, { category: 'cnc-machining', country: 'DE', contact: 'website' }), ['Steel']);
  assert.deepEqual(names(fixture, { contact: 'website' }), ['Acme Steel', 'Steel']);
  assert.deepEqual(names(fixture, { contact: 'observed-email' }), ['Müller Präzision']);
  assert.deepEqual(names(fixture, { category: 'assembly' }), [], 'weak evidence alone assigns no category');
  assert.deepEqual(names(fixture, { q: 'steel', country: 'BR' }), ['Acme Steel']);
  assert.deepEqual(names(fixture, { q: 'steel', city: 'berlin' }), ['Quality Steel Inspection', 'Steelworks United']);
  assert.deepEqual(names(fixture, { country: 'FR' }), []);
  assert.deepEqual(names(fixture, { q: 'nothing-like-this' }), []);
});

test('search: totals, next_offset and pages; q without words is no constraint', () => {
  const all = fixture.search(q({ limit: 4 }));
  assert.equal(all.total, 9);
  assert.equal(all.next_offset, 4);
  assert.deepEqual(
    all.factories.map((f) => f.id),
    ['wd-Q1', 'wd-Q2', 'wd-Q3', 'wd-Q4'],
  );
  const last = fixture.search(q({ limit: 4, offset: 8 }));
  assert.deepEqual(
    last.factories.map((f) => f.id),
    ['wd-Q9'],
  );
  assert.isNull(last.next_offset);
  const exact = fixture.search(q({ limit: 3, offset: 6 }));
  assert.equal(exact.factories.length, 3);
  assert.isNull(exact.next_offset, 'a page that ends at the total is the last');
  const beyond = fixture.search(q({ offset: 50 }));
  assert.equal(beyond.total, 9);
  assert.deepEqual(beyond.factories, []);
  assert.isNull(beyond.next_offset);
  assert.equal(fixture.search(q({ q: ' -- ' })).total, 9);
});

test('get, records and stats', () => {
  assert.equal(fixture.get('wd-Q4')?.name, 'Müller Präzision');
  assert.isUndefined(fixture.get('wd-Q99'));
  assert.isUndefined(fixture.get('epa-110000852220'));
  assert.deepEqual(
    [...fixture.records()].map((r) => r.id),
    ['wd-Q1', 'wd-Q2', 'wd-Q3', 'wd-Q4', 'wd-Q5', 'wd-Q6', 'wd-Q7', 'wd-Q8', 'wd-Q9'],
  );
  assert.equal(fixture.size, 9);
  assert.equal(fixture.generated, '2025-02-03');
  const stats = fixture.stats();
  assert.deepEqual(stats, {
    dataset_date: '2025-02-03',
    total: 9,
    by_country: { AT: 1, BR: 2, CN: 1, DE: 5 },
    by_category: {
      assembly: 0,
      'cnc-machining': 3,
      'injection-mould': 0,
      inspection: 1,
      'pcba-smt': 0,
      'sheet-metal': 1,
      'surface-finishing': 1,
      'wire-harness': 0,
    },
    by_contact: { email: 1, 'observed-email': 1, website: 2 },
    by_source: { 'exhibitor:fixture-fair': 1, wikidata: 8 },
  });
  assert.deepEqual(Object.keys(stats.by_category), [...CATEGORIES].sort());
  assert.deepEqual(Object.keys(stats.by_contact), [...CONTACT_KINDS].sort());
});

// ---- Properties against a plain reference: the index must agree with a scan of every record. ----

const VOCABULARY = ['Acme', 'ACME', 'Ácme', 'Steel', 'steelworks', 'Stéel', 'Plastics', 'Müller', 'Muller', 'Mould', 'Co', 'Ltd', '深圳', 'Präzision'];
const CITIES = ['São Paulo', 'Sao Paulo', 'Berlin', 'BERLIN', 'Köln', null];
const COUNTRIES = ['BR', 'DE', 'CN'];
// Region parts: a query's DE-BY matches a record of DE and BY, not one of BR and BY.
const REGIONS = ['BY', 'SP', 'NW', null];

const specArb: fc.Arbitrary<Spec> = fc.record({
  name: fc.array(fc.constantFrom(...VOCABULARY), { minLength: 1, maxLength: 4 }).map((w) => w.join(' ')),
  country: fc.constantFrom(...COUNTRIES),
  region: fc.constantFrom(...REGIONS),
  city: fc.constantFrom(...CITIES),
  categories: fc.subarray([...CATEGORIES], { maxLength: 2 }),
  weak: fc.subarray([...CATEGORIES], { maxLength: 1 }),
  contacts: fc.subarray([...CONTACT_KINDS]),
});

// Filters appear one time in four, so that most queries still match something.
const sometimes = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: arb, weight: 1 });

const queryArb: fc.Arbitrary<Omit<SearchQuery, 'limit' | 'offset'>> = fc.record({
  q: fc.oneof(
    {
      arbitrary: fc
        .array(fc.constantFrom(...VOCABULARY, 'ste', 'mul', 'pl', 'pla', 'services', 'berlin', 'sao'), { minLength: 1, maxLength: 3 })
        .map((w) => w.join(' ')),
      weight: 5,
    },
    { arbitrary: fc.constant(''), weight: 1 },
  ),
  country: sometimes(fc.constantFrom(...COUNTRIES)),
  region: sometimes(fc.constantFrom('DE-BY', 'BR-SP', 'BR-BY', 'DE-NW', 'CN-SP')),
  city: sometimes(fc.constantFrom('sao paulo', 'BERLIN', 'koln')),
  category: sometimes(fc.constantFrom(...CATEGORIES)),
  contact: sometimes(fc.constantFrom(...CONTACT_KINDS)),
});

/** The rank a record should have for `terms`, or null when it does not match: a scan, no index. */
function referenceRank(r: FactoryRecord, terms: string[]): number | null {
  const last = terms.length - 1;
  const nameWords = words(r.name);
  const everywhere = [...nameWords, ...words(r.city ?? ''), ...r.category_evidence.flatMap((e) => words(`${e.category} ${e.value} ${e.label}`))];
  const hit = (pool: string[], t: string, i: number): boolean => pool.some((w) => w === t || (i === last && t.length >= 3 && w.startsWith(t)));
  if (!terms.every((t, i) => hit(everywhere, t, i))) return null;
  if (!terms.every((t, i) => hit(nameWords, t, i))) return 4;
  if (!terms.every((t) => nameWords.includes(t))) return 3;
  if (nameWords[0] !== terms[0]) return 2;
  return foldPhrase(r.name) === terms.join(' ') ? 0 : 1;
}

function referenceSearch(dataset: Dataset, query: Omit<SearchQuery, 'limit' | 'offset'>): string[] {
  const terms = words(query.q ?? '');
  const ranked: [number, string][] = [];
  for (const r of dataset.records) {
    if (query.country !== undefined && r.country !== query.country) continue;
    if (query.region !== undefined && (r.region === null || `${r.country}-${r.region}` !== query.region)) continue;
    if (query.city !== undefined && (r.city === null || foldPhrase(r.city) !== foldPhrase(query.city))) continue;
    if (query.category !== undefined && !r.categories.includes(query.category)) continue;
    if (query.contact !== undefined && !r.contacts.some((c) => c.kind === query.contact)) continue;
    const rank = terms.length === 0 ? 0 : referenceRank(r, terms);
    if (rank !== null) ranked.push([rank, r.id]);
  }
  return ranked.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1)).map(([, id]) => id);
}

test('search agrees with a scan of every record: same matches, same order', () => {
  fc.assert(
    fc.property(fc.array(specArb, { minLength: 1, maxLength: 40 }), queryArb, (specs, query) => {
      const dataset = datasetOf(specs);
      const expected = referenceSearch(dataset, query);
      // With posting lists only; with a bit set for every list; intersecting bit sets only (dense
      // sets, which a large directory uses for long lists); bit sets for the widest tier, lists for
      // the narrower ones when it came out small; from records out of id order.
      const shuffled = { ...dataset, records: [...dataset.records].sort((a, b) => hash(a.id) - hash(b.id)) };
      for (const index of [
        new DirectoryIndex(dataset),
        new DirectoryIndex(dataset, { bitsetFrom: 1 }),
        new DirectoryIndex(dataset, { denseFrom: 0 }),
        new DirectoryIndex(dataset, { denseFrom: 4 }),
        new DirectoryIndex(shuffled),
        throughIndexFile(new DirectoryIndex(shuffled), dataset),
      ]) {
        // Twice: the second answer comes partly from the kept unions of the first.
        for (let round = 0; round < 2; round++) {
          const result = index.search({ ...query, limit: 100, offset: 0 });
          assert.equal(result.total, expected.length);
          assert.deepEqual(
            result.factories.map((f) => f.id),
            expected,
          );
        }
      }
    }),
    { numRuns: 300 },
  );
});

test('paging is stable: pages of any size, concatenated, never repeat or skip a record', () => {
  fc.assert(
    fc.property(fc.array(specArb, { minLength: 1, maxLength: 60 }), queryArb, fc.integer({ min: 1, max: 25 }), fc.boolean(), (specs, query, limit, dense) => {
      const index = new DirectoryIndex(datasetOf(specs), { denseFrom: dense ? 0 : undefined });
      const whole = index.search({ ...query, limit: 100, offset: 0 });
      const seen: string[] = [];
      for (let offset = 0; ; ) {
        const page = index.search({ ...query, limit, offset });
        assert.equal(page.total, whole.total);
        seen.push(...page.factories.map((f) => f.id));
        if (page.next_offset === null) break;
        assert.equal(page.next_offset, offset + limit);
        offset = page.next_offset;
      }
      assert.deepEqual(
        seen,
        whole.factories.map((f) => f.id),
      );
      assert.equal(new Set(seen).size, seen.length);
    }),
    { numRuns: 200 },
  );
});

function streamOf(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(controller) {
      // In pieces, as a file arrives.
      for (let at = 0; at < bytes.length; at += 1000) controller.enqueue(bytes.slice(at, at + 1000));
      controller.close();
    },
  });
}

test('load indexes a dataset file while reading it: the same answers as the constructor', async () => {
  const dataset = datasetOf([
    { name: 'Acme Steel', country: 'BR', categories: ['sheet-metal'] },
    { name: 'Müller Präzision', city: 'München', contacts: ['website'] },
    { name: 'Steel', city: 'Köln' },
  ]);
  const { index, header } = await DirectoryIndex.load(streamOf(serializeDataset(dataset)));
  assert.deepEqual(header, { generated: dataset.generated, sources: dataset.sources });
  const direct = new DirectoryIndex(dataset);
  for (const query of [{ q: 'steel' }, { q: 'muller' }, { country: 'BR' }, { contact: 'website' as const }, {}]) {
    assert.deepEqual(index.search(q(query)), direct.search(q(query)));
  }
  assert.deepEqual(index.stats(), direct.stats());
  assert.deepEqual([...index.records()], dataset.records);
  assert.deepEqual(index.get('wd-Q2'), dataset.records[1]);
  // Another layout of the same JSON, records out of order: read whole, then the same index.
  const pretty = JSON.stringify({ ...dataset, records: [...dataset.records].reverse() }, null, 1);
  const fromPretty = (await DirectoryIndex.load(streamOf(pretty))).index;
  assert.deepEqual([...fromPretty.records()], dataset.records);
});

test('a repeated id is refused however the records are ordered', async () => {
  const dataset = datasetOf([{ name: 'One' }, { name: 'Two' }, { name: 'Three' }]);
  const twice = { ...dataset, records: [dataset.records[2]!, dataset.records[0]!, dataset.records[2]!] };
  rejects(() => new DirectoryIndex(twice), InvalidDatasetError, 'duplicate-id', /wd-Q3/);
  const adjacent = { ...dataset, records: [dataset.records[0]!, dataset.records[0]!] };
  rejects(() => new DirectoryIndex(adjacent), InvalidDatasetError, 'duplicate-id', /wd-Q1/);
  const text = serializeDataset({ ...dataset, records: dataset.records })
    .replace('"wd-Q2"', '"wd-Q1"')
    .replace(/wd-Q2/g, 'wd-Q1');
  await rejectsAsync(() => DirectoryIndex.load(streamOf(text)), InvalidDatasetError, 'duplicate-id');
});
