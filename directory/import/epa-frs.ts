/**
 * The US EPA Facility Registry Service (FRS) CSV export → directory records.
 *
 * Input: the FRS "industrial classification" (NAICS) search export, or a national or state
 * file with the same columns: Latin-1 text (decode it with `decodeFrsExport`), one row per
 * facility × program system × NAICS code. Rows are merged by REGISTRY_ID into one record
 * `epa-<REGISTRY_ID>`: name, address, city, state (as region), postal code from the facility's
 * first row; category evidence from every NAICS code of every row through the NAICS map; first_seen
 * the earliest CREATE_DATE, updated the latest UPDATE_DATE or LAST_REPORTED_DATE. The FRS is an
 * official register, so its records are `source-listed`. The data is a US federal government
 * work, in the public domain.
 */
import type { CategoryEvidence, FactoryRecord, SourceRef } from '../record.ts';
import { type CsvRow, readCsv } from './csv.ts';
import type { NaicsMap } from './evidence.ts';
import { mergeRecordLists } from './merge.ts';
import { earlierDate, type ImportProblem, type ImportResult, laterDate, laterOwnDate, type OwnDate } from './source.ts';

export const EPA_SOURCE_KEY = 'epa-frs';
export const EPA_SOURCE_NAME = 'US EPA Facility Registry Service';
export const EPA_LICENCE = 'Public domain (US federal government work)';
/** Where the FRS data is published (the dataset-level source URL). */
export const EPA_DATASET_URL = 'https://www.epa.gov/frs';

/** The FRS facility detail page of a registry id: the record's page at the source. */
export function frsFacilityUrl(registryId: string): string {
  return `https://frs-public.epa.gov/ords/frs_public2/fii_query_detail.disp_program_facility?p_registry_id=${registryId}`;
}

/** The columns the importer reads; an export without any of them is refused whole. */
export const EPA_REQUIRED_COLUMNS = [
  'REGISTRY_ID',
  'PRIMARY_NAME',
  'LOCATION_ADDRESS',
  'CITY_NAME',
  'STATE_CODE',
  'POSTAL_CODE',
  'NAICS_CODE',
  'CREATE_DATE',
  'UPDATE_DATE',
] as const;

/** FRS exports are Latin-1 (WHATWG "latin1", which decodes as windows-1252, a superset). */
export function decodeFrsExport(bytes: Uint8Array): string {
  return new TextDecoder('latin1').decode(bytes);
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];

/**
 * An FRS date as YYYY-MM-DD, or null when it is not one: Oracle's DD-MON-YY of the exports
 * (`31-DEC-15`; `31-DEC-2015` also read), or ISO as the Envirofacts service gives it (`2015-12-31`,
 * `2015-12-31 00:00:00`, `2015-12-31T00:00:00`, the time dropped). A two-digit year is placed in the
 * century that puts the date on or before the retrieval date: a registry cannot report from the
 * future.
 */
export function parseFrsDate(text: string, retrieved: string): string | null {
  const iso = /^(\d{4})-(\d{2})-(\d{2})(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?$/.exec(text);
  if (iso) return validDate(Number(iso[1]), Number(iso[2]), Number(iso[3]));
  const m = /^(\d{1,2})-([A-Za-z]{3})-(\d{2}|\d{4})$/.exec(text);
  if (!m) return null;
  const month = MONTHS.indexOf(m[2]!.toUpperCase()) + 1;
  const day = Number(m[1]);
  if (month === 0) return null;
  let year = Number(m[3]);
  if (m[3]!.length === 2) {
    const retrievedYear = Number(retrieved.slice(0, 4));
    year += Math.floor(retrievedYear / 100) * 100;
    const candidate = `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
    if (candidate > retrieved) year -= 100;
  }
  return validDate(year, month, day);
}

/** YYYY-MM-DD of a calendar date, or null when there is no such day (31 April). */
function validDate(year: number, month: number, day: number): string | null {
  const iso = `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
  const date = new Date(`${iso}T00:00:00Z`);
  return Number.isNaN(date.getTime()) || date.getUTCDate() !== day || date.getUTCMonth() + 1 !== month ? null : iso;
}

// USPS codes of the US territories that ISO 3166-1 lists as countries of their own.
const TERRITORIES = new Set(['PR', 'VI', 'GU', 'AS', 'MP', 'UM']);
// The 50 states, DC and the military "states" FRS uses for bases abroad.
const US_STATES = new Set(
  (
    'AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH ' +
    'OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY AA AE AP'
  ).split(' '),
);

interface Facility {
  registryId: string;
  name: string;
  address: string | null;
  city: string | null;
  state: string | null;
  country: string;
  postalCode: string | null;
  naics: Set<string>;
  firstSeen: string | null;
  updated: string | null;
  /** The newest date of the row, any column. */
  newest: OwnDate | undefined;
}

function orNull(text: string | undefined): string | null {
  const t = (text ?? '').trim();
  return t.length > 0 ? t : null;
}

/** One row checked whole: either every value it contributes is good, or it is refused. */
function readRow(row: CsvRow, retrieved: string): Facility | string {
  const v = row.values;
  const registryId = v.REGISTRY_ID ?? '';
  if (!/^\d{12}$/.test(registryId)) return `REGISTRY_ID ${JSON.stringify(registryId)} is not 12 digits`;
  const name = orNull(v.PRIMARY_NAME);
  if (name === null) return `facility ${registryId} has no PRIMARY_NAME`;
  const state = orNull(v.STATE_CODE)?.toUpperCase() ?? null;
  let country: string;
  if (state !== null && TERRITORIES.has(state)) country = state;
  else if (state === null || US_STATES.has(state)) country = 'US';
  else return `STATE_CODE ${JSON.stringify(state)} is not a US state or territory`;
  const naicsCode = (v.NAICS_CODE ?? '').trim();
  if (naicsCode !== '' && !/^\d{2,6}$/.test(naicsCode)) return `NAICS_CODE ${JSON.stringify(naicsCode)} is not a NAICS code`;
  const dates: Record<string, string | null> = {};
  for (const column of ['CREATE_DATE', 'UPDATE_DATE', 'LAST_REPORTED_DATE']) {
    const text = (v[column] ?? '').trim();
    if (text === '') {
      dates[column] = null;
      continue;
    }
    const date = parseFrsDate(text, retrieved);
    if (date === null) return `${column} ${JSON.stringify(text)} is not a date like 31-DEC-15 or 2015-12-31`;
    dates[column] = date;
  }
  const updated =
    [dates.UPDATE_DATE, dates.LAST_REPORTED_DATE]
      .filter((d) => d != null)
      .sort()
      .at(-1) ?? null;
  let newest: OwnDate | undefined;
  for (const [column, date] of Object.entries(dates)) if (date !== null) newest = laterOwnDate(newest, { date, from: column });
  const address = [orNull(v.LOCATION_ADDRESS), orNull(v.SUPPLEMENTAL_LOCATION)].filter((p) => p !== null).join(', ');
  return {
    registryId,
    name,
    address: address.length > 0 ? address : null,
    city: orNull(v.CITY_NAME),
    state: country === 'US' ? state : null,
    country,
    postalCode: orNull(v.POSTAL_CODE),
    naics: new Set(naicsCode === '' ? [] : [naicsCode]),
    firstSeen: dates.CREATE_DATE ?? null,
    updated,
    newest,
  };
}

function toRecord(f: Facility, naicsMap: NaicsMap, retrieved: string): FactoryRecord {
  const evidence: CategoryEvidence[] = [];
  for (const code of f.naics) {
    for (const m of naicsMap.lookup(code)) {
      evidence.push({
        category: m.category,
        source: EPA_SOURCE_KEY,
        property: 'NAICS_CODE',
        value: code,
        label: m.title,
        strength: m.strength,
      });
    }
  }
  const source: SourceRef = {
    key: EPA_SOURCE_KEY,
    name: EPA_SOURCE_NAME,
    url: frsFacilityUrl(f.registryId),
    licence: EPA_LICENCE,
    retrieved,
  };
  const firstSeen = f.firstSeen ?? f.updated ?? retrieved;
  return {
    id: `epa-${f.registryId}`,
    name: f.name,
    country: f.country,
    region: f.state,
    city: f.city,
    address: f.address,
    postal_code: f.postalCode,
    categories: [],
    category_evidence: evidence,
    contacts: [],
    sources: [source],
    verification: 'source-listed',
    first_seen: firstSeen,
    updated: laterDate(f.updated ?? firstSeen, firstSeen),
  };
}

/**
 * Imports an FRS CSV export (already decoded). `retrieved` (YYYY-MM-DD) is when the export was
 * downloaded; it dates the source entries and places two-digit years. With `preferOwnDate` it is
 * only a stand-in (a file's modification time): the export's own date, its newest entry
 * (`ownDate`), dates it instead where the export has one. Rows of one facility merge; a row that
 * is malformed is reported with its line and contributes nothing.
 */
export function importEpaFrs(text: string, options: { retrieved: string; naicsMap: NaicsMap; preferOwnDate?: boolean }): ImportResult {
  const { naicsMap } = options;
  const table = readCsv(text, EPA_REQUIRED_COLUMNS);
  const problems: ImportProblem[] = [...table.problems];
  const facilities = new Map<string, Facility>();
  for (const row of table.rows) {
    const read = readRow(row, options.retrieved);
    if (typeof read === 'string') {
      problems.push({ line: row.line, message: read });
      continue;
    }
    const had = facilities.get(read.registryId);
    if (had === undefined) {
      facilities.set(read.registryId, read);
      continue;
    }
    // Facility-level columns repeat on every row; the first row's values stand, gaps filled later.
    had.address ??= read.address;
    had.city ??= read.city;
    had.postalCode ??= read.postalCode;
    for (const code of read.naics) had.naics.add(code);
    if (read.firstSeen !== null) had.firstSeen = had.firstSeen === null ? read.firstSeen : earlierDate(had.firstSeen, read.firstSeen);
    if (read.updated !== null) had.updated = had.updated === null ? read.updated : laterDate(had.updated, read.updated);
  }
  let ownDate: OwnDate | undefined;
  for (const f of facilities.values()) ownDate = laterOwnDate(ownDate, f.newest);
  const retrieved = options.preferOwnDate === true && ownDate !== undefined ? ownDate.date : options.retrieved;
  const records = mergeRecordLists([...facilities.values()].map((f) => toRecord(f, naicsMap, retrieved)));
  return {
    sources: [{ key: EPA_SOURCE_KEY, name: EPA_SOURCE_NAME, url: EPA_DATASET_URL, licence: EPA_LICENCE, retrieved }],
    records,
    rows: table.rows.length + table.problems.length,
    problems: problems.sort((a, b) => a.line - b.line),
    ...(ownDate !== undefined && { ownDate }),
  };
}
