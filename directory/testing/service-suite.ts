/**
 * The directory's HTTP test suite, run unchanged against the router in-process and behind each
 * runtime's server (node:http, Deno.serve): every endpoint, every status of the spec's table,
 * every filter's bad values, paging, the export's ETag, the 503 path, rate limiting, CORS,
 * submissions and the MCP tools through the SDK's own client.
 */

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { assert } from 'chai';
import type { Infer, Struct } from 'superstruct';
import { test } from '../../test/harness.ts';
import { readDataset } from '../dataset.ts';
import {
  ExportStruct,
  FactoryResultStruct,
  ProblemStruct,
  ReceiptStruct,
  SearchResultStruct,
  StatsStruct,
  SubmissionStatusStruct,
  UnavailableStruct,
} from '../http/schemas.ts';
import type { FactoryRecord } from '../record.ts';
import { FactoryRecordStruct } from '../record.ts';
import { type ClientInfo, createDirectory, type DirectoryOptions } from '../router.ts';
import { MemorySubmissionStore, type SubmissionStore } from '../submissions/store.ts';
import { brokenSource, fixtureText, ManualClock, textSource } from './fixtures.ts';

/** A running service under test. */
export interface Target {
  /** The service's origin, e.g. http://127.0.0.1:41234. */
  readonly url: string;
  /** Sends a request to the service (a socket's fetch, or the router itself). */
  readonly fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  close(): Promise<void>;
}

/** Starts the service with these options. */
export type StartTarget = (options: DirectoryOptions) => Promise<Target>;

/** A runtime's server for a fetch-style handler (node:http, Deno.serve). */
export type Serve = (
  handler: (request: Request, client: ClientInfo) => Promise<Response>,
  host: string,
  port: number,
) => Promise<{ url: string; close(): Promise<void> }>;

/** The service behind `serve` on a free port of 127.0.0.1, reached with the runtime's own fetch. */
export function socketTarget(serve: Serve): StartTarget {
  return async (options) => {
    const directory = createDirectory(options);
    const server = await serve(directory.fetch, '127.0.0.1', 0);
    return {
      url: server.url,
      fetch: (input, init) => fetch(input, init),
      async close() {
        await directory.close();
        await server.close();
      },
    };
  };
}

interface Started {
  target: Target;
  clock: ManualClock;
  store: SubmissionStore;
  get(path: string, init?: RequestInit): Promise<Response>;
}

function check<T>(struct: Struct<T, unknown>, value: unknown, what: string): T {
  const [error, checked] = struct.validate(value);
  if (error) assert.fail(`${what}: ${error.message} at ${error.path.join('.')}`);
  return checked as T;
}

/**
 * A body's text, decompressed where the client did not already (a runtime's fetch decodes
 * gzip and br; the router called in-process hands over the encoded bytes).
 */
async function decodedText(response: Response): Promise<string> {
  const bytes = new Uint8Array(await response.arrayBuffer());
  // Every body here is JSON or NDJSON of objects: plain text starts with {.
  if (bytes[0] === 0x7b) return new TextDecoder().decode(bytes);
  return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).text();
}

async function problem(response: Response, status: number, code?: string): Promise<Record<string, unknown>> {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  const body = check(ProblemStruct, JSON.parse(text), 'problem') as Record<string, unknown>;
  assert.equal(body.status, status);
  if (code) assert.equal(body.type, `/problems/${code}`);
  return body;
}

async function ok(response: Response): Promise<unknown> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return JSON.parse(text);
}

/** Registers the suite; `label` prefixes each test's name. */
/**
 * Registers the suite. `newStore` makes each test's submission store (default: in memory; on Deno
 * the suite also runs on Deno KV).
 */
export function serviceSuite(label: string, start: StartTarget, newStore: () => Promise<SubmissionStore> = async () => new MemorySubmissionStore()): void {
  async function run(fn: (s: Started) => Promise<void>, options: Partial<DirectoryOptions> = {}): Promise<void> {
    const clock = new ManualClock();
    const store = await newStore();
    const target = await start({ data: textSource(fixtureText()), submissions: store, clock, ...options });
    // Bodies a test did not read are cancelled at its end: Deno's test sanitizer counts them as leaks.
    const responses: Response[] = [];
    const tracked: Target = {
      ...target,
      fetch: async (input, init) => {
        const response = await target.fetch(input, init);
        responses.push(response);
        return response;
      },
    };
    try {
      await fn({ target: tracked, clock, store, get: (path, init) => tracked.fetch(new URL(path, target.url), init) });
    } finally {
      for (const response of responses) if (!response.bodyUsed) await response.body?.cancel();
      await target.close();
      await store.close();
    }
  }
  const t = (name: string, fn: (s: Started) => Promise<void>, options?: Partial<DirectoryOptions>): void => test(`${label}: ${name}`, () => run(fn, options));

  t('search answers total, next_offset and factories, with attribution', async ({ get }) => {
    const body = check(SearchResultStruct, await ok(await get('/api/v1/factories?q=acme')), 'search');
    assert.equal(body.total, 2);
    assert.isNull(body.next_offset);
    assert.deepEqual(
      body.factories.map((f) => f.id),
      ['epa-110000000001', 'epa-110000000002'],
    );
    assert.include(body.attribution.notice, 'not proof');
    assert.lengthOf(body.attribution.use_rules, 4);
    assert.equal(body.attribution.dataset_date, '2025-06-02');
    assert.deepEqual(
      body.attribution.sources.map((s) => s.key),
      ['epa-frs', 'wikidata', 'exhibitor:test-fair-2025'],
    );
  });

  t('free text tolerates case and accents and ranks the exact name first', async ({ get }) => {
    const accents = check(SearchResultStruct, await ok(await get('/api/v1/factories?q=SOCIETE%20mecanique')), 'search');
    assert.deepEqual(
      accents.factories.map((f) => f.id),
      ['wd-Q4321'],
    );
    const city = check(SearchResultStruct, await ok(await get('/api/v1/factories?q=munchen')), 'search');
    assert.deepEqual(
      city.factories.map((f) => f.id),
      ['wd-Q98765'],
    );
    const exact = check(SearchResultStruct, await ok(await get('/api/v1/factories?q=acme%20steel&limit=100')), 'search');
    assert.equal(exact.factories[0]!.name, 'Acme Steel');
  });

  t('filters combine with AND', async ({ get }) => {
    const both = check(SearchResultStruct, await ok(await get('/api/v1/factories?country=US&category=sheet-metal&limit=100')), 'search');
    assert.isAbove(both.total, 0);
    for (const f of both.factories) {
      assert.equal(f.country, 'US');
      assert.include(f.categories, 'sheet-metal');
    }
    const usOnly = check(SearchResultStruct, await ok(await get('/api/v1/factories?country=US&limit=100')), 'search');
    assert.isBelow(both.total, usOnly.total);
    const contact = check(SearchResultStruct, await ok(await get('/api/v1/factories?contact=observed-email&city=shenzhen')), 'search');
    assert.deepEqual(
      contact.factories.map((f) => f.id),
      ['cn-0123456789abcdef0123'],
    );
    const none = check(SearchResultStruct, await ok(await get('/api/v1/factories?country=FR&category=wire-harness')), 'search');
    assert.equal(none.total, 0);
    assert.deepEqual(none.factories, []);
  });

  t('region filters by ISO 3166-2 subdivision, declared in /openapi.json as an optional parameter added in 1.2.0', async ({ get }) => {
    const ohio = check(SearchResultStruct, await ok(await get('/api/v1/factories?region=US-OH&limit=100')), 'search');
    assert.deepEqual(
      ohio.factories.map((f) => f.name),
      ['Acme Steel', 'Acme Steel Fabricators'],
    );
    for (const f of ohio.factories) assert.deepEqual([f.country, f.region], ['US', 'OH']);
    // The country is part of the code: NLE is a region of MX, so CA-NLE holds nothing.
    const nuevoLeon = check(SearchResultStruct, await ok(await get('/api/v1/factories?region=MX-NLE&limit=100')), 'search');
    assert.isAbove(nuevoLeon.total, 0);
    assert.isTrue(nuevoLeon.factories.every((f) => f.country === 'MX' && f.region === 'NLE'));
    const mexico = check(SearchResultStruct, await ok(await get('/api/v1/factories?country=MX&limit=100')), 'search');
    assert.isBelow(nuevoLeon.total, mexico.total, 'records without a region are not in any');
    assert.equal(check(SearchResultStruct, await ok(await get('/api/v1/factories?region=CA-NLE')), 'search').total, 0);
    const both = check(SearchResultStruct, await ok(await get('/api/v1/factories?region=US-OH&q=fabricators&category=sheet-metal')), 'search');
    assert.deepEqual(
      both.factories.map((f) => f.id),
      ['epa-110000000002'],
    );
    const doc = (await ok(await get('/openapi.json'))) as {
      info: { version: string };
      paths: Record<string, { get?: { parameters?: { name: string; required?: boolean; description: string; schema: Record<string, unknown> }[] } }>;
    };
    const region = doc.paths['/api/v1/factories']!.get!.parameters!.find((p) => p.name === 'region')!;
    assert.notEqual(region.required, true);
    assert.match(region.description, /ISO 3166-2.*Added in 1\.2\.0/);
    assert.equal(region.schema.pattern, '^[A-Z]{2}-[A-Z0-9]{1,3}$');
  });

  t('every bad filter value is 400 problem details naming the parameter', async ({ get }) => {
    const cases: [string, string, string][] = [
      ['country=us', 'country', 'invalid-parameter'],
      ['country=USA', 'country', 'invalid-parameter'],
      ['country=', 'country', 'invalid-parameter'],
      ['category=welding', 'category', 'invalid-parameter'],
      ['contact=fax', 'contact', 'invalid-parameter'],
      ['limit=0', 'limit', 'invalid-parameter'],
      ['limit=101', 'limit', 'invalid-parameter'],
      ['limit=1.5', 'limit', 'invalid-parameter'],
      ['limit=ten', 'limit', 'invalid-parameter'],
      ['limit=', 'limit', 'invalid-parameter'],
      ['offset=-1', 'offset', 'invalid-parameter'],
      ['offset=1e3', 'offset', 'invalid-parameter'],
      ['offset=99999999999999999999', 'offset', 'invalid-parameter'],
      [`q=${'x'.repeat(201)}`, 'q', 'invalid-parameter'],
      ['city=', 'city', 'invalid-parameter'],
      ['cuntry=US', 'cuntry', 'unknown-parameter'],
      ['country=US&country=CA', 'country', 'repeated-parameter'],
      ['region=us-oh', 'region', 'invalid-parameter'],
      ['region=OH', 'region', 'invalid-parameter'],
      ['region=US-', 'region', 'invalid-parameter'],
      ['region=US-OHIO', 'region', 'invalid-parameter'],
      ['region=USA-OH', 'region', 'invalid-parameter'],
      ['region=', 'region', 'invalid-parameter'],
      ['region=US-OH&region=US-IN', 'region', 'repeated-parameter'],
    ];
    for (const [query, name, code] of cases) {
      const body = await problem(await get(`/api/v1/factories?${query}`), 400, code);
      const errors = body.errors as { name: string }[];
      assert.deepEqual(
        errors.map((e) => e.name),
        [name],
        query,
      );
      assert.include(body.detail as string, name, query);
    }
  });

  t('paging is stable: offset 0 then 20 then 40 never repeats or skips a record', async ({ get }) => {
    const all = check(SearchResultStruct, await ok(await get('/api/v1/factories?q=steel&limit=100')), 'search');
    assert.equal(all.total, 47);
    const seen: string[] = [];
    let offset: number | null = 0;
    while (offset !== null) {
      const page: Infer<typeof SearchResultStruct> = check(
        SearchResultStruct,
        await ok(await get(`/api/v1/factories?q=steel&limit=20&offset=${offset}`)),
        'page',
      );
      assert.equal(page.total, all.total);
      seen.push(...page.factories.map((f) => f.id));
      offset = page.next_offset;
    }
    assert.deepEqual(
      seen,
      all.factories.map((f) => f.id),
    );
    assert.equal(new Set(seen).size, seen.length);
    const past = check(SearchResultStruct, await ok(await get('/api/v1/factories?q=steel&offset=1000')), 'past the end');
    assert.deepEqual([past.total, past.next_offset, past.factories.length], [47, null, 0]);
  });

  t('one record by id in each format; 400 for a malformed id, 404 for an unknown one', async ({ get }) => {
    for (const id of ['epa-110000000001', 'wd-Q4321', 'cn-0123456789abcdef0123']) {
      const record = check(FactoryRecordStruct, await ok(await get(`/api/v1/factories/${id}`)), id) as FactoryRecord;
      assert.equal(record.id, id);
      assert.isAbove(record.sources.length, 0);
    }
    for (const id of ['epa-11000000001', 'wd-Q0', 'wd-Q012', 'cn-0123456789ABCDEF0123', 'abc', 'epa-11000000000x']) {
      const body = await problem(await get(`/api/v1/factories/${id}`), 400, 'invalid-parameter');
      assert.deepEqual(
        (body.errors as { name: string }[]).map((e) => e.name),
        ['id'],
      );
    }
    for (const id of ['epa-999999999999', 'wd-Q1', 'cn-ffffffffffffffffffff']) {
      await problem(await get(`/api/v1/factories/${id}`), 404, 'not-found');
    }
    await problem(await get('/api/v1/factories/wd-Q4321?verbose=1'), 400, 'unknown-parameter');
  });

  t('stats count by country, category, contact kind and source, with the dataset date', async ({ get }) => {
    const stats = check(StatsStruct, await ok(await get('/api/v1/stats')), 'stats');
    assert.equal(stats.total, 51);
    assert.equal(stats.dataset_date, '2025-06-02');
    assert.equal(stats.by_country.CN, 2);
    assert.equal(stats.by_category['wire-harness'], 1);
    assert.equal(stats.by_contact['observed-email'], 1);
    assert.equal(stats.by_source.wikidata, 2);
    await problem(await get('/api/v1/stats?x=1'), 400, 'unknown-parameter');
  });

  t('the export streams every record with attribution, an ETag and 304 for a current copy', async ({ get }) => {
    const response = await get('/directory.json');
    assert.equal(response.status, 200);
    const etag = response.headers.get('etag');
    // A runtime's fetch may ask for an encoding by itself (the tag then names it).
    assert.match(etag ?? '', /^"[0-9a-f]{32}-e1(-gzip)?"$/);
    assert.match(response.headers.get('cache-control') ?? '', /max-age=\d+/);
    const text = await response.text();
    const body = check(ExportStruct, JSON.parse(text), 'export');
    assert.equal(body.total, 51);
    assert.lengthOf(body.records, 51);
    assert.deepEqual(
      body.records.map((r) => r.id),
      [...body.records.map((r) => r.id)].sort(),
    );
    assert.lengthOf(body.attribution.use_rules, 4);
    // The export is itself a dataset file.
    const again = await readDataset(new Blob([text]).stream());
    assert.deepEqual(again.records, body.records);

    const cached = await get('/directory.json', { headers: { 'if-none-match': etag! } });
    assert.equal(cached.status, 304);
    assert.equal(cached.headers.get('etag'), etag);
    assert.equal(await cached.text(), '');
    assert.equal((await get('/directory.json', { headers: { 'if-none-match': `"other", W/${etag}` } })).status, 304);
    const stale = await get('/directory.json', { headers: { 'if-none-match': '"0000"' } });
    assert.equal(stale.status, 200);
    await stale.body?.cancel();

    const head = await get('/directory.json', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('etag'), etag);
    assert.equal(await head.text(), '');
  });

  t('stats and /openapi.json carry a strong ETag; a current copy gets 304 without a body', async ({ get }) => {
    for (const path of ['/api/v1/stats', '/openapi.json']) {
      const response = await get(path);
      assert.equal(response.status, 200, path);
      const etag = response.headers.get('etag');
      assert.match(etag ?? '', /^"[0-9a-f]{32}(-gzip)?"$/, path);
      const text = await response.text();
      const again = await get(path);
      assert.equal(again.headers.get('etag'), etag, `${path}: the same body, the same tag`);
      assert.equal(await again.text(), text);
      const cached = await get(path, { headers: { 'if-none-match': `W/${etag}` } });
      assert.equal(cached.status, 304, path);
      assert.equal(cached.headers.get('etag'), etag);
      assert.equal(cached.headers.get('access-control-allow-origin'), '*');
      assert.equal(await cached.text(), '');
      const stale = await get(path, { headers: { 'if-none-match': '"0000"' } });
      assert.equal(stale.status, 200);
      assert.equal(await stale.text(), text);
    }
  });

  t('/openapi.json is OpenAPI 3.1.0, version 1.2.0, with every operation and the five statuses', async ({ get }) => {
    const doc = (await ok(await get('/openapi.json'))) as {
      openapi: string;
      info: { version: string };
      paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>;
    };
    assert.equal(doc.openapi, '3.1.0');
    // 1.2.0: the optional region parameter, a backward-compatible addition to 1.1.0.
    assert.equal(doc.info.version, '1.2.0');
    const ops = Object.values(doc.paths).flatMap((item) => Object.values(item));
    const byId = new Map(ops.map((op) => [op.operationId, op]));
    for (const id of ['searchFactories', 'getFactory', 'registryStats', 'exportDirectory', 'createSubmission', 'getSubmission']) {
      assert.isTrue(byId.has(id), id);
    }
    for (const id of ['searchFactories', 'getFactory', 'registryStats', 'exportDirectory']) {
      for (const status of ['200', '400', '404', '413', '429', '503']) assert.property(byId.get(id)!.responses, status, `${id} ${status}`);
    }
  });

  t('every parameter /openapi.json states is enforced, and no other is taken', async ({ get }) => {
    const doc = (await ok(await get('/openapi.json'))) as {
      paths: Record<string, { get?: { parameters?: { name: string; in: string; schema: Record<string, unknown> }[] } }>;
    };
    const params = doc.paths['/api/v1/factories']!.get!.parameters!;
    assert.sameMembers(
      params.map((p) => p.name),
      ['q', 'country', 'region', 'city', 'category', 'contact', 'limit', 'offset'],
    );
    for (const { name, schema } of params) {
      for (const bad of badValues(schema)) {
        const response = await get(`/api/v1/factories?${new URLSearchParams({ [name]: bad })}`);
        await problem(response, 400, 'invalid-parameter');
      }
      for (const good of goodValues(schema)) {
        const response = await get(`/api/v1/factories?${new URLSearchParams({ [name]: good })}`);
        assert.equal(response.status, 200, `${name}=${good}`);
        await response.body?.cancel();
      }
    }
    const id = doc.paths['/api/v1/factories/{id}']!.get!.parameters![0]!;
    assert.equal(id.in, 'path');
    assert.equal(new RegExp(id.schema.pattern as string).source, '^(cn-[0-9a-f]{20}|wd-Q[1-9][0-9]*|epa-[0-9]{12})$');
  });

  t('unknown paths are 404 and wrong methods 405 with Allow', async ({ get }) => {
    await problem(await get('/api/v2/factories'), 404, 'not-found');
    const post = await get('/api/v1/factories', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    assert.equal(post.headers.get('allow'), 'GET, HEAD, OPTIONS');
    await problem(post, 405, 'method-not-allowed');
    const mcpGet = await get('/mcp');
    assert.equal(mcpGet.headers.get('allow'), 'POST, OPTIONS');
    await problem(mcpGet, 405);
    await problem(await get('/api/v1/stats', { method: 'DELETE' }), 405);
    const page = await get('/problems/invalid-parameter');
    assert.equal(page.status, 200);
    assert.include(await page.text(), 'Invalid parameter');
    await problem(await get('/problems/no-such-problem'), 404);
  });

  const source = brokenSource(fixtureText());
  t(
    '503 with factories: null while the data source fails, recovering once it is repaired',
    async ({ clock, get }) => {
      for (const path of ['/api/v1/factories?q=steel', '/api/v1/factories/wd-Q4321', '/api/v1/stats', '/directory.json', '/directory.ndjson']) {
        const response = await get(path);
        const text = await response.text();
        assert.equal(response.status, 503, `${path}: ${text}`);
        const body = check(UnavailableStruct, JSON.parse(text), path);
        assert.isNull(body.factories);
        assert.match(response.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
      }
      // Bad parameters are still 400: the request is wrong whether or not the data is there.
      await problem(await get('/api/v1/factories?country=us'), 400);
      const attempts = source.attempts;
      source.repair();
      // Within the back-off nothing is retried.
      assert.equal((await get('/api/v1/stats')).status, 503);
      assert.equal(source.attempts, attempts);
      clock.advance(20_000);
      const stats = check(StatsStruct, await ok(await get('/api/v1/stats')), 'stats');
      assert.equal(stats.total, 51);
    },
    { data: source },
  );

  t('413 for bodies over the bound, declared or streamed, and for an overlong query string', async ({ get }) => {
    const big = `kind=join&company=Acme&email=a%40b.example&message=${'x'.repeat(17 * 1024)}`;
    const declared = await get('/api/v1/submissions', {
      method: 'POST',
      body: big,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    await problem(declared, 413, 'too-large');
    const streamed = await get('/api/v1/submissions', {
      method: 'POST',
      body: new Blob([big]).stream(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      duplex: 'half',
    } as RequestInit);
    await problem(streamed, 413, 'too-large');
    const mcp = await get('/mcp', {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(65 * 1024) } }),
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    });
    await problem(mcp, 413, 'too-large');
    await problem(await get(`/api/v1/factories?q=${'x'.repeat(2100)}`), 413, 'too-large');
  });

  t(
    '429 with Retry-After once a client has used its burst',
    async ({ clock, get }) => {
      for (let i = 0; i < 3; i++) assert.equal((await get('/api/v1/stats')).status, 200);
      const limited = await get('/api/v1/stats');
      const body = await problem(limited, 429, 'rate-limited');
      assert.equal(limited.headers.get('retry-after'), '2');
      assert.include(body.detail as string, 'retry');
      // Beside Retry-After, the IETF draft's fields: the bucket of 3 refilling in 6 s, none left, one in 2 s.
      assert.equal(limited.headers.get('ratelimit-policy'), '"burst";q=3;w=6');
      assert.equal(limited.headers.get('ratelimit'), '"burst";r=0;t=2');
      clock.advance(2000);
      const again = await get('/api/v1/stats');
      assert.equal(again.status, 200);
      assert.equal(again.headers.get('ratelimit-policy'), '"burst";q=3;w=6');
      assert.equal(again.headers.get('ratelimit'), '"burst";r=0;t=6');
      clock.advance(6000);
      assert.equal((await get('/openapi.json')).headers.get('ratelimit'), '"burst";r=2;t=2');
    },
    { limits: { rateLimit: { perSecond: 0.5, burst: 3 } } },
  );

  t(
    'X-Forwarded-For changes nothing unless the proxy is trusted',
    async ({ get }) => {
      const spoofed = async (i: number): Promise<number> => (await get('/api/v1/stats', { headers: { 'x-forwarded-for': `198.51.100.${i}` } })).status;
      const statuses = [];
      for (let i = 1; i <= 4; i++) statuses.push(await spoofed(i));
      assert.deepEqual(statuses, [200, 200, 200, 429], 'a header anyone can send opens no new bucket');
    },
    { limits: { rateLimit: { perSecond: 0.5, burst: 3 } } },
  );

  t(
    'behind a trusted proxy, the last X-Forwarded-For address is the client',
    async ({ get }) => {
      const from = async (header: string): Promise<number> => (await get('/api/v1/stats', { headers: { 'x-forwarded-for': header } })).status;
      for (let i = 0; i < 3; i++) assert.equal(await from('203.0.113.7'), 200);
      assert.equal(await from('203.0.113.7'), 429);
      assert.equal(await from('203.0.113.7, 203.0.113.8'), 200, 'the address the proxy appended counts, not what the client wrote before it');
      assert.equal(await from('203.0.113.8, 203.0.113.7'), 429);
      assert.equal(await from('203.0.113.8, 203.0.113.7:51234'), 429, 'a port the proxy added is not part of the client');
      for (let i = 0; i < 3; i++) assert.equal(await from(`[2001:db8::1]:${50000 + i}`), 200);
      assert.equal(await from('2001:db8::2'), 429, 'a bracketed IPv6 address with a port, keyed by its /64');
    },
    { trustProxy: true, limits: { rateLimit: { perSecond: 0.5, burst: 3 } } },
  );

  t('JSON and the exports are compressed as Accept-Encoding asks, each encoding with its own ETag', async ({ get }) => {
    const plain = await get('/directory.json', { headers: { 'accept-encoding': 'identity' } });
    assert.isNull(plain.headers.get('content-encoding'));
    assert.include(plain.headers.get('vary') ?? '', 'Accept-Encoding');
    const plainTag = plain.headers.get('etag')!;
    assert.match(plainTag, /^"[0-9a-f]{32}-e1"$/);
    const plainText = await plain.text();
    // Never br: the runtimes' Brotli stream runs at its slowest quality (compression.ts).
    const cases: [string, string | null][] = [
      ['gzip', 'gzip'],
      ['gzip, deflate, br', 'gzip'],
      ['br;q=1, gzip;q=0.5', 'gzip'],
      ['br', null],
    ];
    for (const [accept, encoding] of cases) {
      for (const path of ['/directory.json', '/directory.ndjson', '/api/v1/stats', '/api/v1/factories?q=acme', '/openapi.json']) {
        const response = await get(path, { headers: { 'accept-encoding': accept } });
        assert.equal(response.status, 200, `${path} ${accept}`);
        assert.equal(response.headers.get('content-encoding'), encoding, `${path} ${accept}`);
        assert.include(response.headers.get('vary') ?? '', 'Accept-Encoding');
        const text = await decodedText(response);
        assert.doesNotThrow(
          () =>
            path.endsWith('.ndjson')
              ? text
                  .trim()
                  .split('\n')
                  .map((line) => JSON.parse(line))
              : JSON.parse(text),
          path,
        );
        if (path === '/directory.json' && encoding === null) assert.equal(response.headers.get('etag'), plainTag);
        if (path === '/directory.json' && encoding !== null) {
          assert.equal(text, plainText, 'the same bytes once decoded');
          const etag = response.headers.get('etag')!;
          assert.equal(etag, plainTag.replace(/"$/, `-${encoding}"`));
          const cached = await get(path, { headers: { 'accept-encoding': accept, 'if-none-match': etag } });
          assert.equal(cached.status, 304);
          assert.equal(cached.headers.get('etag'), etag);
          const otherEncoding = await get(path, { headers: { 'accept-encoding': 'identity', 'if-none-match': etag } });
          assert.equal(otherEncoding.status, 200, 'a tag of one encoding is no validator of another');
          await otherEncoding.body?.cancel();
          const plainTagged = await get(path, { headers: { 'accept-encoding': accept, 'if-none-match': plainTag } });
          assert.equal(plainTagged.status, 200, 'nor is the plain tag a validator of an encoded answer');
          assert.equal(plainTagged.headers.get('etag'), etag);
          await plainTagged.body?.cancel();
        }
      }
    }
    const head = await get('/directory.json', { method: 'HEAD', headers: { 'accept-encoding': 'gzip' } });
    assert.equal(head.headers.get('content-encoding'), 'gzip');
    assert.equal(head.headers.get('etag'), plainTag.replace(/"$/, '-gzip"'));
  });

  t('the NDJSON export streams one record a line, the same records as the JSON export, with its own ETag', async ({ get }) => {
    const response = await get('/directory.ndjson', { headers: { 'accept-encoding': 'identity' } });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/x-ndjson; charset=utf-8');
    const etag = response.headers.get('etag')!;
    assert.match(etag, /^"[0-9a-f]{32}-n1"$/);
    const text = await response.text();
    assert.isTrue(text.endsWith('\n'));
    const lines = text.slice(0, -1).split('\n');
    const exported = check(ExportStruct, await (await get('/directory.json', { headers: { 'accept-encoding': 'identity' } })).json(), 'export');
    assert.lengthOf(lines, exported.total);
    assert.deepEqual(
      lines.map((line) => check(FactoryRecordStruct, JSON.parse(line), 'record')),
      exported.records,
    );
    assert.equal((await get('/directory.ndjson', { headers: { 'accept-encoding': 'identity', 'if-none-match': etag } })).status, 304);
  });

  t('the exports take no parameters and only reads', async ({ get }) => {
    for (const path of ['/directory.json', '/directory.ndjson']) {
      const body = await problem(await get(`${path}?since=2025-01-01`), 400, 'unknown-parameter');
      assert.include(body.detail as string, 'since', path);
      const post = await get(path, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      assert.equal(post.headers.get('allow'), 'GET, HEAD, OPTIONS', path);
      await problem(post, 405, 'method-not-allowed');
    }
  });

  t('Accept-Encoding: gzip refused or absent gets the plain body, * and any spelling of gzip get gzip', async ({ get }) => {
    const cases: [string, string | null][] = [
      ['', null],
      ['gzip;q=0', null],
      ['gzip ; q=0, br', null],
      ['*;q=0', null],
      ['identity', null],
      ['*', 'gzip'],
      ['GZip', 'gzip'],
      ['gzip;q=0.001', 'gzip'],
      ['gzip;q=0, *', null],
      ['br;q=0.5, *;q=0.1', 'gzip'],
    ];
    for (const [accept, encoding] of cases) {
      const response = await get('/api/v1/stats', { headers: { 'accept-encoding': accept } });
      assert.equal(response.status, 200, accept);
      assert.equal(response.headers.get('content-encoding'), encoding, JSON.stringify(accept));
      assert.equal(check(StatsStruct, JSON.parse(await decodedText(response)), 'stats').total, 51, accept);
    }
    // A gzip tag with the plain answer chosen, and * with any: a tag is checked against the answer sent.
    const gzipTag = (await get('/api/v1/stats', { headers: { 'accept-encoding': 'gzip' } })).headers.get('etag')!;
    assert.equal((await get('/api/v1/stats', { headers: { 'accept-encoding': 'gzip;q=0', 'if-none-match': gzipTag } })).status, 200);
    assert.equal((await get('/directory.ndjson', { headers: { 'accept-encoding': 'gzip', 'if-none-match': '*' } })).status, 304);
  });

  t('CORS is open for GET reads and their preflight, not for submissions or MCP', async ({ get }) => {
    const read = await get('/api/v1/factories?q=acme', { headers: { origin: 'https://elsewhere.example' } });
    assert.equal(read.headers.get('access-control-allow-origin'), '*');
    assert.include(read.headers.get('access-control-expose-headers') ?? '', 'ETag');
    await read.body?.cancel();
    const error = await get('/api/v1/factories?country=us', { headers: { origin: 'https://elsewhere.example' } });
    assert.equal(error.headers.get('access-control-allow-origin'), '*');
    await error.body?.cancel();
    const preflight = await get('/directory.json', {
      method: 'OPTIONS',
      headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'if-none-match' },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
    assert.include(preflight.headers.get('access-control-allow-methods') ?? '', 'GET');
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /if-none-match/i);
    for (const path of ['/api/v1/submissions', '/mcp']) {
      const options = await get(path, { method: 'OPTIONS', headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'POST' } });
      assert.equal(options.status, 204);
      assert.isNull(options.headers.get('access-control-allow-origin'), path);
    }
    const post = await postJson(get, { kind: 'join', company: 'Cors Test Ltd', email: 'x@cors.example' });
    assert.equal(post.status, 201);
    assert.isNull(post.headers.get('access-control-allow-origin'));
  });

  t('a submission gets a receipt; its status needs the token; failures reveal nothing', async ({ get, store }) => {
    const response = await postJson(get, {
      kind: 'correction',
      record_id: 'wd-Q4321',
      company: 'Société Mécanique',
      email: 'contact@smb.example',
      message: 'New address',
    });
    const receipt = check(ReceiptStruct, JSON.parse(await response.text()), 'receipt');
    assert.equal(response.status, 201);
    assert.equal(response.headers.get('location'), receipt.status_url);
    assert.equal(new URL(receipt.status_url).pathname, `/api/v1/submissions/${receipt.id}`);
    const path = `/api/v1/submissions/${receipt.id}`;

    const byHeader = check(SubmissionStatusStruct, await ok(await get(path, { headers: { authorization: `Bearer ${receipt.token}` } })), 'status');
    assert.deepEqual([byHeader.kind, byHeader.record_id, byHeader.status], ['correction', 'wd-Q4321', 'received']);
    assert.notProperty(byHeader, 'email');
    const byQuery = check(SubmissionStatusStruct, await ok(await get(`${path}?token=${encodeURIComponent(receipt.token)}`)), 'status');
    assert.equal(byQuery.id, receipt.id);
    // The query is checked even when the token comes in the header.
    const bearer = { headers: { authorization: `Bearer ${receipt.token}` } };
    const junk = await problem(await get(`${path}?junk=1`, bearer), 400, 'unknown-parameter');
    assert.deepEqual(
      (junk.errors as { name: string }[]).map((e) => e.name),
      ['junk'],
    );
    await problem(await get(`${path}?token=${encodeURIComponent(receipt.token)}&junk=1`), 400, 'unknown-parameter');

    const missing = await get(path);
    assert.match(missing.headers.get('www-authenticate') ?? '', /^Bearer/);
    await problem(missing, 401, 'unauthorized');
    const wrong = await problem(await get(path, { headers: { authorization: `Bearer ${receipt.token.slice(1)}x` } }), 401);
    const unknown = await problem(await get(`/api/v1/submissions/${'0'.repeat(32)}`, { headers: { authorization: `Bearer ${receipt.token}` } }), 401);
    assert.equal(wrong.detail, unknown.detail);
    await problem(await get('/api/v1/submissions/not-an-id', { headers: { authorization: `Bearer ${receipt.token}` } }), 404);

    const stored = await store.get(receipt.id);
    assert.equal(stored?.email, 'contact@smb.example');
    assert.match(stored!.token_sha256, /^[0-9a-f]{64}$/);
    assert.notInclude(JSON.stringify(stored), receipt.token);
  });

  t('submissions are validated field by field', async ({ get }) => {
    const cases: [Record<string, unknown>, string][] = [
      [{ company: 'A', email: 'a@b.example' }, 'kind'],
      [{ kind: 'merge', company: 'A', email: 'a@b.example' }, 'kind'],
      [{ kind: 'join', company: 'A', email: 'not-an-email' }, 'email'],
      [{ kind: 'join', company: '', email: 'a@b.example' }, 'company'],
      [{ kind: 'join', company: 'A', email: 'a@b.example', record_id: 'wd-Q4321' }, 'record_id'],
      [{ kind: 'removal', company: 'A', email: 'a@b.example' }, 'record_id'],
      [{ kind: 'removal', company: 'A', email: 'a@b.example', record_id: 'wd-Q0' }, 'record_id'],
      [{ kind: 'removal', company: 'A', email: 'a@b.example', record_id: 'wd-Q5' }, 'record_id'],
      [{ kind: 'correction', company: 'A', email: 'a@b.example', record_id: 'wd-Q4321' }, 'message'],
      [{ kind: 'join', company: 'A', email: 'a@b.example', phone: '1' }, 'phone'],
      [{ kind: 'join', company: 7, email: 'a@b.example' }, 'company'],
      [{ kind: 'join', company: ' \t\n ', email: 'a@b.example' }, 'company'],
      [{ kind: 'join', company: 'A', email: '   ' }, 'email'],
      [{ kind: 'correction', company: 'A', email: 'a@b.example', record_id: 'wd-Q4321', message: '  ' }, 'message'],
      [{ kind: 'join', company: `  ${'A'.repeat(201)}  `, email: 'a@b.example' }, 'company'],
    ];
    for (const [fields, name] of cases) {
      const body = await problem(await postJson(get, fields), 400, 'invalid-body');
      assert.include(
        (body.errors as { name: string }[]).map((e) => e.name),
        name,
        JSON.stringify(fields),
      );
    }
    const blank = await get('/api/v1/submissions', {
      method: 'POST',
      body: 'kind=join&company=+++&email=a%40b.example',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.deepEqual(
      ((await problem(blank, 400, 'invalid-body')).errors as { name: string }[]).map((e) => e.name),
      ['company'],
    );
    await problem(await get('/api/v1/submissions', { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } }), 400, 'invalid-body');
    await problem(await get('/api/v1/submissions', { method: 'POST', body: 'kind=join', headers: { 'content-type': 'text/plain' } }), 415);
    const repeated = await get('/api/v1/submissions', {
      method: 'POST',
      body: 'kind=join&kind=removal&company=A&email=a%40b.example',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    await problem(repeated, 400, 'invalid-body');
    // A JSON member given twice, as a form field given twice: JSON.parse would keep the last.
    for (const [body, name] of [
      ['{"kind":"join","company":"A","email":"a@b.example","company":"B"}', 'company'],
      ['{"kind":"removal","kind":"join","company":"A","email":"a@b.example"}', 'kind'],
      ['{"kind":"join","company":"A","email":"a@b.example","message":{"x":1,"x":2}}', 'message.x'],
    ]) {
      const twice = await get('/api/v1/submissions', { method: 'POST', body, headers: { 'content-type': 'application/json' } });
      assert.deepEqual((await problem(twice, 400, 'invalid-body')).errors, [{ name, detail: 'given more than once' }], body);
    }
  });

  t('text fields are stored trimmed', async ({ get, store }) => {
    const response = await postJson(get, { kind: 'join', company: '  Padded Works \n', email: ' hi@padded.example ' });
    const receipt = check(ReceiptStruct, JSON.parse(await response.text()), 'receipt');
    const stored = await store.get(receipt.id);
    assert.deepEqual([stored?.company, stored?.email], ['Padded Works', 'hi@padded.example']);
  });

  t('413 for a declared oversized body comes before the media type check', async ({ get }) => {
    const body = 'x'.repeat(100_000);
    for (const type of ['text/plain', 'application/json']) {
      const response = await get('/api/v1/submissions', { method: 'POST', body, headers: { 'content-type': type, 'content-length': String(body.length) } });
      await problem(response, 413, 'too-large');
    }
  });

  t('__proto__ is refused like any unknown parameter or field', async ({ get }) => {
    for (const path of ['/api/v1/factories?__proto__=x', '/api/v1/factories?q=steel&__proto__=x', '/api/v1/stats?__proto__=x', '/submit?__proto__=x']) {
      const body = await problem(await get(path), 400, 'unknown-parameter');
      assert.deepEqual(
        (body.errors as { name: string }[]).map((e) => e.name),
        ['__proto__'],
        path,
      );
    }
    const bodies: [string, string][] = [
      ['application/json', '{"kind":"join","company":"Proto Ltd","email":"a@proto.example","__proto__":{"message":"x"}}'],
      ['application/x-www-form-urlencoded', 'kind=join&company=Proto+Ltd&email=a%40proto.example&__proto__=zz'],
    ];
    for (const [type, text] of bodies) {
      const body = await problem(await get('/api/v1/submissions', { method: 'POST', body: text, headers: { 'content-type': type } }), 400, 'invalid-body');
      assert.deepEqual(
        (body.errors as { name: string }[]).map((e) => e.name),
        ['__proto__'],
        type,
      );
    }
  });

  t('MCP refuses JSON-RPC batches: one request, one message', async ({ get }) => {
    const call = (id: number): Record<string, unknown> => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'registry_stats', arguments: {} } });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    for (const batch of [[call(1), call(2)], [call(1)], []]) {
      const response = await get('/mcp', { method: 'POST', body: JSON.stringify(batch), headers });
      const text = await response.text();
      assert.equal(response.status, 400, text);
      const body = JSON.parse(text) as { jsonrpc: string; id: unknown; error: { code: number; message: string } };
      assert.deepEqual([body.jsonrpc, body.id, body.error.code], ['2.0', null, -32600]);
      assert.include(body.error.message, 'batching is not supported');
    }
    // Not JSON at all is still the transport's parse error.
    const garbled = await get('/mcp', { method: 'POST', body: '[{', headers });
    assert.equal(garbled.status, 400);
    assert.equal(((await garbled.json()) as { error: { code: number } }).error.code, -32700);
  });

  t('MCP refuses a message that names a member twice: 400 and the parse error, nothing run', async ({ get }) => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    for (const body of [
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list","params":{}}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"registry_stats","arguments":{"q":"a","q":"b"}}}',
    ]) {
      const response = await get('/mcp', { method: 'POST', body, headers });
      const text = await response.text();
      assert.equal(response.status, 400, text);
      const answer = JSON.parse(text) as { jsonrpc: string; id: unknown; error: { code: number; message: string } };
      assert.deepEqual([answer.jsonrpc, answer.id, answer.error.code], ['2.0', null, -32700]);
      assert.include(answer.error.message, 'more than once');
    }
  });

  t('GET / for a browser is the search page: a GET form, results with sources and dates, paging links, a CSP', async ({ get }) => {
    const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
    const home = await get('/', { headers: html });
    assert.equal(home.status, 200);
    assert.match(home.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(home.headers.get('content-security-policy') ?? '', /default-src 'none'.*form-action 'self'/);
    assert.equal(home.headers.get('vary'), 'Accept');
    const page = await home.text();
    assert.include(page, '<form class="search panel" method="get" action="/" role="search">');
    for (const field of ['q', 'country', 'region', 'city', 'category', 'contact', 'limit']) assert.include(page, `name="${field}"`);
    assert.notInclude(page, '<script');
    assert.include(page, '51 records from public sources, as of 2025-06-02.');

    // What a form sends: every field, the empty ones too, and codes as typed.
    const first = await (await get('/?q=steel&country=&region=&city=&category=&contact=&limit=20', { headers: html })).text();
    assert.include(first, '47 records; showing 1–20');
    assert.equal(first.match(/<li class="record"/g)?.length, 20);
    assert.include(first, '<a href="/?q=steel&amp;limit=20&amp;offset=20" rel="next">');
    assert.include(first, 'retrieved <time datetime="2025-06-01">2025-06-01</time>');
    assert.include(first, 'first seen <time datetime="2020-01-01">2020-01-01</time>, updated <time datetime="2025-05-01">2025-05-01</time>');
    assert.include(first, 'Records list manufacturer entities found in public sources.');
    const last = await (await get('/?q=steel&limit=20&offset=40', { headers: html })).text();
    assert.include(last, '47 records; showing 41–47');
    assert.include(last, '<a href="/?q=steel&amp;limit=20&amp;offset=20" rel="prev">');
    assert.notInclude(last, 'rel="next"');
    const ohio = await (await get('/?region=us-oh', { headers: html })).text();
    assert.include(ohio, '2 records; showing 1–2');
    assert.include(ohio, 'Toledo · US-OH · US');

    // What a person typed comes back escaped; a refused filter is the form again with the reason.
    const typed = await get(`/?q=${encodeURIComponent('<script>alert("x")</script>')}`, { headers: html });
    const typedPage = await typed.text();
    assert.equal(typed.status, 200);
    assert.include(typedPage, 'value="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"');
    assert.notInclude(typedPage, '<script');
    const refused = await get('/?country=USA', { headers: html });
    assert.equal(refused.status, 400);
    assert.include(await refused.text(), 'Country: give its two letters, like US or DE (not &quot;USA&quot;).');
    const unknown = await get('/?colour=red', { headers: html });
    assert.equal(unknown.status, 400);
    assert.include(await unknown.text(), 'colour');

    // Programs get what they always got at /: a 404 problem pointing at the API.
    const api = await problem(await get('/'), 404, 'not-found');
    assert.include(api.detail as string, '/api/v1');
    await problem(await get('/', { headers: { accept: 'application/json' } }), 404, 'not-found');
  });

  t(
    'the search page while the dataset is unavailable is a 503 page, never an empty result',
    async ({ get }) => {
      const response = await get('/?q=steel', { headers: { accept: 'text/html' } });
      assert.equal(response.status, 503);
      assert.ok(Number(response.headers.get('retry-after')) >= 1);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      const page = await response.text();
      assert.include(page, 'this is not an empty directory');
      assert.notInclude(page, 'No records match');
    },
    { data: brokenSource(fixtureText()) },
  );

  t('the form works without JavaScript: HTML page, form post, HTML receipt and status', async ({ get }) => {
    const form = await get('/submit?kind=removal&record_id=wd-Q4321');
    assert.equal(form.status, 200);
    assert.match(form.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(form.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    const html = await form.text();
    assert.include(html, '<form method="post" action="/api/v1/submissions">');
    for (const field of ['kind', 'record_id', 'company', 'email', 'message']) assert.include(html, `name="${field}"`);
    assert.include(html, '<option value="removal" selected>');
    assert.include(html, 'value="wd-Q4321"');
    await problem(await get('/submit?kind=merge'), 400);

    const posted = await get('/api/v1/submissions', {
      method: 'POST',
      body: 'kind=join&record_id=&company=%3Cb%3EBold%3C%2Fb%3E+Works&email=hi%40bold.example&message=',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html,application/xhtml+xml' },
    });
    assert.equal(posted.status, 201);
    const receipt = await posted.text();
    const token = /Token: <code>([A-Za-z0-9_-]{43})<\/code>/.exec(receipt)?.[1];
    assert.isString(token);
    const link = /href="([^"]*\/api\/v1\/submissions\/[^"]+)"/.exec(receipt)![1]!.replace(/&amp;/g, '&');
    const status = await get(link, { headers: { accept: 'text/html' } });
    assert.equal(status.status, 200);
    const statusHtml = await status.text();
    assert.include(statusHtml, '&lt;b&gt;Bold&lt;/b&gt; Works');
    assert.notInclude(statusHtml, '<b>Bold</b>');

    const refused = await get('/api/v1/submissions', {
      method: 'POST',
      body: 'kind=join&company=%3Cscript%3E&email=nope',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    });
    assert.equal(refused.status, 400);
    const again = await refused.text();
    assert.include(again, 'email must match');
    assert.include(again, 'value="&lt;script&gt;"');
  });

  t('submissions never appear in search, export or stats', async ({ get }) => {
    const before = check(StatsStruct, await ok(await get('/api/v1/stats')), 'stats');
    for (const kind of ['join', 'removal'] as const) {
      const fields = { kind, company: 'Zyxwvut Hidden Foundry', email: 'hidden@zyx.example', ...(kind === 'removal' ? { record_id: 'wd-Q4321' } : {}) };
      assert.equal((await postJson(get, fields)).status, 201);
    }
    const search = check(SearchResultStruct, await ok(await get('/api/v1/factories?q=zyxwvut')), 'search');
    assert.equal(search.total, 0);
    const removed = check(FactoryRecordStruct, await ok(await get('/api/v1/factories/wd-Q4321')), 'record');
    assert.equal(removed.id, 'wd-Q4321');
    const exported = await (await get('/directory.json')).text();
    assert.notInclude(exported, 'Zyxwvut');
    assert.notInclude(exported, 'hidden@zyx.example');
    const after = check(StatsStruct, await ok(await get('/api/v1/stats')), 'stats');
    assert.deepEqual(after, before);
  });

  t('MCP tools through the SDK client: schemas, read-only, the same answers as HTTP, attribution', async ({ target, get }) => {
    const client = new Client({ name: 'directory-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', target.url), { fetch: target.fetch }));
    try {
      const { tools } = await client.listTools();
      assert.sameMembers(
        tools.map((tool) => tool.name),
        ['search_factories', 'get_factory', 'registry_stats'],
      );
      for (const tool of tools) {
        assert.isTrue(tool.annotations?.readOnlyHint, tool.name);
        assert.equal(tool.inputSchema.type, 'object');
        assert.isObject(tool.outputSchema, tool.name);
      }
      const search = tools.find((tool) => tool.name === 'search_factories')!;
      assert.sameMembers(Object.keys(search.inputSchema.properties ?? {}), ['q', 'country', 'region', 'city', 'category', 'contact', 'limit', 'offset']);

      const found = await client.callTool({ name: 'search_factories', arguments: { q: 'steel', country: 'US', limit: 5, offset: 5 } });
      assert.notOk(found.isError);
      const structured = check(SearchResultStruct, found.structuredContent, 'search_factories');
      const http = check(SearchResultStruct, await ok(await get('/api/v1/factories?q=steel&country=US&limit=5&offset=5')), 'search');
      assert.deepEqual(structured, http);
      const text = (found.content as { type: string; text: string }[])[0]!;
      assert.deepEqual(JSON.parse(text.text), structured);

      for (const args of [{ country: 'us' }, { category: 'welding' }, { limit: 0 }, { limit: 101 }, { offset: -1 }, { limit: '5' }, { colour: 'red' }]) {
        const refused = await client.callTool({ name: 'search_factories', arguments: args });
        assert.isTrue(refused.isError, JSON.stringify(args));
        const body = JSON.parse((refused.content as { text: string }[])[0]!.text) as { status: number; detail: string };
        assert.equal(body.status, 400, JSON.stringify(args));
      }

      const one = await client.callTool({ name: 'get_factory', arguments: { id: 'wd-Q98765' } });
      const factory = check(FactoryResultStruct, one.structuredContent, 'get_factory');
      assert.equal(factory.factory.name, 'Müller Präzisionstechnik');
      assert.equal(factory.attribution.dataset_date, '2025-06-02');
      const unknown = await client.callTool({ name: 'get_factory', arguments: { id: 'wd-Q1' } });
      assert.isTrue(unknown.isError);
      assert.equal(JSON.parse((unknown.content as { text: string }[])[0]!.text).status, 404);

      const stats = await client.callTool({ name: 'registry_stats', arguments: {} });
      const statsBody = check(StatsStruct, stats.structuredContent, 'registry_stats');
      assert.deepEqual(statsBody, check(StatsStruct, await ok(await get('/api/v1/stats')), 'stats'));
    } finally {
      await client.close();
    }
  });

  t(
    'MCP answers a tool error with factories: null while the registry is unavailable',
    async ({ target }) => {
      const client = new Client({ name: 'directory-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', target.url), { fetch: target.fetch }));
      try {
        const result = await client.callTool({ name: 'search_factories', arguments: { q: 'steel' } });
        assert.isTrue(result.isError);
        const body = JSON.parse((result.content as { text: string }[])[0]!.text) as Record<string, unknown>;
        assert.equal(body.status, 503);
        assert.isNull(body.factories);
      } finally {
        await client.close();
      }
    },
    { data: brokenSource(fixtureText()) },
  );
}

function postJson(get: Started['get'], fields: Record<string, unknown>): Promise<Response> {
  return get('/api/v1/submissions', { method: 'POST', body: JSON.stringify(fields), headers: { 'content-type': 'application/json' } });
}

/** Values the schema refuses: one per rule it states. */
function badValues(schema: Record<string, unknown>): string[] {
  const out: string[] = [];
  if (schema.type === 'integer') {
    out.push(String(Number(schema.minimum) - 1), '1.5', 'x');
    if (typeof schema.maximum === 'number' && Number.isSafeInteger(schema.maximum + 1)) out.push(String(schema.maximum + 1));
  }
  if (Array.isArray(schema.enum)) out.push(`${String(schema.enum[0])}-not`);
  if (typeof schema.pattern === 'string') out.push('zz9');
  if (typeof schema.maxLength === 'number') out.push('A'.repeat(schema.maxLength + 1));
  if (typeof schema.minLength === 'number' && schema.minLength > 0) out.push('');
  assert.isAbove(out.length, 0, `no rule to break in ${JSON.stringify(schema)}`);
  return out;
}

/** Values the schema accepts: its bounds, its enumeration, a matching string. */
function goodValues(schema: Record<string, unknown>): string[] {
  if (schema.type === 'integer') return [String(schema.minimum), String(schema.maximum ?? Number(schema.minimum) + 1)];
  if (Array.isArray(schema.enum)) return schema.enum.map(String);
  if (schema.pattern === '^[A-Z]{2}$') return ['US', 'ZZ'];
  if (schema.pattern === '^[A-Z]{2}-[A-Z0-9]{1,3}$') return ['US-OH', 'FR-75C', 'ZZ-9'];
  return ['steel', 'A'.repeat(Number(schema.maxLength))];
}
