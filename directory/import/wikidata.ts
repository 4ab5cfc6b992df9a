/**
 * Wikidata SPARQL results (`application/sparql-results+json`) → directory records.
 *
 * The query the importer expects (run it at https://query.wikidata.org/ and save the JSON), one
 * row per combination of an item's values:
 *
 *   SELECT ?item ?itemLabel ?countryCode ?city ?cityLabel ?regionCode ?industry ?industryLabel ?website ?modified
 *   WHERE {
 *     ?item wdt:P452 ?industry ;                       # industry
 *           wdt:P17 ?country .                         # country
 *     ?country wdt:P297 ?countryCode .                 # its ISO 3166-1 alpha-2 code
 *     OPTIONAL { ?item wdt:P159|wdt:P131 ?city .       # headquarters location, or located in
 *       OPTIONAL { ?city wdt:P131* ?subdivision .      # and the subdivisions it lies in
 *                  ?subdivision wdt:P300 ?regionCode . } }   # their ISO 3166-2 codes
 *     OPTIONAL { ?item wdt:P856 ?website . }           # official website
 *     OPTIONAL { ?item schema:dateModified ?modified . }
 *     # narrow ?industry (VALUES, or a FILTER) to the industries of interest
 *     SERVICE wikibase:label { bd:serviceParam wikibase:language "en". }
 *   }
 *
 * Required variables: item, itemLabel, countryCode; the others are read when present. Rows of one
 * item merge into one record `wd-Q…`: every industry becomes category evidence through its English
 * label (property P452, value the industry's Q-id; see evidence.ts), every website a `website`
 * contact. Where an item has several countries, cities or regions, the first in code order is kept;
 * a region is an ISO 3166-2 code (`?regionCode`) of the record's country, its part after the hyphen.
 * Wikidata is open and community-edited, so its records are `unverified`. Licence: CC0 1.0.
 */
import type { CategoryEvidence, Contact, FactoryRecord } from '../record.ts';
import { isIsoCountry, regionFromCode } from './countries.ts';
import { evidenceFromText } from './evidence.ts';
import { mergeRecordLists } from './merge.ts';
import { type ImportProblem, type ImportResult, isHttpUrl, type OwnDate } from './source.ts';

export const WIKIDATA_SOURCE_KEY = 'wikidata';
export const WIKIDATA_LICENCE = 'CC0 1.0';
export const WIKIDATA_QUERY_URL = 'https://query.wikidata.org/';
const ENTITY = /^https?:\/\/www\.wikidata\.org\/entity\/(Q[1-9][0-9]*)$/;

interface Term {
  type: string;
  value: string;
}
type Binding = Record<string, Term | undefined>;

/**
 * The line on which each element of `results.bindings` starts, by a light scan of the JSON text
 * (strings skipped, containers tracked), so problems can name lines as the CSV importers do.
 */
export function bindingLines(text: string): number[] {
  const lines: number[] = [];
  const stack: { kind: '{' | '['; key: string | undefined }[] = [];
  let line = 1;
  let key: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '\n') line++;
    else if (ch === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const value = text.slice(i + 1, j);
      let k = j + 1;
      while (k < text.length && /\s/.test(text[k]!)) k++;
      if (stack.at(-1)?.kind === '{' && text[k] === ':') key = value;
      i = j;
    } else if (ch === '{' || ch === '[') {
      const top = stack.at(-1);
      if (ch === '{' && top?.kind === '[' && top.key === 'bindings' && stack.length === 3 && stack[1]!.key === 'results') {
        lines.push(line);
      }
      stack.push({ kind: ch, key: top?.kind === '{' ? key : undefined });
    } else if (ch === '}' || ch === ']') stack.pop();
  }
  return lines;
}

function text(binding: Binding, name: string): string | null {
  const value = binding[name]?.value?.trim();
  return value !== undefined && value.length > 0 ? value : null;
}

interface Row {
  qid: string;
  name: string;
  country: string;
  city: string | null;
  /** The city's ISO 3166-2 subdivision code's region part, where the query selects `?regionCode`. */
  region: string | null;
  industry: { qid: string; label: string } | null;
  website: string | null;
  modified: string | null;
}

function readBinding(binding: Binding): Row | string {
  const item = text(binding, 'item');
  const qid = item === null ? null : (ENTITY.exec(item)?.[1] ?? null);
  if (qid === null) return `item ${JSON.stringify(item)} is not a Wikidata item URI`;
  const name = text(binding, 'itemLabel');
  // The label service answers with the bare Q-id when the item has no label in the language.
  if (name === null || name === qid) return `${qid} has no label`;
  const country = text(binding, 'countryCode')?.toUpperCase() ?? null;
  if (country === null || !isIsoCountry(country)) return `${qid}: countryCode ${JSON.stringify(country)} is not an ISO 3166-1 alpha-2 code`;
  const website = text(binding, 'website');
  if (website !== null && !isHttpUrl(website)) return `${qid}: website ${JSON.stringify(website)} is not an http(s) URL`;
  const industryUri = text(binding, 'industry');
  let industry: Row['industry'] = null;
  if (industryUri !== null) {
    const industryQid = ENTITY.exec(industryUri)?.[1];
    if (industryQid === undefined) return `${qid}: industry ${JSON.stringify(industryUri)} is not a Wikidata item URI`;
    const label = text(binding, 'industryLabel');
    industry = { qid: industryQid, label: label === null || label === industryQid ? '' : label };
  }
  const modifiedText = text(binding, 'modified');
  const modified = modifiedText === null ? null : (/^(\d{4}-\d{2}-\d{2})T/.exec(modifiedText)?.[1] ?? null);
  if (modifiedText !== null && modified === null) return `${qid}: modified ${JSON.stringify(modifiedText)} is not an xsd:dateTime`;
  const regionText = text(binding, 'regionCode');
  // A code of another country (a city in a border area) or none at all is not a region of the record.
  const region = regionText === null ? null : regionFromCode(regionText, country);
  const cityLabel = text(binding, 'cityLabel');
  const cityUri = text(binding, 'city');
  return {
    qid,
    name,
    country,
    // A city without an English label comes back as its Q-id: no use to a reader.
    city: cityLabel !== null && cityLabel !== ENTITY.exec(cityUri ?? '')?.[1] ? cityLabel : null,
    region,
    industry,
    website,
    modified,
  };
}

function firstInOrder(values: Iterable<string>): string | null {
  return [...values].sort()[0] ?? null;
}

/**
 * Imports SPARQL JSON results. `retrieved` (YYYY-MM-DD) is when the query ran; it dates the
 * source entries, and the records where the results carry no modification date. With
 * `preferOwnDate` it is only a stand-in (a file's modification time): the results' own date, the
 * newest item edit they hold (`ownDate`), dates them instead where they select `?modified`.
 */
export function importWikidata(json: string, options: { retrieved: string; preferOwnDate?: boolean }): ImportResult {
  let document: { head?: { vars?: unknown }; results?: { bindings?: unknown } };
  try {
    document = JSON.parse(json) as typeof document;
  } catch (error) {
    return refuse(`not JSON: ${(error as Error).message}`);
  }
  const result = importBindings(json, document, options.retrieved);
  const own = result.ownDate;
  if (options.preferOwnDate !== true || own === undefined || own.date === options.retrieved) return result;
  return importBindings(json, document, own.date);
}

const refuse = (message: string): ImportResult => ({ sources: [], records: [], rows: 0, problems: [{ line: 1, message }] });

function importBindings(json: string, document: { head?: { vars?: unknown }; results?: { bindings?: unknown } }, retrieved: string): ImportResult {
  const source = { key: WIKIDATA_SOURCE_KEY, name: 'Wikidata', url: WIKIDATA_QUERY_URL, licence: WIKIDATA_LICENCE, retrieved };
  const vars = document?.head?.vars;
  const bindings = document?.results?.bindings;
  if (!Array.isArray(vars) || !Array.isArray(bindings)) return refuse('not SPARQL JSON results (head.vars, results.bindings)');
  const missing = ['item', 'itemLabel', 'countryCode'].filter((v) => !vars.includes(v));
  if (missing.length > 0) return refuse(`the query does not select ${missing.map((v) => `?${v}`).join(', ')}`);
  const lines = bindingLines(json);
  const problems: ImportProblem[] = [];
  const items = new Map<string, Row[]>();
  bindings.forEach((binding: unknown, index) => {
    const line = lines[index] ?? 1;
    if (typeof binding !== 'object' || binding === null) {
      problems.push({ line, message: 'a binding is not an object' });
      return;
    }
    const row = readBinding(binding as Binding);
    if (typeof row === 'string') problems.push({ line, message: row });
    else items.set(row.qid, [...(items.get(row.qid) ?? []), row]);
  });
  const records: FactoryRecord[] = [];
  for (const [qid, rows] of items) {
    const evidence: CategoryEvidence[] = [];
    const contacts: Contact[] = [];
    for (const row of rows) {
      if (row.industry !== null && row.industry.label !== '') {
        evidence.push(...evidenceFromText(row.industry.label, { source: WIKIDATA_SOURCE_KEY, property: 'P452', value: row.industry.qid }));
      }
      if (row.website !== null) contacts.push({ kind: 'website', value: row.website, source: WIKIDATA_SOURCE_KEY });
    }
    // The item's last edit dates it; without one, the day the query ran.
    const date =
      rows
        .map((r) => r.modified ?? '')
        .sort()
        .at(-1) || retrieved;
    records.push({
      id: `wd-${qid}`,
      name: rows[0]!.name,
      country: firstInOrder(rows.map((r) => r.country))!,
      region: firstInOrder(rows.flatMap((r) => (r.region === null ? [] : [r.region]))),
      city: firstInOrder(rows.flatMap((r) => (r.city === null ? [] : [r.city]))),
      address: null,
      postal_code: null,
      categories: [],
      category_evidence: evidence,
      contacts,
      sources: [{ ...source, url: `https://www.wikidata.org/wiki/${qid}` }],
      verification: 'unverified',
      first_seen: date,
      updated: date,
    });
  }
  const newest = [...items.values()]
    .flat()
    .flatMap((row) => (row.modified === null ? [] : [row.modified]))
    .sort()
    .at(-1);
  const ownDate: OwnDate | undefined = newest === undefined ? undefined : { date: newest, from: 'its newest ?modified' };
  return { sources: [source], records: mergeRecordLists(records), rows: bindings.length, problems, ...(ownDate !== undefined && { ownDate }) };
}
