/**
 * The node's HTTP API (node-api.md §4–§8, docs/node-api.md) as one fetch-style handler: a
 * `Request` in, a `Response` out, on any runtime. Hosts serve it (host-node/http-server.ts);
 * tests call it in-process with fake services.
 *
 * The routes come from one module per feature (core/api/routes/), each over the service interface
 * its feature owns; this file mounts those of the services it is given (ApiServices) under the
 * policy they share, on the route table of core/web/router.ts. A new feature is one module there
 * and one line in MOUNTS.
 *
 * Order of checks: the request must be addressed to an IP address or localhost (403, against DNS
 * rebinding); a request that may change state (any method but GET, HEAD, OPTIONS and TRACE) must come
 * from no web page but the node's own origin (403) and carry the bearer token (401), before its path
 * is even looked up; then path (404) and method (405); then query, body type (415), size (413) and
 * fields (400); then the node's own verdict (402, 409, 503). Every error is problem details; GET
 * and SSE answers carry CORS headers for loopback origins only.
 *
 * @example
 * const api = createNodeApi({ services: node.services, token: await readApiToken() });
 * const response = await api(new Request('http://127.0.0.1:8844/status'));
 */
import { bytesResponse } from '../web/bytes-response.ts';
import { queryValues } from '../web/query.ts';
import { type ClientInfo, type CorsPolicy, createService, type HeaderSet } from '../web/router.ts';
import { EVENT_STREAM_HEADERS, eventStream, SSE_KEEP_ALIVE_MS } from '../web/sse.ts';
import { StreamSlots } from '../web/stream-slots.ts';
import { isLoopbackOrigin, requireBearer, requireLocalHostName, requireSameOrigin } from './access.ts';
import { readBytesBody, readJsonBody } from './body.ts';
import type { ApiTools, Feature } from './feature.ts';
import { ApiProblem, toProblem } from './problem.ts';
import { capabilityRoutes } from './routes/capabilities.ts';
import { chainRoutes } from './routes/chain.ts';
import { channelRoutes } from './routes/channels.ts';
import { fabricRoutes } from './routes/fabric.ts';
import { jobRoutes } from './routes/jobs.ts';
import { messagingRoutes } from './routes/messaging.ts';
import { nameRoutes } from './routes/names.ts';
import { netgraphRoutes } from './routes/netgraph.ts';
import { nodeRoutes } from './routes/node.ts';
import { peerRoutes } from './routes/peers.ts';
import { placementRoutes } from './routes/placement.ts';
import { signalRoutes } from './routes/signals.ts';
import { trafficRoutes } from './routes/traffic.ts';
import { tunnelRoutes } from './routes/tunnel.ts';
import type { ApiServices } from './service.ts';

/** A feature's routes and the service they are mounted over. */
interface Mount<K extends keyof ApiServices> {
  readonly service: K;
  readonly routes: Feature<NonNullable<ApiServices[K]>>;
}

const mount = <K extends keyof ApiServices>(service: K, routes: Feature<NonNullable<ApiServices[K]>>): Mount<K> => ({ service, routes });

/** Every feature of the API, in the order their routes are matched. */
const MOUNTS: readonly Mount<keyof ApiServices>[] = [
  mount('ledger', nodeRoutes),
  mount('pings', peerRoutes),
  mount('netgraph', netgraphRoutes),
  mount('ledger', chainRoutes),
  mount('signals', signalRoutes),
  mount('jobs', jobRoutes),
  mount('placement', placementRoutes),
  mount('capabilities', capabilityRoutes),
  mount('channels', channelRoutes),
  mount('tunnels', tunnelRoutes),
  mount('messaging', messagingRoutes),
  mount('names', nameRoutes),
  mount('profiles', fabricRoutes),
  mount('traffic', trafficRoutes),
] as Mount<keyof ApiServices>[];

export interface NodeApiOptions {
  /** The services whose routes the API serves; a feature not given answers 404. */
  readonly services: ApiServices;
  /** The API token (the content of `api.token`); non-empty. */
  readonly token: string;
  /** Idle time before an SSE keep-alive comment. Default SSE_KEEP_ALIVE_MS (node-api.md §8). */
  readonly keepAliveMs?: number;
  /** Largest request body. Default 64 KiB. */
  readonly maxBodyBytes?: number;
  /** Unread events one SSE connection may queue before it is closed. Default 1,000. */
  readonly maxQueuedEvents?: number;
  /** Event streams open at once, all clients together; past it a stream gets 503. Default MAX_STREAMS. */
  readonly maxStreams?: number;
  /** Event streams open at once for one client (remote address); past it a stream gets 503. Default MAX_STREAMS_PER_CLIENT. */
  readonly maxStreamsPerClient?: number;
  /** Told about failures the client only sees as a 500. */
  readonly onError?: (error: unknown) => void;
}

/** Event streams the node holds open at once by default, in all and per client (docs/node-api.md). */
export const MAX_STREAMS = 256;
export const MAX_STREAMS_PER_CLIENT = 32;

// Methods that change nothing (RFC 9110 §9.2.1): answered without the token.
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

const encoder = new TextEncoder();

function json(value: unknown, status = 200): Response {
  const body = encoder.encode(JSON.stringify(value));
  return bytesResponse(body, {
    status,
    headers: { 'content-type': 'application/json', 'content-length': String(body.length), 'cache-control': 'no-store' },
  });
}

/**
 * CORS for pages on this machine only: reads of GET and SSE routes by a loopback origin. A
 * preflight grants a loopback origin asking to GET a GET route; anything else gets 204 with
 * `Allow` and no permission, which a browser treats as a refusal.
 */
const LOOPBACK_READS: CorsPolicy = {
  read(request, _url, route): HeaderSet {
    if (!route?.get) return undefined;
    const origin = request.headers.get('origin');
    return origin !== null && isLoopbackOrigin(origin) ? { vary: 'Origin', 'access-control-allow-origin': origin } : { vary: 'Origin' };
  },
  preflight(request, _url, route): HeaderSet {
    if (!route.get) return undefined;
    const origin = request.headers.get('origin');
    const wanted = request.headers.get('access-control-request-method');
    if (origin === null || !isLoopbackOrigin(origin) || (wanted !== null && wanted !== 'GET' && wanted !== 'HEAD')) return { vary: 'Origin' };
    return { vary: 'Origin', 'access-control-allow-origin': origin, 'access-control-allow-methods': 'GET', 'access-control-max-age': '600' };
  },
};

/**
 * Builds the API handler over `options.service`. The handler never rejects. `client` (what the
 * host knows of the connection) keys the per-client bound on event streams; requests without one
 * share a bound.
 */
export function createNodeApi(options: NodeApiOptions): (request: Request, client?: ClientInfo) => Promise<Response> {
  if (typeof options.token !== 'string') throw new TypeError('token must be a string');
  if (options.token.length === 0) throw new RangeError('token must not be empty');
  const token = encoder.encode(options.token);
  const keepAliveMs = options.keepAliveMs ?? SSE_KEEP_ALIVE_MS;
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024;
  const maxQueued = options.maxQueuedEvents ?? 1000;
  const maxStreams = options.maxStreams ?? MAX_STREAMS;
  const maxStreamsPerClient = options.maxStreamsPerClient ?? MAX_STREAMS_PER_CLIENT;
  for (const [name, value] of [
    ['keepAliveMs', keepAliveMs],
    ['maxBodyBytes', maxBodyBytes],
    ['maxQueuedEvents', maxQueued],
    ['maxStreams', maxStreams],
    ['maxStreamsPerClient', maxStreamsPerClient],
  ] as const) {
    if (!Number.isInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  }
  const slots = new StreamSlots({ total: maxStreams, perClient: maxStreamsPerClient });
  // The connection each request came on, for the per-client bound (a request is answered once).
  const clients = new WeakMap<Request, string>();

  const query = (url: URL, allowed: readonly string[] = []): Record<string, string> =>
    queryValues(url.searchParams, { allowed, repeated: 'invalid-parameter' });
  const tools: ApiTools = {
    json,
    reader: (path, read) => ({
      path,
      get: async (call) => {
        query(call.url);
        return json(await read(call));
      },
    }),
    query,
    readJson: (request, { optional = false, maxBytes = maxBodyBytes } = {}) => readJsonBody(request, maxBytes, optional),
    readBytes: (request, { maxBytes }) => readBytesBody(request, maxBytes),
    stream: (call, subscribe, { allowed, id, data, type, maxQueuedBytes, format } = {}) => {
      query(call.url, allowed);
      const client = clients.get(call.request) ?? '';
      const release = slots.take(client);
      if (release === undefined) {
        const bound = slots.full(client) === 'total' ? `${slots.caps.total} in all` : `${slots.caps.perClient} per client`;
        throw new ApiProblem('too-many-streams', `this node holds at most ${bound} event streams open; retry once one has closed`);
      }
      const body = eventStream(subscribe, {
        keepAliveMs,
        maxQueued,
        onEnd: release,
        signal: call.request.signal,
        ...(id && { id }),
        ...(data && { data }),
        ...(type && { type }),
        ...(maxQueuedBytes && { maxQueuedBytes }),
        ...(format && { format }),
      });
      return new Response(body, { headers: format === undefined ? EVENT_STREAM_HEADERS : { ...EVENT_STREAM_HEADERS, 'content-type': format.contentType } });
    },
  };

  const service = createService({
    routes: MOUNTS.flatMap(({ service, routes }) => {
      const given = options.services[service];
      return given === undefined ? [] : (routes as Feature<typeof given>)(given, tools);
    }),
    cors: LOOPBACK_READS,
    guard(request, url) {
      requireLocalHostName(url);
      // OPTIONS changes nothing and a browser's preflight never carries credentials: it is answered
      // without the token, and grants nothing to a mutating route (see LOOPBACK_READS). TRACE is
      // safe too (RFC 9110 §9.2.1), and no route takes it: 404 or 405 with Allow.
      if (!SAFE_METHODS.has(request.method)) {
        requireSameOrigin(request, url);
        requireBearer(request, token);
      }
    },
    toProblem,
    onError: options.onError,
  });
  return (request, client = {}) => {
    clients.set(request, client.remoteAddress ?? '');
    return service(request);
  };
}
