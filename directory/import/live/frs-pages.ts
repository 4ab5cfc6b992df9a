/**
 * The US EPA FRS through the Envirofacts Data Service API (its current `data.epa.gov/efservice`
 * grammar: `/<program.table>/<column>/<operator>/<value>/<join type>/<program.table>/<comparison>/
 * <first>:<last>/sort/<columns>/<format>`, rows counted from 1, both ends included): the program
 * records with one NAICS code, each joined to its program facility, a page of rows at a time, as
 * CSV. One URL per page:
 *
 *   https://data.epa.gov/efservice/frs.frs_naics/naics_code/equals/<code>
 *     /join/frs.frs_program_facility/pgm_sys_acrnm/equals/pgm_sys_acrnm/and/pgm_sys_id/equals/pgm_sys_id
 *     /<first>:<last>/sort/frs.frs_naics.pgm_sys_acrnm:asc,frs.frs_naics.pgm_sys_id:asc/CSV
 *
 * FRS keeps NAICS codes per program record (program acronym and id), not per facility, so the join
 * is on those two keys; the program facility row carries the registry id, name, address and dates.
 * The sort on the program key is a total order within one code, so pages do not overlap or skip
 * rows between requests. Columns come back in lower case; a joined table's column whose name the
 * first table also has comes qualified (`frs.frs_program_facility.pgm_sys_id`). The header is read
 * upper-cased, with the facility table's columns winning such a clash, so the FRS importer
 * (epa-frs.ts) reads the page as it reads an export. Which codes: every code of the NAICS map, with
 * the grade the map gives it (a weak code's facilities carry the evidence without the category).
 */
/** The Envirofacts Data Service base, before the table path. */
export const ENVIROFACTS_BASE = 'https://data.epa.gov/efservice';

/** The joined table whose columns win a name clash. */
const FACILITY_TABLE = 'frs.frs_program_facility';

/** The URL of one page: rows `first` to `first + size - 1` (from 0) of the program records with NAICS `code`. */
export function frsPageUrl(base: string, code: string, first: number, size: number): string {
  return (
    `${base.replace(/\/+$/, '')}/frs.frs_naics/naics_code/equals/${code}` +
    `/join/${FACILITY_TABLE}/pgm_sys_acrnm/equals/pgm_sys_acrnm/and/pgm_sys_id/equals/pgm_sys_id` +
    `/${first + 1}:${first + size}/sort/frs.frs_naics.pgm_sys_acrnm:asc,frs.frs_naics.pgm_sys_id:asc/CSV`
  );
}

/**
 * A page's text with its header as the FRS importer names the columns: upper case, without a
 * `program.table.` qualifier; where a qualified facility column and an unqualified one share a name,
 * the facility's keeps it and the other is renamed out of the importer's way (`FRS_NAICS.<name>`).
 */
export function normalizeFrsPage(text: string): string {
  const end = text.indexOf('\n');
  const raw = end < 0 ? text : text.slice(0, end);
  const cr = raw.endsWith('\r') ? '\r' : '';
  const line = raw.slice(0, raw.length - cr.length);
  const names = line.split(',').map((name) => name.replace(/^"|"$/g, '').toLowerCase());
  const bare = (name: string): string => name.slice(name.lastIndexOf('.') + 1);
  const fromFacility = new Set(names.filter((n) => n.startsWith(`${FACILITY_TABLE}.`)).map(bare));
  const header = names
    .map((name) => {
      if (!name.includes('.')) return fromFacility.has(name) ? `FRS_NAICS.${name}` : name;
      return name.startsWith(`${FACILITY_TABLE}.`) || !names.includes(bare(name)) ? bare(name) : name;
    })
    .map((name) => name.toUpperCase())
    .join(',');
  return header + cr + (end < 0 ? '' : text.slice(end));
}
