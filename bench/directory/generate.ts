/**
 * Generates a directory dataset of N made-up records with the shape of the real data, for the
 * directory benchmark: deterministic from a seed, written a record at a time so a million records
 * never sit in memory at once, and valid under the same schema the server checks.
 *
 * The mix follows what the importers produce: 60 % `epa-` facilities (US, upper-case FRS
 * spelling, a state, street address and postal code, NAICS evidence for some, `source-listed`),
 * 15 % `wd-` items (mixed-case names in several languages, a website for most, industry evidence)
 * and 25 % `cn-` exhibitors (Chinese names for some, websites and observed emails, listed
 * categories). Name and city words follow a skewed (power-law) popularity, as real names do, so
 * there are very common words ("precision") and rare ones (a brand that occurs a few times).
 *
 *   node bench/directory/generate.ts --records 1000000 --seed 1 --out /tmp/directory-1m.json
 */
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { datasetHeaderLine, datasetRecordLine } from '../../directory/dataset.ts';
import { frsFacilityUrl } from '../../directory/import/epa-frs.ts';
import { assignCategories, evidenceFromText, NaicsMap, sortEvidence } from '../../directory/import/evidence.ts';
import { exhibitorSourceKey } from '../../directory/import/exhibitors.ts';
import type { CategoryEvidence, Contact, FactoryRecord, SourceRef } from '../../directory/record.ts';
import { command, EXIT, option } from '../../host-node/cli/command.ts';
import { runCommand } from '../../host-node/cli/run.ts';
import { integer } from '../../host-node/cli/values.ts';
import { seededRandom } from '../lib/random.ts';

/** Bumped whenever the output for a given (records, seed) changes, so cached files are rebuilt. */
export const GENERATOR_VERSION = 1;

const RETRIEVED = '2026-11-21';

/** A seed for one record, mixing the dataset seed, the record kind and its index. */
function mix(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h = Math.imul(h ^ (p & 0xffff), 0x01000193);
    h = Math.imul(h ^ (p >>> 16), 0x01000193);
  }
  return h >>> 0;
}

type Rng = () => number;
const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
/** Skewed choice: low indexes far more often than high ones (roughly a power law). */
const pickSkewed = <T>(rng: Rng, items: readonly T[], power = 3): T => items[Math.floor(rng() ** power * items.length)]!;

const SYLLABLES = (
  'ka lo mi ren tor vex an bel cor dan el fra gen hal is jor kel lun mar nor ost pel quin ros sal tan ul ver wil xan yor zel ' +
  'bra cha dor fen gri hol ist jun kra lem mor nal ox pra rin sto tur ur vin wes yl zor'
).split(' ');

/** Made-up brand and place words, in a fixed order (the skew makes the first ones common). */
function syllableWords(rng: Rng, count: number): string[] {
  const out = new Set<string>();
  while (out.size < count) {
    const n = 2 + Math.floor(rng() * 2);
    let word = '';
    for (let i = 0; i < n; i++) word += pick(rng, SYLLABLES);
    out.add(word[0]!.toUpperCase() + word.slice(1));
  }
  return [...out];
}

const TRADE_WORDS = [
  'Precision',
  'Metal',
  'Industries',
  'Manufacturing',
  'Engineering',
  'Products',
  'Tool',
  'Plastics',
  'Machine',
  'Components',
  'Technologies',
  'Systems',
  'Fabrication',
  'Electronics',
  'Machining',
  'Works',
  'Group',
  'International',
  'Castings',
  'Coatings',
  'Finishing',
  'Plating',
  'Stamping',
  'Molding',
  'Moulding',
  'Wire',
  'Cable',
  'Assembly',
  'Instruments',
  'Automation',
  'Devices',
  'Solutions',
  'Chemical',
  'Ink',
  'Steel',
  'Aluminum',
  'Forge',
  'Mold',
  'Testing',
  'Inspection',
  'Harness',
  'Circuits',
  'Polymers',
  'Hydraulics',
  'Springs',
  'Fasteners',
  'Optics',
  'Gears',
  'Valves',
];
const ACCENTED = ['Präzision', 'Müller', 'Société', 'Técnica', 'Fräser', 'Öberg', 'Ørsted', 'Ćelik', 'Łódź', 'Señor', 'Straße', 'Crème'];
const US_STATES = 'AL AZ CA CO CT FL GA IL IN IA KS KY LA MD MA MI MN MO NE NJ NY NC OH OK OR PA SC TN TX UT VA WA WI'.split(' ');
const STREETS = ['MAIN ST', 'OAK AVE', 'INDUSTRIAL PKWY', 'COMMERCE DR', 'RIVER RD', 'MILL ST', 'PARK BLVD', 'HIGHWAY 61', 'ELM ST'];
const WORLD: readonly { country: string; weight: number; suffixes: string[] }[] = [
  { country: 'DE', weight: 20, suffixes: ['GmbH', 'AG', 'GmbH & Co. KG'] },
  { country: 'JP', weight: 12, suffixes: ['K.K.', 'Co., Ltd.'] },
  { country: 'FR', weight: 10, suffixes: ['SA', 'SAS'] },
  { country: 'IT', weight: 10, suffixes: ['S.p.A.', 'S.r.l.'] },
  { country: 'GB', weight: 10, suffixes: ['Ltd', 'PLC'] },
  { country: 'US', weight: 10, suffixes: ['Inc.', 'LLC', 'Corp.'] },
  { country: 'CN', weight: 8, suffixes: ['Co., Ltd.'] },
  { country: 'KR', weight: 6, suffixes: ['Co., Ltd.'] },
  { country: 'SE', weight: 4, suffixes: ['AB'] },
  { country: 'PL', weight: 4, suffixes: ['Sp. z o.o.'] },
  { country: 'MX', weight: 3, suffixes: ['S.A. de C.V.'] },
  { country: 'BR', weight: 3, suffixes: ['Ltda.'] },
];
const EXHIBITOR_COUNTRIES = ['CN', 'CN', 'CN', 'CN', 'CN', 'CN', 'TW', 'HK', 'VN', 'IN', 'TR', 'DE', 'KR'];
const CJK_PLACES = ['深圳', '东莞', '宁波', '苏州', '佛山', '厦门', '青岛', '无锡'];
const CJK_TRADES = ['精密', '五金', '塑胶', '电子', '模具', '机械', '表面处理', '线束'];
const INDUSTRY_LABELS = [
  'machining',
  'electroplating',
  'injection moulding',
  'sheet metal',
  'electronics manufacturing services',
  'wire harness',
  'contract manufacturing',
  'inspection',
  'metalworking',
  'plastic products',
  'printed circuit board',
  'powder coating',
  'automotive industry',
  'chemical industry',
];
const EXHIBITOR_CATEGORIES = [
  'CNC machining',
  'Sheet metal',
  'Injection moulding',
  'PCBA',
  'SMT',
  'Wire harness',
  'Anodizing',
  'Plating',
  'Box build',
  'Quality inspection',
  'Laser cutting',
  'Stamping',
  'Mould making',
  'Hardware',
  'Fasteners',
  'Die casting',
];
const FAIRS = ['Fixture Canton Fair 2025', 'Fixture Hardware Expo 2025', 'Fixture Electronics Show 2024', 'Fixture Plastics Fair 2025'];

interface Vocab {
  brands: string[];
  cities: string[];
  usCities: string[];
  naics: { code: string; evidence: CategoryEvidence[] }[];
}

function weightedCountry(rng: Rng): (typeof WORLD)[number] {
  const total = WORLD.reduce((s, c) => s + c.weight, 0);
  let x = rng() * total;
  for (const c of WORLD) if ((x -= c.weight) < 0) return c;
  return WORLD[0]!;
}

function date(rng: Rng, fromYear: number, toYear: number): string {
  const day = Math.floor(rng() * (toYear - fromYear + 1) * 365.25);
  return new Date(Date.UTC(fromYear, 0, 1) + day * 86400000).toISOString().slice(0, 10);
}

function finish(r: Omit<FactoryRecord, 'categories'>): FactoryRecord {
  const category_evidence = sortEvidence(r.category_evidence);
  return { ...r, categories: assignCategories(category_evidence), category_evidence };
}

function epaRecord(id: string, rng: Rng, v: Vocab): FactoryRecord {
  const trade = pickSkewed(rng, TRADE_WORDS, 2);
  const second = pickSkewed(rng, TRADE_WORDS, 2);
  const name = [pickSkewed(rng, v.brands), trade, ...(rng() < 0.5 && second !== trade ? [second] : []), pick(rng, ['INC', 'LLC', 'CORP', 'CO'])]
    .join(' ')
    .toUpperCase();
  const firstSeen = date(rng, 1990, 2018);
  const source: SourceRef = {
    key: 'epa-frs',
    name: 'US EPA Facility Registry Service',
    url: frsFacilityUrl(id.slice(4)),
    licence: 'Public domain (US federal government work)',
    retrieved: RETRIEVED,
  };
  const territory = rng() < 0.01;
  return finish({
    id,
    name,
    country: territory ? 'PR' : 'US',
    region: territory ? null : pickSkewed(rng, US_STATES, 1.5),
    city: pickSkewed(rng, v.usCities).toUpperCase(),
    address: `${1 + Math.floor(rng() * 9999)} ${pick(rng, STREETS)}`,
    postal_code: String(Math.floor(rng() * 99999)).padStart(5, '0'),
    // About one facility in three has a NAICS code the map knows.
    category_evidence: rng() < 0.35 ? pick(rng, v.naics).evidence : [],
    contacts: [],
    sources: [source],
    verification: 'source-listed',
    first_seen: firstSeen,
    updated: laterOf(firstSeen, date(rng, 2005, 2025)),
  });
}

function laterOf(a: string, b: string): string {
  return a > b ? a : b;
}

function wikidataRecord(id: string, rng: Rng, v: Vocab): FactoryRecord {
  const where = weightedCountry(rng);
  const words = [pickSkewed(rng, v.brands), ...(rng() < 0.15 ? [pick(rng, ACCENTED)] : []), pickSkewed(rng, TRADE_WORDS, 2), pick(rng, where.suffixes)];
  const evidence: CategoryEvidence[] = [];
  const industries = 1 + Math.floor(rng() * 2);
  for (let i = 0; i < industries; i++) {
    const label = pick(rng, INDUSTRY_LABELS);
    evidence.push(...evidenceFromText(label, { source: 'wikidata', property: 'P452', value: `Q${100000 + INDUSTRY_LABELS.indexOf(label)}` }));
  }
  const contacts: Contact[] = rng() < 0.7 ? [{ kind: 'website', value: `https://${words[0]!.toLowerCase()}.example/`, source: 'wikidata' }] : [];
  const edited = date(rng, 2018, 2026);
  return finish({
    id,
    name: words.join(' '),
    country: where.country,
    region: null,
    city: rng() < 0.8 ? pickSkewed(rng, v.cities) : null,
    address: null,
    postal_code: null,
    category_evidence: evidence,
    contacts,
    sources: [{ key: 'wikidata', name: 'Wikidata', url: `https://www.wikidata.org/wiki/${id.slice(3)}`, licence: 'CC0 1.0', retrieved: RETRIEVED }],
    verification: 'unverified',
    first_seen: edited,
    updated: edited,
  });
}

function exhibitorRecord(id: string, rng: Rng, v: Vocab): FactoryRecord {
  const fair = pick(rng, FAIRS);
  const key = exhibitorSourceKey(fair);
  const country = pick(rng, EXHIBITOR_COUNTRIES);
  const chinese = country === 'CN' && rng() < 0.3;
  const brand = pickSkewed(rng, v.brands);
  const name = chinese
    ? `${pick(rng, CJK_PLACES)}${pick(rng, CJK_TRADES)}${pick(rng, CJK_TRADES)}有限公司`
    : `${pickSkewed(rng, v.cities)} ${brand} ${pickSkewed(rng, TRADE_WORDS, 2)} Co., Ltd.`;
  const contacts: Contact[] = [];
  const host = `${brand.toLowerCase()}${Math.floor(rng() * 1000)}.example`;
  if (rng() < 0.5) contacts.push({ kind: 'website', value: `https://www.${host}/`, source: key });
  if (rng() < 0.4) contacts.push({ kind: 'observed-email', value: `sales@${host}`, source: key });
  const evidence: CategoryEvidence[] = [];
  const listed = Math.floor(rng() * 3);
  for (let i = 0; i < listed; i++) {
    const text = pick(rng, EXHIBITOR_CATEGORIES);
    evidence.push(...evidenceFromText(text, { source: key, property: 'exhibitor-category', value: text }));
  }
  const retrieved = fair.endsWith('2024') ? '2024-10-20' : '2025-05-05';
  return finish({
    id,
    name,
    country,
    region: null,
    city: chinese ? pick(rng, CJK_PLACES) : pickSkewed(rng, v.cities),
    address: null,
    postal_code: null,
    category_evidence: evidence,
    contacts,
    sources: [{ key, name: fair, url: `https://${exhibitorSourceKey(fair).slice(10)}.example/exhibitors`, licence: 'not stated by the source', retrieved }],
    verification: 'unverified',
    first_seen: retrieved,
    updated: retrieved,
  });
}

/** The ids of each kind, in the dataset's (code unit) order: `cn-` < `epa-` < `wd-`. */
function idLists(records: number, seed: number): { cn: string[]; epa: string[]; wd: string[] } {
  const rng = seededRandom(mix(seed, 0));
  const nEpa = Math.round(records * 0.6);
  const nWd = Math.round(records * 0.15);
  const nCn = records - nEpa - nWd;
  const cn = new Set<string>();
  while (cn.size < nCn) {
    let hex = '';
    for (let i = 0; i < 20; i++) hex += Math.floor(rng() * 16).toString(16);
    cn.add(`cn-${hex}`);
  }
  const epa: string[] = [];
  let registry = 110000000000;
  for (let i = 0; i < nEpa; i++) epa.push(`epa-${(registry += 1 + Math.floor(rng() * 40))}`);
  const wd: string[] = [];
  let q = 1000;
  for (let i = 0; i < nWd; i++) wd.push(`wd-Q${(q += 1 + Math.floor(rng() * 200))}`);
  const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return { cn: [...cn].sort(byCodeUnit), epa, wd: wd.sort(byCodeUnit) };
}

/** The made-up brand words of a seed, most common first (the benchmark picks rare ones from the end). */
export function generatedBrands(seed: number): string[] {
  return syllableWords(seededRandom(mix(seed, 1)), 40000);
}

async function vocabulary(seed: number): Promise<Vocab> {
  const rng = seededRandom(mix(seed, 3));
  const map = NaicsMap.parse(await readFile(new URL('../../directory/data/naics-category-map.json', import.meta.url), 'utf8'));
  const codes = ['332710', '332721', '332322', '326199', '333511', '334418', '335931', '336320', '332813', '332812', '33271'];
  return {
    brands: generatedBrands(seed),
    cities: syllableWords(rng, 6000).map((c, i) => (i % 17 === 0 ? `São ${c}` : i % 23 === 0 ? `${c}-Müller` : c)),
    usCities: syllableWords(rng, 3000),
    naics: codes.map((code) => ({
      code,
      evidence: map.lookup(code).map((m) => ({
        category: m.category,
        source: 'epa-frs',
        property: 'NAICS_CODE',
        value: code,
        label: m.title,
        strength: m.strength,
      })),
    })),
  };
}

/** The generated records, in id order, one at a time. */
export async function* generateRecords(records: number, seed: number): AsyncGenerator<FactoryRecord> {
  const v = await vocabulary(seed);
  const ids = idLists(records, seed);
  let k = 0;
  for (const [kind, make] of [
    [ids.cn, exhibitorRecord],
    [ids.epa, epaRecord],
    [ids.wd, wikidataRecord],
  ] as const) {
    for (const id of kind) yield make(id, seededRandom(mix(seed, 2, k++)), v);
  }
}

/** The dataset-level sources of a generated dataset. */
export function generatedSources(): SourceRef[] {
  return [
    {
      key: 'epa-frs',
      name: 'US EPA Facility Registry Service',
      url: 'https://www.epa.gov/frs',
      licence: 'Public domain (US federal government work)',
      retrieved: RETRIEVED,
    },
    ...FAIRS.map((fair) => ({
      key: exhibitorSourceKey(fair),
      name: fair,
      url: `https://${exhibitorSourceKey(fair).slice(10)}.example/exhibitors`,
      licence: 'not stated by the source',
      retrieved: fair.endsWith('2024') ? '2024-10-20' : '2025-05-05',
    })),
    { key: 'wikidata', name: 'Wikidata', url: 'https://query.wikidata.org/', licence: 'CC0 1.0', retrieved: RETRIEVED },
  ].sort((a, b) => (a.key < b.key ? -1 : 1));
}

/**
 * Writes a generated dataset of `records` records to `path`; resolves to the bytes written. A file
 * error (a missing folder, no space) rejects with the error, whose message names the path.
 */
export async function writeGeneratedDataset(path: string, records: number, seed: number): Promise<number> {
  let bytes = 0;
  async function* text(): AsyncGenerator<string> {
    const counted = (t: string): string => {
      bytes += Buffer.byteLength(t);
      return t;
    };
    yield counted(`${datasetHeaderLine(RETRIEVED, generatedSources())}\n`);
    let first = true;
    let batch = '';
    for await (const record of generateRecords(records, seed)) {
      batch += `${first ? '' : ',\n'}${datasetRecordLine(record)}`;
      first = false;
      if (batch.length > 1 << 20) {
        yield counted(batch);
        batch = '';
      }
    }
    yield counted(`${batch}${first ? '' : '\n'}]}\n`);
  }
  // pipeline, not bare writes: a stream's error event with no listener would end the process.
  await pipeline(text, createWriteStream(path));
  return bytes;
}

/** `node bench/directory/generate.ts`: writes a generated dataset file. */
const generateCommand = command({
  options: {
    records: option({ value: 'N', description: 'records to generate', parse: integer(1), default: 1000 }),
    seed: option({ value: 'N', description: 'generator seed', parse: integer(0), default: 1 }),
    out: option({ value: 'FILE', description: 'the file to write', shown: 'directory-<records>.json' }),
  },
  run: async ({ options }, io) => {
    const out = options.out ?? `directory-${options.records}.json`;
    const started = performance.now();
    const bytes = await writeGeneratedDataset(out, options.records, options.seed);
    io.err(`${out}: ${options.records} records, ${(bytes / 1e6).toFixed(1)} MB in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    return EXIT.done;
  },
});

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = await runCommand(generateCommand, process.argv.slice(2), 'node bench/directory/generate.ts');
}
