/**
 * Exhibitor lists (a trade fair's published list of exhibitors, transcribed as CSV) → records.
 *
 * Input: UTF-8 CSV with the header
 *
 *   event,event_url,retrieved,name,country,city,website,email,categories[,licence]
 *
 * (any column order; extra columns ignored). Required per row: event (the fair, with its year, e.g.
 * "Example Fair 2025"), event_url (the list's page), retrieved (YYYY-MM-DD), name, country (ISO
 * 3166-1 alpha-2). Optional: city; region (ISO 3166-2, `US-OH`, or its part after the hyphen);
 * website (an http(s) URL, or a bare host name, read as https);
 * email (one or more, separated by `;`); categories (the list's own category texts, separated by
 * `;`); licence (the list's terms; when empty, "not stated by the source").
 *
 * Each row is one record `cn-` + the first 20 hex digits of SHA-256 over the UTF-8 of
 * `exhibitor|<event_url>|<name folded>|<country>` (name folded: case, accents and punctuation
 * dropped, words joined by one space; see text.ts), so the same exhibitor on the same list keeps
 * its id across imports and spellings. Emails on a third party's list are `observed-email`
 * contacts; listed category texts become evidence (property `exhibitor-category`). A list only
 * says who exhibited, so its records are `unverified`.
 */
import { sha256 } from '../../core/crypto/sha256.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { type Contact, type FactoryRecord, isIsoDate, type SourceRef } from '../record.ts';
import { foldPhrase } from '../text.ts';
import { isIsoCountry, regionFromCode } from './countries.ts';
import { type CsvRow, readCsv } from './csv.ts';
import { evidenceFromText } from './evidence.ts';
import { mergeRecordLists, mergeSources } from './merge.ts';
import { type ImportProblem, type ImportResult, isHttpUrl } from './source.ts';

export const EXHIBITOR_COLUMNS = ['event', 'event_url', 'retrieved', 'name', 'country', 'city', 'website', 'email', 'categories'] as const;
const REQUIRED = ['event', 'event_url', 'retrieved', 'name', 'country'] as const;
export const EXHIBITOR_DEFAULT_LICENCE = 'not stated by the source';
const EMAIL = /^[^\s@;,<>]+@[^\s@;,<>]+\.[^\s@;,<>]+$/;

/** The source key of an event's list: `exhibitor:` + the event's folded words joined by hyphens. */
export function exhibitorSourceKey(event: string): string {
  return `exhibitor:${foldPhrase(event).replaceAll(' ', '-')}`;
}

/** The id of an exhibitor on a list (see the module comment). */
export function exhibitorId(eventUrl: string, name: string, country: string): string {
  const canonical = `exhibitor|${eventUrl}|${foldPhrase(name)}|${country}`;
  return `cn-${toHex(sha256(new TextEncoder().encode(canonical))).slice(0, 20)}`;
}

function splitList(text: string): string[] {
  return text
    .split(';')
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
}

function readRow(row: CsvRow): { record: FactoryRecord; source: SourceRef } | string {
  const v = row.values;
  for (const column of REQUIRED) if ((v[column] ?? '') === '') return `${column} is empty`;
  const event = v.event!;
  const eventUrl = v.event_url!;
  if (!isHttpUrl(eventUrl)) return `event_url ${JSON.stringify(eventUrl)} is not an http(s) URL`;
  const retrieved = v.retrieved!;
  if (!isIsoDate(retrieved)) return `retrieved ${JSON.stringify(retrieved)} is not a YYYY-MM-DD date`;
  const name = v.name!;
  if (foldPhrase(name) === '') return `name ${JSON.stringify(name)} has no letters or digits`;
  const country = v.country!.toUpperCase();
  if (!isIsoCountry(country)) return `country ${JSON.stringify(v.country)} is not an ISO 3166-1 alpha-2 code`;
  const regionText = v.region ?? '';
  const region = regionText === '' ? null : regionFromCode(regionText.includes('-') ? regionText : `${country}-${regionText}`, country);
  if (regionText !== '' && region === null) return `region ${JSON.stringify(regionText)} is not an ISO 3166-2 code of ${country}`;
  const key = exhibitorSourceKey(event);
  if (key === 'exhibitor:') return `event ${JSON.stringify(event)} has no letters or digits`;
  const contacts: Contact[] = [];
  let website = v.website ?? '';
  if (website !== '') {
    if (/^[a-z0-9.-]+\.[a-z]{2,}(\/\S*)?$/i.test(website)) website = `https://${website}`;
    if (!isHttpUrl(website)) return `website ${JSON.stringify(v.website)} is not a URL`;
    contacts.push({ kind: 'website', value: website, source: key });
  }
  for (const email of splitList(v.email ?? '')) {
    if (!EMAIL.test(email)) return `email ${JSON.stringify(email)} is not an address`;
    contacts.push({ kind: 'observed-email', value: email.toLowerCase(), source: key });
  }
  const evidence = splitList(v.categories ?? '').flatMap((text) => evidenceFromText(text, { source: key, property: 'exhibitor-category', value: text }));
  const source: SourceRef = {
    key,
    name: event,
    url: eventUrl,
    licence: v.licence || EXHIBITOR_DEFAULT_LICENCE,
    retrieved,
  };
  return {
    source,
    record: {
      id: exhibitorId(eventUrl, name, country),
      name,
      country,
      region,
      city: v.city || null,
      address: null,
      postal_code: null,
      categories: [],
      category_evidence: evidence,
      contacts,
      sources: [source],
      verification: 'unverified',
      first_seen: retrieved,
      updated: retrieved,
    },
  };
}

/**
 * Imports one exhibitor CSV (it may hold several events, each its own source). A malformed row is
 * reported and skipped whole.
 */
export function importExhibitors(text: string): ImportResult {
  const table = readCsv(text, REQUIRED);
  const problems: ImportProblem[] = [...table.problems];
  const records: FactoryRecord[] = [];
  const sources: SourceRef[] = [];
  for (const row of table.rows) {
    const read = readRow(row);
    if (typeof read === 'string') problems.push({ line: row.line, message: read });
    else {
      records.push(read.record);
      sources.push(read.source);
    }
  }
  return {
    sources: mergeSources(sources),
    records: mergeRecordLists(records),
    rows: table.rows.length + table.problems.length,
    problems: problems.sort((a, b) => a.line - b.line),
  };
}
