/**
 * Any fetch-style handler on `node:http`: the node's API (`mesh node`) and the directory (`mesh
 * directory`) are both served by this one adapter, streaming both ways.
 *
 * - Request bodies reach the handler as a web stream fed from the socket as the handler reads, so
 *   its byte bound (413) holds before anything is buffered. An answer sent before the body was
 *   read to its end says `Connection: close`: the client must not send its next request on this
 *   connection. The rest of the body is then read and discarded until the client closes its side
 *   (or a short grace passes), so the close never resets the connection under an answer the client
 *   has not read yet.
 * - Response bodies are written from their reader: one whose end is at hand goes out in one write
 *   with its Content-Length; a longer one chunk by chunk, waiting for `drain`, so a slow client
 *   holds back the producer (whose own bound then applies, see core/web/sse.ts), and every SSE
 *   frame goes out as soon as it is produced.
 * - A client that goes away aborts the request's signal and cancels the response body: an event
 *   stream's subscription ends with it.
 * - `close()` stops accepting, ends open event streams and resolves once the server is closed.
 * - The request's URL takes its authority from `Host` and only its path and query from the
 *   request target, so the handler's host and same-origin rules see what a browser addressed.
 * - The handler hears the client's remote address (the directory's rate limit is keyed on it).
 * - A method fetch cannot represent (TRACE) still reaches the handler, on a Request that says it.
 * - What the handler never sees (a request node:http cannot parse) is answered as problem details too.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { heldBytes, holdBodies } from '../core/web/bytes-response.ts';
import { type HttpProblem, problemResponse, WEB_PROBLEMS, WebProblem, type WebProblemCode } from '../core/web/problem.ts';
import type { ClientInfo } from '../core/web/router.ts';
import type { ConnectionBalance } from './connection-balance.ts';

/** A fetch-style handler, as `createNodeApi` and `createDirectory` make. */
export type FetchHandler = (request: Request, client: ClientInfo) => Promise<Response>;

export interface HttpServer {
  /** `http://HOST:PORT` as bound (the real port when 0 was asked for). */
  readonly url: string;
  /**
   * Stops accepting, ends open response streams, lets requests in flight finish (up to `graceMs`,
   * default 2 s) and resolves once every connection is closed.
   */
  close(graceMs?: number): Promise<void>;
}

// Request body bytes buffered ahead of the handler's reads.
const BODY_HIGH_WATER_BYTES = 64 * 1024;
// How long an unread request body is discarded after the answer before the connection is cut.
const DISCARD_GRACE_MS = 2000;
// How long close() lets requests in flight finish before it cuts their connections, by default.
const CLOSE_GRACE_MS = 2000;

function originOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The request body as a web stream that reads from `req` only as fast as the handler does. */
function bodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let open = true;
  return new ReadableStream<Uint8Array>(
    {
      start(controller): void {
        req.on('data', (chunk: Uint8Array) => {
          if (!open) return;
          controller.enqueue(chunk);
          if ((controller.desiredSize ?? 0) <= 0) req.pause();
        });
        req.once('end', () => {
          if (open) controller.close();
          open = false;
        });
        req.once('error', (error) => {
          if (open) controller.error(error);
          open = false;
        });
        req.pause();
      },
      pull(): void {
        req.resume();
      },
      cancel(): void {
        // The handler has what it needs (or refused the body): read no further here; see `closeWhenDrained`.
        open = false;
        req.pause();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: BODY_HIGH_WATER_BYTES }),
  );
}

/**
 * The URL the client addressed, so the handler's host and same-origin rules, and the links it
 * makes (a receipt's status URL), see what the client sent: the authority from `Host` alone, the
 * path and query from the request target. A target such as `//evil.example/status` is read as a
 * reference whose path is `/status`; the authority it names is dropped, so it can neither slip past
 * the host and same-origin rules nor make the handler link elsewhere. An absolute-form target
 * (`http://host/path`, which only proxies are sent) must name the same authority as `Host`:
 * otherwise the two disagree about where the request goes, and it is refused (ConflictingAuthority).
 */
function requestUrl(req: IncomingMessage, fallbackOrigin: string): URL {
  const origin = req.headers.host ? originOfHost(req.headers.host, fallbackOrigin) : fallbackOrigin;
  const target = req.url ?? '/';
  let named: URL;
  try {
    named = new URL(target, origin);
  } catch {
    return new URL(origin);
  }
  // A path (the usual target) names nothing but a path and a query: the URL is made.
  if (target.startsWith('/') && !target.startsWith('//') && named.hash === '') return named;
  if (!target.startsWith('/') && named.origin !== origin) throw new ConflictingAuthority(named.host);
  return new URL(named.pathname + named.search, origin);
}

// The origins of the Host headers seen last: a server hears the same one or two on every request.
const hostOrigins = new Map<string, string | null>();

/** The origin `http://` + `host` names, or `fallback` for a host a browser would not send. */
function originOfHost(host: string, fallback: string): string {
  let origin = hostOrigins.get(host);
  if (origin === undefined) {
    try {
      origin = new URL(`http://${host}`).origin;
    } catch {
      origin = null;
    }
    if (hostOrigins.size >= 64) hostOrigins.clear();
    hostOrigins.set(host, origin);
  }
  return origin ?? fallback;
}

/** An absolute-form request target naming another authority than `Host`. */
class ConflictingAuthority extends Error {}

/**
 * A request whose `signal` is the server's own, aborted when the client leaves. Node's Request given
 * a `signal` follows it through a WeakRef and a FinalizationRegistry entry: V8's young-generation
 * collections keep both alive, so every request's signal, listener and entry moved to the old
 * generation and the directory under load ran a full collection every 2–3 s per thread, with
 * 10–16 ms pauses (`--trace-gc`). Here the signal is simply the one the server holds; `clone()`
 * keeps it. (A copy made with `new Request(request)` follows Node's internal signal instead, which
 * is never aborted: a handler that forwards the request should pass `signal` itself.)
 */
class ServedRequest extends Request {
  readonly #signal: AbortSignal;
  readonly #method: string | undefined;

  /** `method`: the method sent, when fetch refuses to carry it (see toRequest). */
  constructor(input: URL | Request, init: RequestInit, signal: AbortSignal, method?: string) {
    super(input, init);
    this.#signal = signal;
    this.#method = method;
  }

  override get signal(): AbortSignal {
    return this.#signal;
  }

  override get method(): string {
    return this.#method ?? super.method;
  }

  override clone(): Request {
    return new ServedRequest(super.clone(), {}, this.#signal, this.#method);
  }
}

// Methods the fetch API refuses to make a Request of ("forbidden methods"). node:http hands CONNECT
// to its 'connect' event, which this server does not listen to (node:http then closes the
// connection), and its parser refuses TRACK, so TRACE is what reaches here.
const FORBIDDEN_METHODS = /^(?:CONNECT|TRACE|TRACK)$/i;

function toRequest(req: IncomingMessage, fallbackOrigin: string, signal: AbortSignal): Request {
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const url = requestUrl(req, fallbackOrigin);
  const method = req.method ?? 'GET';
  if (method === 'GET' || method === 'HEAD') return new ServedRequest(url, { method, headers }, signal);
  // TRACE still goes through the handler (its route table answers 404 or 405 with Allow, its rate
  // limit counts it): a bodiless Request that says the method sent. A body it came with is never read.
  if (FORBIDDEN_METHODS.test(method)) return new ServedRequest(url, { method: 'GET', headers }, signal, method);
  return new ServedRequest(url, { method, headers, body: bodyStream(req), duplex: 'half' } as RequestInit, signal);
}

/**
 * Closes the connection of a request whose body was not read to its end once its answer is out,
 * without a reset: node:http ends the socket after an answer marked `Connection: close`, and a socket
 * closed with the client's bytes still arriving makes the kernel reset the connection, which can
 * discard the answer before the client read it. So the write side is ended (the client reads the
 * whole answer, then the FIN), what the client still sends is read and discarded, and the socket is
 * closed once the client closes its side, or cut after a grace if it keeps sending.
 */
function closeWhenDrained(req: IncomingMessage): void {
  const socket = req.socket;
  // node:http calls destroySoon() on the socket once the answer is written.
  socket.destroySoon = () => {
    socket.end();
    const timer = setTimeout(() => socket.destroy(), DISCARD_GRACE_MS);
    timer.unref();
    socket.once('end', () => socket.destroy());
    socket.once('close', () => clearTimeout(timer));
  };
  // The rest of the body goes nowhere (the handler's stream was told to stop, see bodyStream).
  req.removeAllListeners('data');
  req.resume();
}

/** Resolves true once `res` takes more, false if the connection closed first. */
function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = (): void => done(true);
    const onClose = (): void => done(false);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

/** An event stream: SSE, or the binary frames a route offers instead (core/web/sse.ts `EventFormat`). */
function isEventStream(contentType: string | null): boolean {
  return contentType !== null && (contentType.startsWith('text/event-stream') || contentType === 'application/octet-stream');
}

/**
 * Writes `response` to `res`: a held body at once, any other from its body's reader; `streams`
 * holds the reader while it is open. `req` is the request answered: an answer that goes out before
 * its body was read closes the connection (see closeWhenDrained). A head Node refuses to write (a
 * header value with a control character) cuts the connection.
 */
async function send(
  req: IncomingMessage,
  res: ServerResponse,
  response: Response,
  streams: Set<ReadableStreamDefaultReader<Uint8Array>>,
  close = false,
): Promise<void> {
  const head: string[] = [];
  response.headers.forEach((value, name) => {
    head.push(name, value);
  });
  if (!req.complete) {
    head.push('connection', 'close');
    closeWhenDrained(req);
  } else if (close) head.push('connection', 'close');
  const held = heldBytes(response);
  if (held !== undefined || response.body === null) {
    try {
      // A body at hand goes out in one write with its length, without a stream (core/web/bytes-response.ts).
      if (held !== undefined && !response.headers.has('content-length')) head.push('content-length', String(held.byteLength));
      res.writeHead(response.status, head).end(held);
    } catch (error) {
      res.destroy(error as Error);
    }
    return;
  }
  const reader = response.body.getReader();
  streams.add(reader);
  const onClose = (): void => {
    reader.cancel().catch(() => {});
  };
  res.once('close', onClose);
  try {
    // An event stream's next chunk may be far off: its head goes out at once. Any other body is
    // read ahead by one chunk, so one that fits in a chunk goes out in one write with its length.
    const live = isEventStream(response.headers.get('content-type'));
    let next = reader.read();
    const first = live ? undefined : await next;
    if (first !== undefined && !first.done) {
      next = reader.read();
      const after = await next;
      if (after.done) {
        // The whole body in one write, with its length (Node would otherwise send it chunked).
        if (!response.headers.has('content-length')) head.push('content-length', String(first.value.byteLength));
        res.writeHead(response.status, head).end(first.value);
        return;
      }
    }
    res.writeHead(response.status, head);
    // A body still in the making may be a stream whose next chunk is far off: let the client see the head now.
    if (!response.headers.has('content-length')) res.flushHeaders();
    let chunk = first?.done ? undefined : first?.value;
    for (;;) {
      if (chunk !== undefined && (res.destroyed || (!res.write(chunk) && !(await drained(res))))) break;
      const read = await next;
      if (read.done || res.destroyed) break;
      chunk = read.value;
      next = reader.read();
    }
    if (!res.destroyed) res.end();
  } catch (error) {
    // A body that fails half-way must not look complete: cut the connection.
    res.destroy(error as Error);
  } finally {
    res.off('close', onClose);
    streams.delete(reader);
  }
}

/** A problem the adapter answers itself, with the headers the kit puts on every answer. */
function lastResort(problem: HttpProblem): Response {
  const response = problemResponse(problem);
  response.headers.set('x-content-type-options', 'nosniff');
  return response;
}

// Requests node:http cannot parse, by its error code; anything else is a plain 400.
const CLIENT_ERRORS: Readonly<Record<string, [WebProblemCode, string]>> = {
  HPE_HEADER_OVERFLOW: ['headers-too-large', "the request headers are over node:http's bound"],
  ERR_HTTP_REQUEST_TIMEOUT: ['request-timeout', 'the request did not arrive in time'],
};

/**
 * Answers a request node:http could not parse (bad syntax, oversized headers, a timeout) as problem
 * details, as every other answer is, then closes the connection (node's default sends a bare status).
 */
function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [code, detail] = CLIENT_ERRORS[error.code ?? ''] ?? ['bad-request', 'the request is not valid HTTP/1.1'];
  const { status, title } = WEB_PROBLEMS[code];
  const body = JSON.stringify({ type: `/problems/${code}`, title, status, detail });
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\ncontent-type: application/problem+json\r\ncache-control: no-store\r\nx-content-type-options: nosniff\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export interface ServeOptions {
  /**
   * Share the port with other sockets that ask for it too (SO_REUSEPORT, Linux): the kernel spreads
   * new connections over them, as over the threads of one server (directory/adapter/threads.ts).
   */
  readonly reusePort?: boolean;
  /** With reusePort: keeps this server's share of connections even with the others' (connection-balance.ts). */
  readonly balance?: ConnectionBalance;
}

/** Serves `handler` on `host:port` (0 for any free port); resolves once listening. */
export function serveFetch(handler: FetchHandler, host: string, port: number, options: ServeOptions = {}): Promise<HttpServer> {
  holdBodies();
  let base = originOf(host, port);
  const streams = new Set<ReadableStreamDefaultReader<Uint8Array>>();
  let closing = false;
  // While closing, a connection whose exchange just ended is closed as soon as Node counts it idle.
  const closeIfIdle = (): void => {
    if (closing) setImmediate(() => server.closeIdleConnections());
  };

  async function respond(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const abort = new AbortController();
    // Aborted only for a client that leaves before its answer is complete.
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    let request: Request;
    try {
      request = toRequest(req, base, abort.signal);
    } catch (error) {
      const problem = new WebProblem(
        'bad-request',
        error instanceof ConflictingAuthority
          ? `the request target names ${error.message}, the Host header another authority`
          : `the request cannot be made a fetch Request: ${(error as Error).message}`,
      );
      await send(req, res, lastResort(problem), streams);
      return;
    }
    res.once('finish', closeIfIdle);
    req.once('end', closeIfIdle);
    let response: Response;
    try {
      response = await handler(request, { remoteAddress: req.socket.remoteAddress });
    } catch {
      // The handler answers every failure itself; this is a last resort.
      if (!res.headersSent) await send(req, res, lastResort(new WebProblem('internal', 'the request failed unexpectedly')), streams);
      return;
    }
    await send(req, res, response, streams, leaves(req.socket));
  }

  // Connections asked to leave (a balance between threads), counted gone when asked.
  const leaving = new WeakSet<object>();
  const leaves = (socket: object): boolean => {
    if (options.balance === undefined || leaving.has(socket) || !options.balance.shouldLeave()) return false;
    leaving.add(socket);
    return true;
  };

  const server = createServer((req, res) => {
    // respond answers every failure itself; one that escapes it cuts this connection, never the process.
    respond(req, res).catch((error: unknown) => res.destroy(error as Error));
  });
  server.on('clientError', answerClientError);
  const balance = options.balance;
  if (balance !== undefined) {
    server.on('connection', (socket: Duplex) => {
      balance.opened();
      socket.once('close', () => {
        if (!leaving.has(socket)) balance.closed();
      });
    });
  }

  return new Promise((resolveListening, reject) => {
    server.once('error', reject);
    server.listen({ port, host, reusePort: options.reusePort === true }, () => {
      server.off('error', reject);
      const address = server.address();
      base = originOf(host, typeof address === 'object' && address !== null ? address.port : port);
      let closed: Promise<void> | undefined;
      resolveListening({
        url: base,
        close: (graceMs = CLOSE_GRACE_MS) =>
          (closed ??= new Promise<void>((done) => {
            closing = true;
            const timer = setTimeout(() => server.closeAllConnections(), graceMs);
            server.close(() => {
              clearTimeout(timer);
              done();
            });
            // Event streams never end by themselves: end them, then close the connections they leave idle.
            for (const reader of streams) reader.cancel().catch(() => {});
            server.closeIdleConnections();
          })),
      });
    });
  });
}
