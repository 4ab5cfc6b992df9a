/**
 * The directory's factory record: its fields, its three id formats and the superstruct schema that
 * validates it. The same schema checks a dataset file on load and describes the record in the
 * OpenAPI document, so what is served and what is documented cannot drift apart.
 * Field meanings and the rules behind them: docs/directory-data.md.
 */
import { array, enums, type Infer, nullable, object, pattern, refine, size, string } from 'superstruct';

/** The directory's category slugs (spec §2, "Enumerations"). */
export const CATEGORIES = [
  'cnc-machining',
  'sheet-metal',
  'injection-mould',
  'pcba-smt',
  'wire-harness',
  'surface-finishing',
  'assembly',
  'inspection',
] as const;
export type Category = (typeof CATEGORIES)[number];

/**
 * Contact kinds: `website` and `email` as a source publishes them for the company,
 * `observed-email` an address seen on a third party's list (an exhibitor list), which is no
 * consent to be written to (spec §1, use rules).
 */
export const CONTACT_KINDS = ['website', 'email', 'observed-email'] as const;
export type ContactKind = (typeof CONTACT_KINDS)[number];

/** How directly a source's code or property implies a category. */
export const EVIDENCE_STRENGTHS = ['strong', 'medium', 'weak'] as const;
export type EvidenceStrength = (typeof EVIDENCE_STRENGTHS)[number];

/**
 * What the directory knows about a record's standing: `source-listed` when an official register
 * (the US EPA Facility Registry Service) lists the facility under this id; `unverified` when it
 * comes only from open or third-party sources (Wikidata, exhibitor lists). Neither means the
 * directory has checked the company: the service never verifies (spec §1).
 */
export const VERIFICATION_STATUSES = ['unverified', 'source-listed'] as const;
export type VerificationStatus = (typeof VERIFICATION_STATUSES)[number];

/** The three id formats of spec §2: `cn-` + 20 lowercase hex, `wd-Q` + positive integer, `epa-` + 12 digits. */
export const FACTORY_ID_PATTERN: RegExp = /^(cn-[0-9a-f]{20}|wd-Q[1-9][0-9]*|epa-[0-9]{12})$/;

/** True when `id` is a well-formed factory id (it may still be unknown to the directory). */
export function isFactoryId(id: string): boolean {
  return FACTORY_ID_PATTERN.test(id);
}

/** True when `text` is a real calendar date written YYYY-MM-DD. */
export function isIsoDate(text: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** One reason a category was assigned: which property of which source said what. */
export interface CategoryEvidence {
  category: Category;
  /** The source key, as in SourceRef.key ('epa-frs', 'wikidata', 'exhibitor:<slug>'). */
  source: string;
  /** The property that carried it: 'NAICS_CODE', 'P452', 'exhibitor-category'. */
  property: string;
  /** Its value: a NAICS code, a Wikidata item id, the listed text. */
  value: string;
  /** Human text for the value, e.g. the NAICS title or the item's label. */
  label: string;
  strength: EvidenceStrength;
}

/** A way to reach the company, with the source it came from. */
export interface Contact {
  kind: ContactKind;
  value: string;
  source: string;
}

/** Where a record (or the dataset) comes from, under which licence, retrieved when. */
export interface SourceRef {
  /** 'epa-frs' | 'wikidata' | 'exhibitor:<slug>'. */
  key: string;
  name: string;
  /** The record's page at the source where one exists, else the dataset's URL. */
  url: string;
  licence: string;
  /** YYYY-MM-DD. */
  retrieved: string;
}

/** One manufacturer entity in the directory. */
export interface FactoryRecord {
  id: string;
  name: string;
  /** ISO 3166-1 alpha-2. */
  country: string;
  /**
   * The state or province: its ISO 3166-2 code without the country (`OH` of `US-OH`; for FRS
   * records the USPS state code, which is the same), or null where the sources do not give one.
   */
  region: string | null;
  city: string | null;
  address: string | null;
  postal_code: string | null;
  categories: Category[];
  /** Why each category was assigned; may also hold evidence too weak to assign one. */
  category_evidence: CategoryEvidence[];
  contacts: Contact[];
  sources: SourceRef[];
  verification: VerificationStatus;
  /** YYYY-MM-DD: the earliest date a source knew the record. */
  first_seen: string;
  /** YYYY-MM-DD: the latest date a source changed or reported it. */
  updated: string;
}

/** An ISO 3166-2 subdivision code: a country's alpha-2 code, a hyphen, one to three letters or digits (`US-OH`, `DE-BY`). */
export const REGION_PATTERN = /^[A-Z]{2}-[A-Z0-9]{1,3}$/;

/** A record's ISO 3166-2 code, from its country and region: `US` and `OH` → `US-OH`. */
export function regionCode(country: string, region: string): string {
  return `${country}-${region}`;
}

/** A YYYY-MM-DD string that is a real calendar date. */
export const IsoDateStruct = refine(string(), 'IsoDate', (value) => isIsoDate(value) || `expected a YYYY-MM-DD date, got ${JSON.stringify(value)}`);
const NonEmpty = size(string(), 1, Infinity);

export const CategoryEvidenceStruct = object({
  category: enums(CATEGORIES),
  source: NonEmpty,
  property: NonEmpty,
  value: NonEmpty,
  label: string(),
  strength: enums(EVIDENCE_STRENGTHS),
});

export const ContactStruct = object({
  kind: enums(CONTACT_KINDS),
  value: NonEmpty,
  source: NonEmpty,
});

export const SourceRefStruct = object({
  key: NonEmpty,
  name: NonEmpty,
  url: pattern(string(), /^https?:\/\/\S+$/),
  licence: NonEmpty,
  retrieved: IsoDateStruct,
});

/** The superstruct schema of a FactoryRecord: unknown members are refused. */
export const FactoryRecordStruct = object({
  id: pattern(string(), FACTORY_ID_PATTERN),
  name: NonEmpty,
  country: pattern(string(), /^[A-Z]{2}$/),
  region: nullable(string()),
  city: nullable(string()),
  address: nullable(string()),
  postal_code: nullable(string()),
  categories: array(enums(CATEGORIES)),
  category_evidence: array(CategoryEvidenceStruct),
  contacts: array(ContactStruct),
  sources: size(array(SourceRefStruct), 1, Infinity),
  verification: enums(VERIFICATION_STATUSES),
  first_seen: IsoDateStruct,
  updated: IsoDateStruct,
});

const RECORD_KEYS = Object.keys(FactoryRecordStruct.schema);
const CATEGORY_SET: ReadonlySet<string> = new Set(CATEGORIES);
const CONTACT_SET: ReadonlySet<string> = new Set(CONTACT_KINDS);
const STRENGTH_SET: ReadonlySet<string> = new Set(EVIDENCE_STRENGTHS);
const VERIFICATION_SET: ReadonlySet<string> = new Set(VERIFICATION_STATUSES);
const URL_PATTERN = /^https?:\/\/\S+$/;
const COUNTRY_PATTERN = /^[A-Z]{2}$/;

const isString = (v: unknown): v is string => typeof v === 'string';
const isNonEmpty = (v: unknown): boolean => typeof v === 'string' && v.length > 0;
const isNullableString = (v: unknown): boolean => v === null || typeof v === 'string';

function hasExactly(value: unknown, keys: readonly string[]): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  let n = 0;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (!keys.includes(key)) return false;
    n++;
  }
  return n === keys.length;
}

// Dates repeat across records; remembering the good ones spares re-checking a million of them.
const goodDates = new Set<string>();
function isDate(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  if (goodDates.has(v)) return true;
  if (!isIsoDate(v)) return false;
  if (goodDates.size < 100_000) goodDates.add(v);
  return true;
}

const EVIDENCE_KEYS = ['category', 'source', 'property', 'value', 'label', 'strength'];
const CONTACT_KEYS = ['kind', 'value', 'source'];
const SOURCE_KEYS = ['key', 'name', 'url', 'licence', 'retrieved'];

/**
 * The same check as FactoryRecordStruct, written out for speed (superstruct takes about 25 µs a
 * record, 25 s for a million at start-up; this about 1 µs). It accepts only what the schema
 * accepts (a property test holds the two together); a record it refuses goes to the schema, which
 * says what is wrong.
 */
export function isFactoryRecord(value: unknown): value is FactoryRecord {
  if (!hasExactly(value, RECORD_KEYS)) return false;
  const r = value;
  if (!isString(r.id) || !FACTORY_ID_PATTERN.test(r.id)) return false;
  if (!isNonEmpty(r.name) || !isString(r.country) || !COUNTRY_PATTERN.test(r.country)) return false;
  if (!isNullableString(r.region) || !isNullableString(r.city) || !isNullableString(r.address) || !isNullableString(r.postal_code)) {
    return false;
  }
  if (!Array.isArray(r.categories) || !r.categories.every((c) => CATEGORY_SET.has(c as string))) return false;
  if (!Array.isArray(r.category_evidence)) return false;
  for (const e of r.category_evidence as unknown[]) {
    if (!hasExactly(e, EVIDENCE_KEYS)) return false;
    if (!CATEGORY_SET.has(e.category as string) || !STRENGTH_SET.has(e.strength as string)) return false;
    if (!isNonEmpty(e.source) || !isNonEmpty(e.property) || !isNonEmpty(e.value) || !isString(e.label)) return false;
  }
  if (!Array.isArray(r.contacts)) return false;
  for (const c of r.contacts as unknown[]) {
    if (!hasExactly(c, CONTACT_KEYS) || !CONTACT_SET.has(c.kind as string) || !isNonEmpty(c.value) || !isNonEmpty(c.source)) return false;
  }
  if (!Array.isArray(r.sources) || r.sources.length === 0) return false;
  for (const s of r.sources as unknown[]) {
    if (!hasExactly(s, SOURCE_KEYS) || !isNonEmpty(s.key) || !isNonEmpty(s.name) || !isNonEmpty(s.licence)) return false;
    if (!isString(s.url) || !URL_PATTERN.test(s.url) || !isDate(s.retrieved)) return false;
  }
  return VERIFICATION_SET.has(r.verification as string) && isDate(r.first_seen) && isDate(r.updated);
}

// The interfaces above are the documented types; these checks keep the schema in step with them.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const recordMatches: Same<Infer<typeof FactoryRecordStruct>, FactoryRecord> = true;
void recordMatches;
