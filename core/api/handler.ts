/**
 * The node's HTTP API (node-api.md §4–§8, docs/node-api.md) as one fetch-style handler: a
 * `Request` in, a `Response` out, on any runtime. Hosts serve it (host-node/http-server.ts);
 * tests call it in-process with a fake NodeService.
 *
 * Order of checks: the request must be addressed to an IP address or localhost (403, against DNS
 * rebinding); a request that may change state (any method but GET, HEAD and OPTIONS) must come
 * from no web page but the node's own origin (403) and carry the bearer token (401), before its path
 * is even looked up; then path (404) and method (405); then query, body type (415), size (413) and
 * fields (400); then the node's own verdict (402, 409, 503). Every error is problem details; GET
 * and SSE answers carry CORS headers for loopback origins only.
 *
 * @example
 * const api = createNodeApi({ service: node, token: await readApiToken() });
 * const response = await api(new Request('http://127.0.0.1:8844/status'));
 */
import { isLoopbackOrigin, requireBearer, requireLocalHostName, requireSameOrigin } from './access.ts';
import { readJsonBody } from './body.ts';
import { nodeIdParam, queryParams, signalRequest, transferRequest, txPageParams } from './input.ts';
import { ApiProblem, problemResponse, toProblem } from './problem.ts';
import type { NodeService, Unsubscribe } from './service.ts';
import { EVENT_STREAM_HEADERS, eventStream } from './sse.ts';

export interface NodeApiOptions {
  readonly service: NodeService;
  /** The API token (the content of `api.token`); non-empty. */
  readonly token: string;
  /** Idle time before an SSE keep-alive comment. Default 15,000 ms (node-api.md §8). */
  readonly keepAliveMs?: number;
  /** Largest request body. Default 64 KiB. */
  readonly maxBodyBytes?: number;
  /** Unread events one SSE connection may queue before it is closed. Default 1,000. */
  readonly maxQueuedEvents?: number;
  /** Told about failures the client only sees as a 500. */
  readonly onError?: (error: unknown) => void;
}

/** A request as a route handler sees it: `params` are the path's captured segments. */
interface Call {
  readonly request: Request;
  readonly url: URL;
  readonly params: readonly string[];
}

type RouteHandler = (call: Call) => Promise<Response> | Response;

interface Route {
  readonly pattern: RegExp;
  /** Also answers HEAD. */
  readonly get?: RouteHandler;
  readonly post?: RouteHandler;
}

const encoder = new TextEncoder();
const NO_PARAMS: readonly string[] = [];
const TX_PAGE_PARAMS: readonly string[] = ['limit', 'before'];

/** A JSON answer; node state changes block by block, so nothing is cached. */
function json(value: unknown, status = 200): Response {
  const body = encoder.encode(JSON.stringify(value));
  return new Response(body, {
    status,
    headers: { 'content-type': 'application/json', 'content-length': String(body.length), 'cache-control': 'no-store' },
  });
}

function allowOf(route: Route): string {
  return [...(route.get ? ['GET', 'HEAD'] : []), ...(route.post ? ['POST'] : []), 'OPTIONS'].join(', ');
}

/**
 * The answer to OPTIONS on a known path. Permission (Access-Control-*) is given only to a loopback
 * origin asking to GET a GET route; anything else gets 204 with `Allow` and no permission, which a
 * browser treats as a refusal.
 */
function preflight(request: Request, route: Route): Response {
  const headers: Record<string, string> = { allow: allowOf(route) };
  const origin = request.headers.get('origin');
  const wanted = request.headers.get('access-control-request-method');
  if (route.get) headers.vary = 'Origin';
  if (route.get && origin !== null && isLoopbackOrigin(origin) && (wanted === null || wanted === 'GET' || wanted === 'HEAD')) {
    headers['access-control-allow-origin'] = origin;
    headers['access-control-allow-methods'] = 'GET';
    headers['access-control-max-age'] = '600';
  }
  return new Response(null, { status: 204, headers });
}

/** Builds the API handler over `options.service`. The handler never rejects. */
export function createNodeApi(options: NodeApiOptions): (request: Request) => Promise<Response> {
  if (typeof options.token !== 'string') throw new TypeError('token must be a string');
  if (options.token.length === 0) throw new RangeError('token must not be empty');
  const service = options.service;
  const token = encoder.encode(options.token);
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024;
  const maxQueued = options.maxQueuedEvents ?? 1000;
  const onError = options.onError ?? (() => {});
  for (const [name, value] of [['keepAliveMs', keepAliveMs], ['maxBodyBytes', maxBodyBytes], ['maxQueuedEvents', maxQueued]] as const) {
    if (!Number.isInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  }

  function stream<T>(call: Call, subscribe: (listener: (event: T) => void) => Unsubscribe): Response {
    queryParams(call.url, NO_PARAMS);
    const body = eventStream(subscribe, { keepAliveMs, maxQueued, signal: call.request.signal });
    return new Response(body, { headers: EVENT_STREAM_HEADERS });
  }

  // First match wins: the event streams come before the `:node_id` routes they share a prefix with.
  const routes: Route[] = [
    { pattern: /^\/signals\/stream$/, get: (call) => stream(call, (listener) => service.onSignal(listener)) },
    { pattern: /^\/blocks\/stream$/, get: (call) => stream(call, (listener) => service.onBlock(listener)) },
    { pattern: /^\/transactions\/stream$/, get: (call) => stream(call, (listener) => service.onTransaction(listener)) },
    {
      pattern: /^\/health$/,
      get: ({ url }) => {
        queryParams(url, NO_PARAMS);
        return new Response('ok', { headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' } });
      },
    },
    {
      pattern: /^\/status$/,
      get: ({ url }) => {
        queryParams(url, NO_PARAMS);
        return json(service.status());
      },
    },
    {
      pattern: /^\/history\/([^/]+)$/,
      get: async ({ url, params }) => {
        queryParams(url, NO_PARAMS);
        return json(await service.history(nodeIdParam(params[0]!)));
      },
    },
    {
      pattern: /^\/transactions\/([^/]+)$/,
      get: async ({ url, params }) => {
        const page = txPageParams(queryParams(url, TX_PAGE_PARAMS));
        return json(await service.transactions(nodeIdParam(params[0]!), page));
      },
    },
    {
      pattern: /^\/beacon$/,
      get: ({ url }) => {
        queryParams(url, NO_PARAMS);
        return json(service.beacon());
      },
    },
    {
      pattern: /^\/bootstrap$/,
      get: ({ url }) => {
        queryParams(url, NO_PARAMS);
        return json({ peers: service.bootstrap() });
      },
    },
    {
      pattern: /^\/atlas$/,
      get: ({ url }) => {
        queryParams(url, NO_PARAMS);
        return json(service.atlas());
      },
    },
    {
      pattern: /^\/signals$/,
      get: ({ url }) => {
        queryParams(url, NO_PARAMS);
        return json(service.signals());
      },
    },
    {
      pattern: /^\/transfer$/,
      post: async ({ request, url }) => {
        queryParams(url, NO_PARAMS);
        const { to, amount } = transferRequest(await readJsonBody(request, maxBodyBytes));
        return json({ tx_id: await service.transfer(to, amount) }, 201);
      },
    },
    {
      pattern: /^\/signals\/send$/,
      post: async ({ request, url }) => {
        queryParams(url, NO_PARAMS);
        const signal = signalRequest(await readJsonBody(request, maxBodyBytes));
        const { id, nonce } = await service.sendSignal(signal);
        return json({ id, nonce }, 202);
      },
    },
  ];

  function match(pathname: string): { route: Route; params: string[] } | undefined {
    for (const route of routes) {
      const found = route.pattern.exec(pathname);
      if (found) return { route, params: found.slice(1) };
    }
    return undefined;
  }

  async function dispatch(request: Request, url: URL, found: ReturnType<typeof match>): Promise<Response> {
    requireLocalHostName(url);
    const method = request.method;
    const reading = method === 'GET' || method === 'HEAD';
    // OPTIONS changes nothing and a browser's preflight never carries credentials: it is answered
    // without the token, and grants nothing to a mutating route (see `preflight`).
    if (!reading && method !== 'OPTIONS') {
      requireSameOrigin(request, url);
      requireBearer(request, token);
    }
    if (found === undefined) throw new ApiProblem('not-found', `no resource at ${url.pathname}`);
    const { route, params } = found;
    if (method === 'OPTIONS') return preflight(request, route);
    const handler = reading ? route.get : method === 'POST' ? route.post : undefined;
    if (handler === undefined) {
      const allow = allowOf(route);
      throw new ApiProblem('method-not-allowed', `${url.pathname} takes ${allow}, not ${method}`, {}, { allow });
    }
    const response = await handler({ request, url, params });
    if (method !== 'HEAD') return response;
    // HEAD is GET without the body (an event stream's subscription ends at once).
    await response.body?.cancel();
    return new Response(null, { status: response.status, headers: response.headers });
  }

  return async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const found = match(url.pathname);
    let response: Response;
    try {
      response = await dispatch(request, url, found);
    } catch (error) {
      response = problemResponse(toProblem(error, onError));
    }
    response.headers.set('x-content-type-options', 'nosniff');
    // CORS: reads of GET and SSE routes only, and only by pages on this machine.
    if ((request.method === 'GET' || request.method === 'HEAD') && found?.route.get) {
      response.headers.append('vary', 'Origin');
      const origin = request.headers.get('origin');
      if (origin !== null && isLoopbackOrigin(origin)) response.headers.set('access-control-allow-origin', origin);
    }
    return response;
  };
}
