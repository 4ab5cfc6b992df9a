/**
 * The node's HTTP API on `node:http`: the fetch-style handler of core/api/handler.ts behind a
 * plain Node server, streaming both ways.
 *
 * - Request bodies reach the handler as a web stream fed from the socket as the handler reads, so
 *   its byte bound (413) holds before anything is buffered; a body the handler stops reading is
 *   not read on, and the rest is discarded for a short grace, then the connection is cut.
 * - Response bodies are written chunk by chunk from their reader, waiting for `drain`, so a slow
 *   client holds back the producer (whose own bound then applies, see core/api/sse.ts), and every
 *   SSE frame goes out as soon as it is produced.
 * - A client that goes away aborts the request's signal and cancels the response body: an event
 *   stream's subscription ends with it.
 * - `close()` stops accepting, ends open event streams and resolves once the server is closed.
 * - The request's URL takes its authority from `Host` and only its path and query from the
 *   request target, so the handler's host and same-origin rules see what a browser addressed.
 * - What the handler never sees (a method fetch cannot represent, a request node:http cannot
 *   parse) is answered as problem details too.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { API_PROBLEMS, ApiProblem, problemResponse, type ApiProblemCode } from '../core/api/problem.ts';

/** A fetch-style handler, as `createNodeApi` returns. */
export type FetchHandler = (request: Request) => Promise<Response>;

export interface ApiServer {
  /** `http://HOST:PORT` as bound (the real port when 0 was asked for). */
  readonly url: string;
  /** Stops accepting, ends open response streams, and resolves once every connection is closed. */
  close(): Promise<void>;
}

// Request body bytes buffered ahead of the handler's reads.
const BODY_HIGH_WATER_BYTES = 64 * 1024;
// How long an unread request body is discarded after the answer before the connection is cut.
const DISCARD_GRACE_MS = 2000;
// How long close() lets requests in flight finish before it cuts their connections.
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
        // The handler has what it needs (or refused the body): read no further here; see `discard`.
        open = false;
        req.pause();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: BODY_HIGH_WATER_BYTES }),
  );
}

/**
 * The URL the client addressed, so the handler's host and same-origin rules compare with what a
 * browser sent: the authority from `Host`, the path and query from the request target. The target
 * is appended, not resolved: resolving `//evil.example/status` against the Host would let the
 * target name the authority and slip past both rules.
 */
function requestUrl(req: IncomingMessage, fallbackOrigin: string): URL {
  let origin = fallbackOrigin;
  if (req.headers.host) {
    try {
      origin = new URL(`http://${req.headers.host}`).origin;
    } catch {
      // Not a host a browser would send; the bound address stands in.
    }
  }
  const target = req.url ?? '/';
  try {
    // Origin-form (`/path?query`) is appended; absolute-form (`http://host/path`) names its own authority (RFC 9112 §3.2.2).
    return target.startsWith('/') ? new URL(origin + target) : new URL(target);
  } catch {
    return new URL(origin);
  }
}

function toRequest(req: IncomingMessage, fallbackOrigin: string, signal: AbortSignal): Request {
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const url = requestUrl(req, fallbackOrigin);
  const method = req.method ?? 'GET';
  if (method === 'GET' || method === 'HEAD') return new Request(url, { method, headers, signal });
  return new Request(url, { method, headers, signal, body: bodyStream(req), duplex: 'half' } as RequestInit);
}

/**
 * After the answer, a request body nobody read: discard what the client still sends (so it can
 * read the answer and stop), and cut the connection if it keeps sending past the grace.
 */
function discard(req: IncomingMessage): void {
  if (req.complete) return;
  const timer = setTimeout(() => req.socket.destroy(), DISCARD_GRACE_MS);
  timer.unref();
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
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

/** Writes `response` to `res` from its body's reader; `streams` holds the reader while it is open. */
async function send(res: ServerResponse, response: Response, streams: Set<ReadableStreamDefaultReader<Uint8Array>>): Promise<void> {
  const head: string[] = [];
  response.headers.forEach((value, name) => {
    head.push(name, value);
  });
  res.writeHead(response.status, head);
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  streams.add(reader);
  const onClose = (): void => {
    reader.cancel().catch(() => {});
  };
  res.once('close', onClose);
  try {
    // A body of unknown length may be a stream whose first chunk is far off: let the client see the head now.
    if (!response.headers.has('content-length')) res.flushHeaders();
    for (;;) {
      const { done, value } = await reader.read();
      if (done || res.destroyed) break;
      if (!res.write(value) && !(await drained(res))) break;
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

/** A problem the adapter answers itself, with the headers the handler puts on every answer. */
function lastResort(problem: ApiProblem): Response {
  const response = problemResponse(problem);
  response.headers.set('x-content-type-options', 'nosniff');
  return response;
}

// Requests node:http cannot parse, by its error code; anything else is a plain 400.
const CLIENT_ERRORS: Readonly<Record<string, [ApiProblemCode, string]>> = {
  HPE_HEADER_OVERFLOW: ['headers-too-large', 'the request headers are over node:http\'s bound'],
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
  const { status, title } = API_PROBLEMS[code];
  const body = JSON.stringify({ type: `/problems/${code}`, title, status, detail });
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\ncontent-type: application/problem+json\r\ncache-control: no-store\r\nx-content-type-options: nosniff\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** Serves `handler` on `host:port` (0 for any free port); resolves once listening. */
export function serveApi(handler: FetchHandler, host: string, port: number): Promise<ApiServer> {
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
    } catch {
      // A method the fetch API refuses to represent (TRACE, TRACK).
      await send(res, lastResort(new ApiProblem('method-not-allowed', `the node does not take ${req.method ?? 'this method'}`)), streams);
      return;
    }
    res.once('finish', () => {
      discard(req);
      closeIfIdle();
    });
    req.once('end', closeIfIdle);
    let response: Response;
    try {
      response = await handler(request);
    } catch {
      // The handler answers every failure itself; this is a last resort.
      if (!res.headersSent) await send(res, lastResort(new ApiProblem('internal', 'the request failed unexpectedly')), streams);
      return;
    }
    await send(res, response, streams);
  }

  const server = createServer((req, res) => {
    void respond(req, res);
  });
  server.on('clientError', answerClientError);

  return new Promise((resolveListening, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      base = originOf(host, typeof address === 'object' && address !== null ? address.port : port);
      let closed: Promise<void> | undefined;
      resolveListening({
        url: base,
        close: () =>
          (closed ??= new Promise<void>((done) => {
            closing = true;
            const timer = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
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
