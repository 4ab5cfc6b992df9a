/**
 * CSV reading for the importers, through csv-parse: rows as objects keyed by the header, each with
 * the line it starts on, and every row csv-parse cannot read reported with its line and skipped.
 */
import type { ImportProblem } from './source.ts';

type Parse = typeof import('csv-parse/sync').parse;

// csv-parse's Node build (used on Node and Deno) relies on the global Buffer, which browsers do
// not have; its browser build carries its own Buffer but assigns __proto__, which Deno forbids.
// So: the Node build where it loads, the browser build where it does not. No runtime sniffing.
const parse: Parse = await import('csv-parse/sync').then(
  (m) => m.parse,
  async () => (await import('csv-parse/browser/esm/sync')).parse as Parse,
);

/** A data row: the header's column names to the row's values, and where the row starts (1-based). */
export interface CsvRow {
  line: number;
  values: Record<string, string>;
}

export interface CsvTable {
  columns: string[];
  rows: CsvRow[];
  problems: ImportProblem[];
}

function countNewlines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

// csv-parse counts a row by the line it ends on; a quoted field may have carried it over several.
function startLine(endLine: number, raw: string | undefined): number {
  return endLine - countNewlines((raw ?? '').replace(/\r?\n$/, ''));
}

/**
 * Reads `text` as CSV with a header row. Quotes inside an unquoted field are taken literally (real
 * exports hold `1265 EAST "D" AVENUE`); a row with the wrong number of fields, or that cannot be
 * read, becomes a problem with its line number. `required` columns must all be in the header, or
 * the whole file is refused with one problem at line 1.
 */
export function readCsv(text: string, required: readonly string[]): CsvTable {
  const problems: ImportProblem[] = [];
  const records: { fields: string[]; line: number }[] = [];
  try {
    // csv-parse counts CR and LF as a line each inside a quoted field, which would push every later
    // line number of a CRLF file (the EPA's exports are CRLF) one further per such field.
    parse(text.replaceAll('\r\n', '\n'), {
      bom: true,
      relax_quotes: true,
      skip_records_with_error: true,
      raw: true,
      info: true,
      on_skip: (error, raw) => {
        // error.lines is the line the row ends on, and its message says so: report where it starts.
        // A quote still open at the end means the input stopped short: nothing after it was read.
        if (error) {
          problems.push({
            line: startLine(Number(error.lines), raw),
            message: error.message.replace(/ on line [0-9]+$/, ''),
            ...(error.code === 'CSV_QUOTE_NOT_CLOSED' && { stopped: true as const }),
          });
        }
        return undefined;
      },
      on_record: (record: unknown) => {
        const { record: fields, info, raw } = record as { record: string[]; info: { lines: number }; raw: string };
        records.push({ fields, line: startLine(info.lines, raw) });
        return undefined;
      },
    });
  } catch (error) {
    // An unclosed quote at the end of the file stops csv-parse; the rows before it stand.
    const e = error as { lines?: number; message?: string };
    problems.push({ line: e.lines ?? 0, message: `${e.message ?? String(error)}; the rest of the file was not read`, stopped: true });
  }
  const header = records.shift();
  if (header === undefined) return { columns: [], rows: [], problems: [{ line: 1, message: 'the file has no header row' }, ...problems] };
  const columns = header.fields.map((c) => c.trim());
  const missing = required.filter((c) => !columns.includes(c));
  if (missing.length > 0) {
    return {
      columns,
      rows: [],
      problems: [{ line: header.line, message: `the header lacks the column(s) ${missing.join(', ')}` }],
    };
  }
  const rows = records.map(({ fields, line }) => {
    const values: Record<string, string> = {};
    columns.forEach((c, i) => {
      values[c] = (fields[i] ?? '').trim();
    });
    return { line, values };
  });
  return { columns, rows, problems: problems.sort((a, b) => a.line - b.line) };
}
