/**
 * The US EPA FRS through the Envirofacts Data Service API: facilities by NAICS code, a page of
 * rows at a time, as CSV. One URL per page:
 *
 *   https://data.epa.gov/efservice/FRS_NAICS/NAICS_CODE/<code>/FRS_FACILITY_SITE/rows/<first>:<last>/CSV
 *
 * (a table, a column and its value, a second table joined on their common column REGISTRY_ID,
 * a 0-based inclusive row range, the format). The columns are those of the FRS export the file
 * importer reads (epa-frs.ts); Envirofacts may spell them in lower case, so the header is read
 * upper-cased. Which codes: every code of the NAICS map, with the grade the map gives it (a weak
 * code's facilities carry the evidence without the category, as for files).
 */
import type { NaicsMap } from '../evidence.ts';

/** The Envirofacts Data Service base, before the table path. */
export const ENVIROFACTS_BASE = 'https://data.epa.gov/efservice';

/** The URL of one page: rows `first` to `first + size - 1` of the facilities with NAICS `code`. */
export function frsPageUrl(base: string, code: string, first: number, size: number): string {
  return `${base.replace(/\/+$/, '')}/FRS_NAICS/NAICS_CODE/${code}/FRS_FACILITY_SITE/rows/${first}:${first + size - 1}/CSV`;
}

/** The codes fetched by default: every code of the map, in code order. */
export function frsCodes(map: NaicsMap): string[] {
  return map.codesAtLeast('weak');
}

/**
 * A page's text with its header as the FRS importer names the columns: upper case, and without
 * a `table.` prefix on a column name (a joined query may qualify them).
 */
export function normalizeFrsPage(text: string): string {
  const end = text.indexOf('\n');
  const header = (end < 0 ? text : text.slice(0, end)).toUpperCase().replace(/(^|,)("?)[A-Z0-9_]+\./g, '$1$2');
  return header + (end < 0 ? '' : text.slice(end));
}
