/**
 * Test data for the service tests: a small dataset shaped like the real one (all three id
 * formats, accents, categories with evidence, every contact kind) with enough records matching
 * one word to need several pages. It is test data, never shipped.
 */
import { type Dataset, parseDataset, serializeDataset } from '../dataset.ts';
import type { Clock, DataSource } from '../http/data-source.ts';
import type { Category, ContactKind, FactoryRecord, SourceRef } from '../record.ts';

const FRS: SourceRef = {
  key: 'epa-frs',
  name: 'US EPA Facility Registry Service',
  url: 'https://www.epa.gov/frs',
  licence: 'Public domain (US federal government work)',
  retrieved: '2025-06-01',
};
const WIKIDATA: SourceRef = {
  key: 'wikidata',
  name: 'Wikidata',
  url: 'https://www.wikidata.org/',
  licence: 'CC0 1.0',
  retrieved: '2025-06-02',
};
const FAIR: SourceRef = {
  key: 'exhibitor:test-fair-2025',
  name: 'Test Fair 2025 exhibitor list',
  url: 'https://fair.example/exhibitors',
  licence: 'Listed by the organiser; facts only',
  retrieved: '2025-05-20',
};

interface Spec {
  id: string;
  name: string;
  country: string;
  region?: string;
  city: string | null;
  categories?: Category[];
  contacts?: ContactKind[];
}

function build(spec: Spec): FactoryRecord {
  const source = spec.id.startsWith('epa-') ? FRS : spec.id.startsWith('wd-') ? WIKIDATA : FAIR;
  const categories = spec.categories ?? [];
  return {
    id: spec.id,
    name: spec.name,
    country: spec.country,
    region: spec.region ?? null,
    city: spec.city,
    address: null,
    postal_code: null,
    categories,
    category_evidence: categories.map((category) => ({
      category,
      source: source.key,
      property: source === FRS ? 'NAICS_CODE' : source === WIKIDATA ? 'P452' : 'exhibitor-category',
      value: source === FRS ? '332710' : source === WIKIDATA ? 'Q187939' : category,
      label: source === FRS ? 'Machine Shops' : 'machining',
      strength: 'strong' as const,
    })),
    contacts: (spec.contacts ?? []).map((kind) => ({
      kind,
      value: kind === 'website' ? `https://${spec.id}.example/` : `info@${spec.id}.example`,
      source: source.key,
    })),
    sources: [{ ...source, url: source === FRS ? `https://frs.example/${spec.id}` : source.url }],
    verification: source === FRS ? 'source-listed' : 'unverified',
    first_seen: '2020-01-01',
    updated: '2025-05-01',
  };
}

const FIXED: Spec[] = [
  { id: 'epa-110000000001', name: 'Acme Steel', country: 'US', region: 'OH', city: 'Toledo', categories: ['cnc-machining'], contacts: ['website'] },
  { id: 'epa-110000000002', name: 'Acme Steel Fabricators', country: 'US', region: 'OH', city: 'Dayton', categories: ['sheet-metal'] },
  { id: 'wd-Q4321', name: 'Société Mécanique de Besançon', country: 'FR', city: 'Besançon', categories: ['cnc-machining'], contacts: ['email'] },
  { id: 'wd-Q98765', name: 'Müller Präzisionstechnik', country: 'DE', city: 'München', categories: ['cnc-machining', 'inspection'], contacts: ['website'] },
  {
    id: 'cn-0123456789abcdef0123',
    name: 'Shenzhen Harness Works',
    country: 'CN',
    city: 'Shenzhen',
    categories: ['wire-harness'],
    contacts: ['observed-email'],
  },
  { id: 'cn-fedcba98765432100000', name: 'Ningbo Mould Co', country: 'CN', city: 'Ningbo', categories: ['injection-mould'] },
];

/** Steel works spread over countries: 45 records matching "steel", more than two pages of 20. */
const STEEL: Spec[] = Array.from({ length: 45 }, (_, i) => ({
  id: `epa-2200000000${String(i).padStart(2, '0')}`,
  name: `${['Northern', 'Southern', 'Eastern', 'Western', 'Central'][i % 5]} Steel Works ${i}`,
  country: ['US', 'CA', 'MX'][i % 3]!,
  // Gary IN, Hamilton ON, Monterrey NL (MX-NLE); every fifth without a region, as a source may give none.
  ...(i % 5 !== 4 && { region: ['IN', 'ON', 'NLE'][i % 3]! }),
  city: ['Gary', 'Hamilton', 'Monterrey'][i % 3]!,
  categories: i % 2 === 0 ? ['sheet-metal'] : ['surface-finishing'],
  contacts: i % 4 === 0 ? ['website', 'email'] : [],
}));

/** The fixture dataset (validated by the dataset module, like a real file). */
export function fixtureDataset(): Dataset {
  const records = [...FIXED, ...STEEL].map(build);
  return parseDataset(JSON.stringify({ generated: '2025-06-02', sources: [FRS, WIKIDATA, FAIR], records }));
}

/** The fixture dataset as file text, in the dataset file layout. */
export function fixtureText(): string {
  return serializeDataset(fixtureDataset());
}

/** A data source serving `text`. */
export function textSource(text: string): DataSource {
  return () => Promise.resolve(new Blob([text]).stream() as ReadableStream<Uint8Array>);
}

/** A data source that fails until `repair()` is called, and counts its attempts. */
export function brokenSource(text: string): DataSource & { repair(): void; attempts: number } {
  let repaired = false;
  const source = Object.assign(
    () => {
      source.attempts++;
      return repaired ? textSource(text)() : Promise.reject(new Error('dataset file missing'));
    },
    {
      attempts: 0,
      repair(): void {
        repaired = true;
      },
    },
  );
  return source;
}

/** A clock that moves only when told. */
export class ManualClock implements Clock {
  #now: number;

  constructor(start = Date.UTC(2025, 5, 2, 12)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  advance(ms: number): void {
    this.#now += ms;
  }
}
