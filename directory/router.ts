/**
 * The directory service: one fetch-style handler (the route table of core/web/router.ts) that the
 * Node and Deno adapters serve unchanged and tests call in-process. Everything it needs from the world comes in as
 * ports: the dataset's source, the submission store, a clock and the limits.
 *
 * Order of checks on every request: rate limit (429), route and method (404, 405), size (413),
 * parameters (400), data (503), then the lookup itself (404 for an unknown record). Every error is
 * problem details; GET reads are open to any origin (CORS), submissions and MCP are not.
 *
 * @example
 * const directory = createDirectory({ data: () => openDatasetFile(), submissions: new MemorySubmissionStore() });
 * const response = await directory.fetch(new Request('http://x/api/v1/factories?q=steel'), { remoteAddress: '203.0.113.9' });
 */
import { bytesResponse } from '../core/web/bytes-response.ts';
import { type Call, type ClientInfo, type CorsPolicy, createService, type Route } from '../core/web/router.ts';
import type { BitsetStore } from './bitset-simd.ts';
import { checkDeclaredLength, readBody } from './http/body.ts';
import { chooseEncoding, encodeResponse, plainRequest } from './http/compression.ts';
import { type Clock, DataLoader, type DataSource, type IndexCache, type LoadedData, type RetryOptions, type Sha256Factory } from './http/data-source.ts';
import { EXPORT_CACHE_CONTROL, exportStream, ndjsonStream, notModified } from './http/export.ts';
import { type FixedBody, fixedBody, fixedResponse } from './http/fixed-body.ts';
import { API_VERSION, openApiDocument } from './http/openapi.ts';
import { type ParamDef, parseQuery, validateParams } from './http/params.ts';
import { importHint, isProblemCode, PROBLEMS, ProblemError, unavailable } from './http/problem.ts';
import { clientKeyOf, type RateLimitOptions, type TakeResult, TokenBucketLimiter } from './http/rate-limit.ts';
import { factoryByIdJson, registryStatsJson, searchFactoriesJson } from './http/reads.ts';
import { FACTORY_ID_PARAM, SEARCH_PARAMS, SUBMISSION_FIELDS } from './http/schemas.ts';
import type { IndexOptions } from './index-builder.ts';
import { handleMcp } from './mcp.ts';
import { PAGE_HEADERS } from './pages/layout.ts';
import { searchPage } from './pages/search.ts';
import type { SearchQuery } from './search.ts';
import { formPage, problemPage } from './submissions/pages.ts';
import { createSubmission, type SubmissionRoutesContext, submissionStatus } from './submissions/routes.ts';
import type { SubmissionStore } from './submissions/store.ts';

/** Bounds on what one request may carry, and the rate limit. */
export interface DirectoryLimits {
  /** Token bucket per client; `perSecond: 0` turns it off. Default 20 per second, burst 120. */
  readonly rateLimit: RateLimitOptions;
  /** Largest submission body (bytes). Default 16 KiB. */
  readonly submissionBytes: number;
  /** Largest MCP request body (bytes). Default 64 KiB. */
  readonly mcpBytes: number;
  /** Largest query string on a read, and largest body a read may declare (bytes). Default 2 KiB. */
  readonly readBytes: number;
  /** Back-off between attempts to load a dataset that failed to load. Default 1 s doubling to 16 s. */
  readonly retry: RetryOptions;
}

export const DEFAULT_LIMITS: DirectoryLimits = {
  rateLimit: { perSecond: 20, burst: 120 },
  submissionBytes: 16 * 1024,
  mcpBytes: 64 * 1024,
  readBytes: 2 * 1024,
  retry: { minMs: 1000, maxMs: 16_000 },
};

export interface DirectoryOptions {
  /** Opens the dataset file; a rejection (or a dataset that fails validation) means 503. */
  readonly data: DataSource;
  /** Where submissions are kept for review. The caller owns it and closes it. */
  readonly submissions: SubmissionStore;
  /** Default: the system clock. */
  readonly clock?: Clock;
  readonly limits?: Partial<DirectoryLimits>;
  /** Told about failures the client only sees as a 5xx (a dataset that fails to load, a store error). */
  readonly onError?: (error: unknown) => void;
  /** SHA-256 for the dataset's ETag (see Sha256Factory). Default: the core's, on every runtime. */
  readonly sha256?: Sha256Factory;
  /** Where the dataset's prebuilt index is kept (see IndexCache); without one, every start indexes the dataset. */
  readonly indexCache?: IndexCache;
  /**
   * Behind a reverse proxy: rate-limit by the address the proxy puts last in X-Forwarded-For
   * instead of the connection's. Off by default, when the header is ignored: anyone can send it.
   */
  readonly trustProxy?: boolean;
  /** How the index is made; `bitsets` lets a thread use another's (see `sharedIndex`). */
  readonly index?: IndexOptions;
}

/** See `Directory.sharedIndex`. */
export interface SharedIndex {
  readonly file: Uint8Array;
  readonly bitsets: BitsetStore;
}

export type { ClientInfo } from '../core/web/router.ts';

export interface Directory {
  /**
   * Answers one request. Never rejects: failures become problem details. The rate limit is keyed
   * on the client's remote address (see `clientKeyOf`; behind a trusted proxy, the address it
   * forwards); requests without one share a bucket.
   */
  fetch(request: Request, client?: ClientInfo): Promise<Response>;
  /** Waits for the current load attempt: the number of records, or null while the dataset is unavailable. */
  ready(): Promise<number | null>;
  /**
   * What the loaded index is made of that another thread can use in place: the index file's bytes
   * and the bit sets' memory. Undefined before a load, and when the index was built from the
   * dataset. A host that serves on several threads hands them to the others when they are shared
   * memory (directory/adapter/threads.ts), which pass them back as `data` and `index.bitsets`.
   */
  sharedIndex(): SharedIndex | undefined;
  /** Stops answering (later requests get 503); the adapter closes its server and the store. */
  close(): Promise<void>;
}

// Paths whose responses are private or whose callers are not web pages: no CORS headers.
const PRIVATE_PREFIXES = ['/api/v1/submissions', '/submit', '/mcp'];

function isPublicPath(pathname: string): boolean {
  return !PRIVATE_PREFIXES.some((prefix) => pathname === prefix || pathname.startsWith(`${prefix}/`));
}

const CORS_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'ETag, Retry-After, Cache-Control, RateLimit, RateLimit-Policy',
};

/** Public reads are open to any origin; submissions and MCP to none. */
const PUBLIC_READS: CorsPolicy = {
  read: (_request, url) => (isPublicPath(url.pathname) ? CORS_HEADERS : undefined),
  preflight: (_request, url) => (isPublicPath(url.pathname) ? PREFLIGHT_HEADERS : undefined),
};

const PREFLIGHT_HEADERS: Readonly<Record<string, string>> = {
  ...CORS_HEADERS,
  'access-control-allow-methods': 'GET, HEAD, OPTIONS',
  'access-control-allow-headers': 'If-None-Match',
  'access-control-max-age': '86400',
};

const READ_CACHE_CONTROL = 'public, max-age=60';

// Parameter lists made once: params.ts keeps what it derives from a list with the list.
const NO_PARAMS: readonly ParamDef[] = [];
const ID_PARAMS: readonly ParamDef[] = [FACTORY_ID_PARAM];
// The form's pre-fill: kind and record_id from the query, both optional.
const PREFILL_PARAMS: readonly ParamDef[] = SUBMISSION_FIELDS.filter((def) => def.name === 'kind' || def.name === 'record_id').map((def) => ({
  ...def,
  required: false,
}));

const JSON_TYPE = 'application/json; charset=utf-8';
const NDJSON_TYPE = 'application/x-ndjson; charset=utf-8';

/** What the guard learnt of a request, for the headers added to its answer. */
interface Meter {
  take?: TakeResult;
}

/**
 * The client a request is counted against. With `trustProxy`, the last address of X-Forwarded-For:
 * the one the proxy in front appended (the ones before it are whatever the client sent), without a
 * port some proxies add (`192.0.2.1:5000`, `[2001:db8::1]:5000`), which would make each connection
 * a bucket of its own.
 */
function clientAddress(request: Request, client: ClientInfo, trustProxy: boolean): string | undefined {
  if (!trustProxy) return client.remoteAddress;
  const forwarded = request.headers.get('x-forwarded-for')?.split(',').at(-1)?.trim();
  if (!forwarded) return client.remoteAddress;
  return /^\[([^\]]+)\](?::\d+)?$/.exec(forwarded)?.[1] ?? /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(forwarded)?.[1] ?? forwarded;
}

/** A JSON body given as its bytes (copied: `body` may be a buffer the next request reuses). */
function json(body: Uint8Array, cacheControl: string): Response {
  return bytesResponse(body, { headers: { 'content-type': JSON_TYPE, 'cache-control': cacheControl } });
}

function pathParam(call: Call, name: string): string {
  try {
    return decodeURIComponent(call.params[name] ?? '');
  } catch {
    throw new ProblemError('invalid-parameter', `${name} is not valid percent-encoding`, { errors: [{ name, detail: 'bad percent-encoding' }] });
  }
}

/** Builds the directory service. */
export function createDirectory(options: DirectoryOptions): Directory {
  const limits: DirectoryLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const clock = options.clock ?? { now: () => Date.now() };
  const onError = options.onError ?? (() => {});
  const loader = new DataLoader(options.data, clock, limits.retry, onError, options.sha256, options.indexCache, options.index);
  const limiter = new TokenBucketLimiter(limits.rateLimit, clock);
  let closed = false;
  let openApi: FixedBody | undefined;

  async function requireData(): Promise<LoadedData> {
    const state = await loader.get();
    if (!state.ok) {
      throw unavailable(`the directory's dataset could not be loaded; this is not an empty directory. ${importHint()}`, state.retryAfterSeconds);
    }
    return state.data;
  }

  const submissions: SubmissionRoutesContext = {
    store: options.submissions,
    clock,
    requireData,
    bodyLimit: limits.submissionBytes,
    onError,
  };

  /** Reads take no body and a bounded query string. */
  function checkReadSize({ request, url }: Call): URLSearchParams {
    checkDeclaredLength(request, limits.readBytes);
    if (url.search.length > limits.readBytes) {
      throw new ProblemError('too-large', `the query string is over ${limits.readBytes} bytes`, { limit_bytes: limits.readBytes });
    }
    return url.searchParams;
  }

  /** A full export: streamed, with its strong ETag and 304 for a current copy. */
  function exportRoute(path: string, etagOf: (data: LoadedData) => string, stream: (data: LoadedData) => ReadableStream<Uint8Array>, type: string): Route {
    return {
      path,
      get: async (call) => {
        parseQuery(NO_PARAMS, checkReadSize(call));
        const data = await requireData();
        const headers = { etag: etagOf(data), 'cache-control': EXPORT_CACHE_CONTROL };
        if (notModified(call.request, headers.etag)) return new Response(null, { status: 304, headers });
        return new Response(stream(data), { headers: { ...headers, 'content-type': type } });
      },
    };
  }

  const routes: Route[] = [
    {
      path: '/',
      get: (call) => searchPage(call, checkReadSize(call), requireData),
    },
    {
      path: '/api/v1/factories',
      get: async (call) => {
        const query = parseQuery<SearchQuery>(SEARCH_PARAMS, checkReadSize(call));
        return json(searchFactoriesJson(await requireData(), query), READ_CACHE_CONTROL);
      },
    },
    {
      path: '/api/v1/factories/:id',
      get: async (call) => {
        parseQuery(NO_PARAMS, checkReadSize(call));
        const { id } = validateParams<{ id: string }>(ID_PARAMS, { id: pathParam(call, 'id') }, 'text');
        return json(factoryByIdJson(await requireData(), id), READ_CACHE_CONTROL);
      },
    },
    {
      path: '/api/v1/stats',
      get: async (call) => {
        parseQuery(NO_PARAMS, checkReadSize(call));
        return fixedResponse(call.request, registryStatsJson(await requireData()), JSON_TYPE, READ_CACHE_CONTROL);
      },
    },
    exportRoute('/directory.json', (data) => data.etag, exportStream, JSON_TYPE),
    exportRoute('/directory.ndjson', (data) => data.ndjsonEtag, ndjsonStream, NDJSON_TYPE),
    {
      path: '/openapi.json',
      get: (call) => {
        parseQuery(NO_PARAMS, checkReadSize(call));
        openApi ??= fixedBody(JSON.stringify(openApiDocument()));
        return fixedResponse(call.request, openApi, JSON_TYPE, 'public, max-age=3600');
      },
    },
    {
      path: '/problems/:code',
      get: (call) => {
        parseQuery(NO_PARAMS, checkReadSize(call));
        const code = pathParam(call, 'code');
        if (!isProblemCode(code)) throw new ProblemError('not-found', `no problem type ${JSON.stringify(code)}`);
        const kind = PROBLEMS[code];
        return new Response(problemPage(code, kind.status, kind.title, kind.about), {
          headers: { ...PAGE_HEADERS, 'cache-control': 'public, max-age=86400' },
        });
      },
    },
    {
      path: '/submit',
      get: (call) => {
        const values = parseQuery<{ kind?: string; record_id?: string }>(PREFILL_PARAMS, checkReadSize(call));
        return new Response(formPage(values), { headers: PAGE_HEADERS });
      },
    },
    {
      path: '/api/v1/submissions',
      post: ({ request }) => createSubmission(request, submissions),
    },
    {
      path: '/api/v1/submissions/:id',
      get: (call) => {
        checkReadSize(call);
        return submissionStatus(call.request, pathParam(call, 'id'), submissions);
      },
    },
    {
      path: '/mcp',
      post: async ({ request }) => {
        const body = await readBody(request, limits.mcpBytes);
        const bounded = new Request(request.url, { method: 'POST', headers: request.headers, body: body as Uint8Array<ArrayBuffer> });
        return handleMcp(bounded, body, { requireData, version: API_VERSION });
      },
    },
  ];

  const fetch = createService<[ClientInfo, Meter]>({
    routes,
    cors: PUBLIC_READS,
    guard(request, _url, client, meter) {
      if (closed) throw unavailable('the directory is shutting down', 1);
      const take = (meter.take = limiter.take(clientKeyOf(clientAddress(request, client, options.trustProxy === true))));
      if (!take.ok) {
        throw new ProblemError(
          'rate-limited',
          `too many requests; retry in ${take.retryAfterSeconds} s`,
          {},
          {
            'retry-after': String(take.retryAfterSeconds),
          },
        );
      }
    },
    onError,
  });

  return {
    async fetch(request: Request, client: ClientInfo = {}): Promise<Response> {
      const encoding = chooseEncoding(request.headers.get('accept-encoding'));
      const meter: Meter = {};
      const response = encodeResponse(await fetch(plainRequest(request, encoding), client, meter), encoding);
      const fields = meter.take !== undefined ? limiter.fields(meter.take) : undefined;
      if (fields === undefined) return response;
      // The service's responses are its own, made with mutable headers.
      response.headers.set('ratelimit-policy', fields['ratelimit-policy']);
      response.headers.set('ratelimit', fields.ratelimit);
      return response;
    },
    async ready(): Promise<number | null> {
      const state = await loader.get();
      return state.ok ? state.data.index.size : null;
    },
    sharedIndex() {
      const data = loader.loaded;
      return data?.indexFile === undefined ? undefined : { file: data.indexFile, bitsets: data.index.bitsetMemory };
    },
    close(): Promise<void> {
      closed = true;
      return Promise.resolve();
    },
  };
}
