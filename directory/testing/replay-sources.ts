/**
 * A stand-in for the public sources on 127.0.0.1 (real node:http), answering in their documented
 * formats: the Envirofacts Data Service's CSV pages of FRS facilities by NAICS code, built from
 * the shared EPA extract (its rows given the asked code, header in lower case as Envirofacts
 * may send it), and the Wikidata Query Service's W3C SPARQL JSON results, made-up items
 * (Q900000…). Tests script its misbehaviour: a 429 with Retry-After, a 503, a connection
 * dropped halfway through a body, a malformed row, a delay on every answer.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadSharedData } from '#shared-data';
import { decodeFrsExport } from '../import/epa-frs.ts';
import { SHARED_FRS_EXTRACT } from './shared-dataset.ts';

/** What the stand-in does to the n-th request (1-based) for a path; undefined: answer normally. */
export type Misbehaviour = 'throttle' | 'unavailable' | 'drop' | 'fail';

export interface ReplayOptions {
  /** Extract rows given to each NAICS code, in order: code → how many. */
  readonly frsRows: Readonly<Record<string, number>>;
  /** Made-up Wikidata items in the results. */
  readonly wikidataItems: number;
  /** Misbehaviour by request: the source, the page's key (as in `requests`) and the attempt, from 1. */
  readonly misbehave?: (source: 'frs' | 'wikidata', page: string, attempt: number) => Misbehaviour | undefined;
  /** Delay before every answer (ms). */
  readonly delayMs?: number;
  /** A row made malformed: it keeps its place, its REGISTRY_ID becomes `12345`. */
  readonly malformedRow?: { code: string; index: number };
}

export interface ReplayServer {
  readonly frsBase: string;
  readonly wikidataEndpoint: string;
  /** Requests seen, by page key. */
  readonly requests: Map<string, number>;
  close(): Promise<void>;
}

/** The made-up Wikidata bindings: each item has two industries, the last has a bad country code. */
function wikidataBindings(items: number): Record<string, { type: string; value: string }>[] {
  const industries = [
    ['Q900000201', 'machining'],
    ['Q900000202', 'electroplating'],
    ['Q900000203', 'injection molding'],
    ['Q900000204', 'sheet metal'],
  ] as const;
  const bindings: Record<string, { type: string; value: string }>[] = [];
  for (let i = 0; i < items; i++) {
    for (const k of [0, 1]) {
      const [qid, label] = industries[(i + k) % industries.length]!;
      bindings.push({
        item: { type: 'uri', value: `http://www.wikidata.org/entity/Q${900000001 + i}` },
        itemLabel: { type: 'literal', value: `Replay Works ${i + 1}` },
        countryCode: { type: 'literal', value: i === items - 1 ? 'XX' : ['DE', 'FI', 'JP', 'US'][i % 4]! },
        industry: { type: 'uri', value: `http://www.wikidata.org/entity/${qid}` },
        industryLabel: { type: 'literal', value: label },
        website: { type: 'uri', value: `https://replay-works-${i + 1}.example/` },
      });
    }
  }
  return bindings;
}

/** Starts the stand-in on a free port. */
export async function startReplay(options: ReplayOptions): Promise<ReplayServer> {
  const lines = decodeFrsExport(await loadSharedData(SHARED_FRS_EXTRACT)).replace(/\r?\n$/, '').split(/\r?\n/);
  const header = lines[0]!.toLowerCase();
  const extract = lines.slice(1);
  const byCode = new Map<string, string[]>();
  let next = 0;
  for (const [code, count] of Object.entries(options.frsRows)) {
    byCode.set(
      code,
      extract.slice(next, next + count).map((row, index) => {
        let line = row.replace(/^"32591"/, `"${code}"`);
        if (options.malformedRow?.code === code && options.malformedRow.index === index) line = line.replace(/,\d{12},/, ',12345,');
        return line;
      }),
    );
    next += count;
  }
  const bindings = wikidataBindings(options.wikidataItems);
  const requests = new Map<string, number>();

  function answer(request: IncomingMessage): { source: 'frs' | 'wikidata'; page: string; type: string; body: string } | undefined {
    const url = new URL(request.url ?? '/', 'http://x');
    const frs = /^\/efservice\/FRS_NAICS\/NAICS_CODE\/(\d+)\/FRS_FACILITY_SITE\/rows\/(\d+):(\d+)\/CSV$/.exec(url.pathname);
    if (frs) {
      const rows = byCode.get(frs[1]!) ?? [];
      const page = rows.slice(Number(frs[2]), Number(frs[3]) + 1);
      return { source: 'frs', page: url.pathname, type: 'text/csv', body: [header, ...page].join('\n') + '\n' };
    }
    if (url.pathname === '/sparql' && url.searchParams.get('format') === 'json') {
      const query = url.searchParams.get('query') ?? '';
      const limit = Number(/LIMIT (\d+)/.exec(query)?.[1]);
      const offset = Number(/OFFSET (\d+)/.exec(query)?.[1]);
      const vars = ['item', 'itemLabel', 'countryCode', 'city', 'cityLabel', 'industry', 'industryLabel', 'website', 'modified'];
      // Pretty-printed, one member a line, as the Query Service prints it.
      const body = JSON.stringify({ head: { vars }, results: { bindings: bindings.slice(offset, offset + limit) } }, null, 1);
      return { source: 'wikidata', page: `/sparql offset ${offset}`, type: 'application/sparql-results+json', body };
    }
    return undefined;
  }

  function respond(request: IncomingMessage, response: ServerResponse): void {
    const found = answer(request);
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
    } else if (misbehaviour === 'drop') {
      const bytes = Buffer.from(found.body);
      response.writeHead(200, { 'content-type': found.type, 'content-length': bytes.length });
      response.write(bytes.subarray(0, bytes.length >> 1), () => response.socket?.destroy());
    } else {
      response.writeHead(200, { 'content-type': found.type }).end(found.body);
    }
  }

  const server = createServer((request, response) => {
    if (options.delayMs) setTimeout(() => respond(request, response), options.delayMs);
    else respond(request, response);
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
