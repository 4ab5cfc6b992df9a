/**
 * One route table for every fetch-style service of the project, on itty-router: a service lists
 * its routes (a path, a GET handler that also answers HEAD, a POST and a DELETE handler) and the kit answers the
 * rest the same way everywhere: 404 for an unknown path, 405 with `Allow` for a known path and
 * another method, OPTIONS with `Allow` (and whatever the CORS policy grants), HEAD as GET without
 * the body, `X-Content-Type-Options: nosniff` on every answer, and every error as problem details.
 *
 * Order on every request: the service's guard (host, origin, token, rate limit; it may refuse
 * before a path is even looked up), then path and method, then the route's handler.
 *
 * @example
 * const fetch = createService({
 *   routes: [{ path: '/health', get: () => new Response('ok') }],
 *   cors: { read: () => ({ 'access-control-allow-origin': '*' }), preflight: () => undefined },
 * });
 * await fetch(new Request('http://127.0.0.1/health'));
 */
import { type IRequest, Router } from 'itty-router';
import { heldBytes } from './bytes-response.ts';
import { HttpProblem, problemResponse, WebProblem } from './problem.ts';

/** What a host's adapter knows about the connection a request came on. */
export interface ClientInfo {
  /** The peer's IP address, as the socket reports it. */
  readonly remoteAddress?: string;
}

/** A request as a route handler sees it: `params` are the path's named segments, as sent. */
export interface Call {
  readonly request: Request;
  readonly url: URL;
  readonly params: Readonly<Record<string, string>>;
}

export type RouteHandler = (call: Call) => Promise<Response> | Response;

/** One path and its handlers. Paths use itty-router's syntax (`/history/:node_id`); first match wins. */
export interface Route {
  readonly path: string;
  /** Also answers HEAD. */
  readonly get?: RouteHandler;
  readonly post?: RouteHandler;
  readonly delete?: RouteHandler;
}

/** Headers to add to an answer. */
export type HeaderSet = Readonly<Record<string, string>> | undefined;

/** What cross-origin pages may do: the service's policy, asked per request. */
export interface CorsPolicy {
  /** Headers for the answer to a GET or HEAD; `route` is undefined for an unknown path. `vary` is appended, the rest set. */
  read(request: Request, url: URL, route: Route | undefined): HeaderSet;
  /** Headers beside `Allow` on the 204 answer to OPTIONS on a known path. */
  preflight(request: Request, url: URL, route: Route): HeaderSet;
}

/** Grants nothing to any origin. */
export const NO_CORS: CorsPolicy = { read: () => undefined, preflight: () => undefined };

export interface ServiceOptions<A extends unknown[]> {
  readonly routes: readonly Route[];
  readonly cors?: CorsPolicy;
  /** Runs before the path is looked up, with the arguments the service was called with; throws a problem to refuse. */
  readonly guard?: (request: Request, url: URL, ...args: A) => void | Promise<void>;
  /** The problem for an error that is not an HttpProblem (a domain error the service answers); undefined: a 500. */
  readonly toProblem?: (error: unknown) => HttpProblem | undefined;
  /** Told about failures the client only sees as a 500. */
  readonly onError?: (error: unknown) => void;
}

/** The methods `route` answers, as `Allow` lists them. */
export function allowOf(route: Route): string {
  return [...(route.get ? ['GET', 'HEAD'] : []), ...(route.post ? ['POST'] : []), ...(route.delete ? ['DELETE'] : []), 'OPTIONS'].join(', ');
}

function setHeaders(headers: Headers, extra: HeaderSet): void {
  for (const [name, value] of Object.entries(extra ?? {})) {
    if (name === 'vary') headers.append(name, value);
    else headers.set(name, value);
  }
}

/** `response` with `extra` headers and, for HEAD, no body. */
function finish(request: Request, response: Response, extra: HeaderSet): Response {
  if (request.method === 'HEAD' && (heldBytes(response) !== undefined || response.body !== null)) {
    // HEAD is GET without the body (an event stream's subscription ends at once; a held body is
    // left untouched, never made into a stream).
    if (heldBytes(response) === undefined) response.body?.cancel().catch(() => {});
    response = new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
  }
  try {
    // A service's own responses have mutable headers: set them in place rather than copy the
    // response (a copy per request shows at thousands of requests a second).
    setHeaders(response.headers, extra);
    return response;
  } catch {
    // Immutable headers (a Response from elsewhere): copy.
    const copy = new Response(response.body, { status: response.status, statusText: response.statusText, headers: response.headers });
    setHeaders(copy.headers, extra);
    return copy;
  }
}

const NOSNIFF = { 'x-content-type-options': 'nosniff' } as const;

// One spelling per resource: itty-router would match `/status/` as `/status`; a trailing slash names nothing.
function namesNothing(pathname: string): boolean {
  return pathname.length > 1 && pathname.endsWith('/');
}

/** Builds the fetch handler of a service. It never rejects: failures become problem details. */
export function createService<A extends unknown[] = []>(options: ServiceOptions<A>): (request: Request, ...args: A) => Promise<Response> {
  const cors = options.cors ?? NO_CORS;
  const onError = options.onError ?? (() => {});
  const router = Router<IRequest, [URL]>();
  const byPath = new Map<string, Route>();
  for (const route of options.routes) {
    byPath.set(route.path, route);
    const call = (handler: RouteHandler) => (request: IRequest, url: URL) => handler({ request: request as unknown as Request, url, params: request.params });
    if (route.get) router.get(route.path, call(route.get)).head(route.path, call(route.get));
    if (route.post) router.post(route.path, call(route.post));
    if (route.delete) router.delete(route.path, call(route.delete));
  }

  /** The route whose path `pathname` is, whatever the method. */
  function routeOf(pathname: string): Route | undefined {
    if (namesNothing(pathname)) return undefined;
    const entry = router.routes.find(([method, pattern]) => method !== 'ALL' && pattern.test(pathname));
    return byPath.get(entry?.[3] ?? '');
  }

  // Matched only when no route above answered: OPTIONS, a wrong method, or an unknown path.
  router.all('*', (request: IRequest, url: URL) => {
    const route = routeOf(url.pathname);
    if (route === undefined) throw new WebProblem('not-found', `no resource at ${url.pathname}`);
    const allow = allowOf(route);
    if (request.method === 'OPTIONS') {
      const headers = new Headers({ allow });
      setHeaders(headers, cors.preflight(request as unknown as Request, url, route));
      return new Response(null, { status: 204, headers });
    }
    throw new WebProblem('method-not-allowed', `${url.pathname} takes ${allow}, not ${request.method}`, {}, { allow });
  });

  function problemOf(error: unknown): HttpProblem {
    const problem = error instanceof HttpProblem ? error : options.toProblem?.(error);
    if (problem !== undefined) return problem;
    onError(error);
    return new WebProblem('internal', 'the request failed unexpectedly');
  }

  async function answer(request: Request, url: URL, args: A): Promise<Response> {
    await options.guard?.(request, url, ...args);
    if (namesNothing(url.pathname)) throw new WebProblem('not-found', `no resource at ${url.pathname}`);
    return (await router.fetch(request, url)) as Response;
  }

  return async (request: Request, ...args: A): Promise<Response> => {
    const url = new URL(request.url);
    let response: Response;
    try {
      response = await answer(request, url, args);
    } catch (error) {
      response = problemResponse(problemOf(error));
    }
    const reading = request.method === 'GET' || request.method === 'HEAD';
    // itty-router notes the path of the route that answered; others (refusals) are looked up.
    const route = reading ? (byPath.get((request as unknown as IRequest).route) ?? routeOf(url.pathname)) : undefined;
    const extra = reading ? { ...NOSNIFF, ...cors.read(request, url, route) } : NOSNIFF;
    return finish(request, response, extra);
  };
}
