/**
 * A stand-in for the public sources on 127.0.0.1 (real node:http), answering in their documented
 * formats. The Envirofacts Data Service: only the one URL form the importer documents
 * (live/frs-pages.ts: FRS_NAICS by code joined to the program facility on the program keys, rows
 * from 1, sorted by the program key, CSV; anything else is a 404), answered as the service answers
 * it: lower-case column names, FRS_NAICS's columns first, the joined table's key columns qualified
 * (`frs.frs_program_facility.pgm_sys_id`), ISO dates (`2015-12-31 00:00:00`), rows sorted as asked.
 * The rows are the shared EPA extract's, every one given the asked NAICS code. The Wikidata Query
 * Service: the two POSTed queries of live/wikidata-pages.ts (industries, then pages of
 * `VALUES ?industry`, ORDER BY every variable), answered in W3C SPARQL JSON from made-up items
 * (Q900000…); any other query is a 404. Tests script its misbehaviour: a
 * 429 with Retry-After, a 503, a connection dropped halfway through a body, a malformed row, a
 * delay on every answer.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadSharedData } from '#shared-data';
import { readCsv } from '../import/csv.ts';
import { decodeFrsExport, parseFrsDate } from '../import/epa-frs.ts';
import { compareStrings } from '../import/source.ts';
import { SHARED_FRS_EXTRACT } from './shared-dataset.ts';

/** What the stand-in does to the n-th request (1-based) for a path; undefined: answer normally. */
export type Misbehaviour = 'throttle' | 'unavailable' | 'drop' | 'fail' | 'unclosed-quote' | 'query-timeout';

export interface ReplayOptions {
  /** Extract rows given to each NAICS code, in order: code → how many. */
  readonly frsRows: Readonly<Record<string, number>>;
  /** Made-up Wikidata items in the results. */
  readonly wikidataItems: number;
  /** Misbehaviour by request: the source, the page's key (as in `requests`) and the attempt, from 1. */
  readonly misbehave?: (source: 'frs' | 'wikidata', page: string, attempt: number) => Misbehaviour | undefined;
  /** Delay before every answer (ms). */
  readonly delayMs?: number;
  /** A row made malformed (its index among the code's rows as served): its registry_id becomes `12345`. */
  readonly malformedRow?: { code: string; index: number };
}

export interface ReplayServer {
  readonly frsBase: string;
  readonly wikidataEndpoint: string;
  /** Requests seen, by page key: `frs <code> <first>:<last>` (rows from 1), `/sparql offset <n>`. */
  readonly requests: Map<string, number>;
  close(): Promise<void>;
}

/** The made-up industries the first query finds. */
const INDUSTRIES = [
  ['Q900000201', 'machining'],
  ['Q900000202', 'electroplating'],
  ['Q900000203', 'injection molding'],
  ['Q900000204', 'sheet metal'],
] as const;

/** The made-up Wikidata bindings: each item has two industries, the last has a bad country code. */
function wikidataBindings(items: number): Record<string, { type: string; value: string }>[] {
  const industries = INDUSTRIES;
  const bindings: Record<string, { type: string; value: string }>[] = [];
  for (let i = 0; i < items; i++) {
    for (const k of [0, 1]) {
      const [qid, label] = industries[(i + k) % industries.length]!;
      bindings.push({
        item: { type: 'uri', value: `http://www.wikidata.org/entity/Q${900000001 + i}` },
        itemLabel: { type: 'literal', value: `Replay Works ${i + 1}` },
        countryCode: { type: 'literal', value: i === items - 1 ? 'XX' : ['DE', 'FI', 'JP', 'US'][i % 4]! },
        // A subdivision code where the made-up headquarters lies in one: Bavaria, Uusimaa, Tokyo, Ohio.
        ...(i % 2 === 0 && { regionCode: { type: 'literal', value: ['DE-BY', 'FI-18', 'JP-13', 'US-OH'][i % 4]! } }),
        industry: { type: 'uri', value: `http://www.wikidata.org/entity/${qid}` },
        industryLabel: { type: 'literal', value: label },
        website: { type: 'uri', value: `https://replay-works-${i + 1}.example/` },
      });
    }
  }
  return bindings;
}

/** FRS_NAICS's columns, then the program facility's: its join keys qualified, as the service names them. */
const NAICS_COLUMNS = ['pgm_sys_acrnm', 'pgm_sys_id', 'naics_code', 'primary_indicator', 'code_description'];
const FACILITY_COLUMNS = [
  'registry_id',
  'primary_name',
  'location_address',
  'supplemental_location',
  'city_name',
  'county_name',
  'state_code',
  'postal_code',
  'create_date',
  'update_date',
];
const FRS_HEADER = [...NAICS_COLUMNS, 'frs.frs_program_facility.pgm_sys_acrnm', 'frs.frs_program_facility.pgm_sys_id', ...FACILITY_COLUMNS];

/** The one Envirofacts URL form served (live/frs-pages.ts frsPageUrl). */
const FRS_PAGE =
  /^\/efservice\/frs\.frs_naics\/naics_code\/equals\/(\d+)\/join\/frs\.frs_program_facility\/pgm_sys_acrnm\/equals\/pgm_sys_acrnm\/and\/pgm_sys_id\/equals\/pgm_sys_id\/(\d+):(\d+)\/sort\/frs\.frs_naics\.pgm_sys_acrnm:asc,frs\.frs_naics\.pgm_sys_id:asc\/CSV$/;

const csvField = (value: string): string => `"${value.replaceAll('"', '""')}"`;

/** An extract date (31-DEC-15) as the service writes it (2015-12-31 00:00:00). */
function serviceDate(text: string): string {
  const date = text === '' ? null : parseFrsDate(text, '2026-11-24');
  return date === null ? text : `${date} 00:00:00`;
}

/** The service's rows for each code: extract rows in turn, given the code, sorted by the program key. */
async function frsRowsByCode(options: ReplayOptions): Promise<Map<string, string[]>> {
  const extract = readCsv(decodeFrsExport(await loadSharedData(SHARED_FRS_EXTRACT)), []).rows.map((r) => r.values);
  const byCode = new Map<string, string[]>();
  let next = 0;
  for (const [code, count] of Object.entries(options.frsRows)) {
    const rows = extract
      .slice(next, next + count)
      .map((v): Record<string, string> => ({ ...v, NAICS_CODE: code }))
      .sort((a, b) => compareStrings(a.PGM_SYS_ACRNM ?? '', b.PGM_SYS_ACRNM ?? '') || compareStrings(a.PGM_SYS_ID ?? '', b.PGM_SYS_ID ?? ''));
    byCode.set(
      code,
      rows.map((v, index) => {
        const value = (column: string): string => {
          const name = column.slice(column.lastIndexOf('.') + 1).toUpperCase();
          if (name === 'REGISTRY_ID' && options.malformedRow?.code === code && options.malformedRow.index === index) return '12345';
          return name.endsWith('_DATE') ? serviceDate(v[name] ?? '') : (v[name] ?? '');
        };
        return FRS_HEADER.map((column) => csvField(value(column))).join(',');
      }),
    );
    next += count;
  }
  return byCode;
}

/** Starts the stand-in on a free port. */
export async function startReplay(options: ReplayOptions): Promise<ReplayServer> {
  const byCode = await frsRowsByCode(options);
  const header = FRS_HEADER.join(',');
  const bindings = wikidataBindings(options.wikidataItems);
  const requests = new Map<string, number>();

  function answer(request: IncomingMessage, form: string): { source: 'frs' | 'wikidata'; page: string; type: string; body: string } | undefined {
    const url = new URL(request.url ?? '/', 'http://x');
    const frs = FRS_PAGE.exec(url.pathname);
    if (frs && Number(frs[2]) >= 1) {
      const rows = byCode.get(frs[1]!) ?? [];
      const page = rows.slice(Number(frs[2]) - 1, Number(frs[3]));
      return { source: 'frs', page: `frs ${frs[1]} ${frs[2]}:${frs[3]}`, type: 'text/csv', body: `${[header, ...page].join('\n')}\n` };
    }
    const params = new URLSearchParams(form);
    const query = params.get('query') ?? '';
    if (url.pathname !== '/sparql' || request.method !== 'POST' || params.get('format') !== 'json') return undefined;
    // Pretty-printed, one member a line, as the Query Service prints it.
    const sparqlJson = (vars: string[], rows: unknown[]): string => JSON.stringify({ head: { vars }, results: { bindings: rows } }, null, 1);
    if (/^SELECT DISTINCT \?industry WHERE/.test(query)) {
      const industries = INDUSTRIES.map(([qid]) => ({ industry: { type: 'uri', value: `http://www.wikidata.org/entity/${qid}` } }));
      return { source: 'wikidata', page: '/sparql industries', type: 'application/sparql-results+json', body: sparqlJson(['industry'], industries) };
    }
    const values =
      /VALUES \?industry \{([^}]*)\}/
        .exec(query)?.[1]
        ?.trim()
        .split(/\s+/)
        .map((v) => v.replace(/^wd:/, '')) ?? [];
    const limit = /\nLIMIT (\d+)\n/.exec(query)?.[1];
    const offset = /\nOFFSET (\d+)$/.exec(query)?.[1];
    // The page query as documented: the industries asked for, paged in a total order.
    if (
      values.length === 0 ||
      limit === undefined ||
      offset === undefined ||
      !query.includes('ORDER BY ?item ?industry ?country ?countryCode ?city ?regionCode ?website ?modified')
    ) {
      return undefined;
    }
    const asked = new Set(values);
    const rows = bindings.filter((b) => asked.has(b.industry!.value.replace(/^.*\//, ''))).slice(Number(offset), Number(offset) + Number(limit));
    const vars = ['item', 'itemLabel', 'countryCode', 'city', 'cityLabel', 'regionCode', 'industry', 'industryLabel', 'website', 'modified'];
    return { source: 'wikidata', page: `/sparql offset ${offset}`, type: 'application/sparql-results+json', body: sparqlJson(vars, rows) };
  }

  function respond(request: IncomingMessage, form: string, response: ServerResponse): void {
    const found = answer(request, form);
    if (found === undefined) {
      response.writeHead(404).end();
      return;
    }
    const attempt = (requests.get(found.page) ?? 0) + 1;
    requests.set(found.page, attempt);
    const misbehaviour = options.misbehave?.(found.source, found.page, attempt);
    if (misbehaviour === 'throttle') {
      response.writeHead(429, { 'retry-after': '1', 'content-type': 'text/plain' }).end('Too Many Requests');
    } else if (misbehaviour === 'unavailable') {
      response.writeHead(503, { 'content-type': 'text/plain' }).end('Service Unavailable');
    } else if (misbehaviour === 'fail') {
      response.writeHead(500, { 'content-type': 'text/plain' }).end('Internal Server Error');
    } else if (misbehaviour === 'query-timeout') {
      // The Query Service's answer to a query over its 60 s limit.
      response
        .writeHead(500, { 'content-type': 'text/plain' })
        .end('SPARQL-QUERY: queryStr=…\njava.util.concurrent.TimeoutException\n\tat java.util.concurrent.FutureTask.get(FutureTask.java:205)\n');
    } else if (misbehaviour === 'unclosed-quote') {
      // An answer that stops inside a quoted field of its middle row, ended as if whole.
      const lines = found.body.split('\n');
      const middle = lines.length >> 1;
      const cut = `${lines.slice(0, middle).join('\n')}\n${lines[middle]!.slice(0, lines[middle]!.lastIndexOf('"'))}\n`;
      response.writeHead(200, { 'content-type': found.type }).end(cut);
    } else if (misbehaviour === 'drop') {
      const bytes = Buffer.from(found.body);
      response.writeHead(200, { 'content-type': found.type, 'content-length': bytes.length });
      response.write(bytes.subarray(0, bytes.length >> 1), () => response.socket?.destroy());
    } else {
      response.writeHead(200, { 'content-type': found.type }).end(found.body);
    }
  }

  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const form = Buffer.concat(chunks).toString('utf8');
    if (options.delayMs) setTimeout(() => respond(request, form, response), options.delayMs);
    else respond(request, form, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    frsBase: `http://127.0.0.1:${port}/efservice`,
    wikidataEndpoint: `http://127.0.0.1:${port}/sparql`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
