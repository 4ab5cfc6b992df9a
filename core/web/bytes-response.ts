/**
 * Responses whose whole body is bytes at hand: JSON answers, problems, fixed bodies.
 *
 * A Response made with a body makes a web byte stream for it at once, and a host reads the body
 * back through that stream. On Node (undici) the two cost tens of microseconds, more than the
 * directory's search itself. A host that writes such bodies to its sockets itself
 * (host-node/http-server.ts) calls `holdBodies()`; from then on `bytesResponse` makes a Response
 * without a stream that holds its bytes, which the host takes with `heldBytes` and writes at once.
 * Every other reader still gets the body: the stream is made the first time anything asks for it.
 * Without `holdBodies()` (Deno, browsers, tests in one process) it is a plain Response.
 *
 * A held response's body exists for JavaScript readers only: a server that reads a Response's
 * internal body (Deno.serve, a service worker) would send it empty. So only a host that writes
 * answers itself, with `heldBytes`, may call `holdBodies()`, and it holds for the whole process.
 *
 * @example
 * const response = bytesResponse(new TextEncoder().encode('{"ok":true}'), { headers: { 'content-type': 'application/json' } });
 * await response.json(); // { ok: true }, held or not
 */

let holding = false;

/** Makes `bytesResponse` hold bodies for the rest of the process (idempotent). */
export function holdBodies(): void {
  holding = true;
}

// Statuses whose responses have no body (the fetch standard's "null body status").
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/** A Response holding its body's bytes; its stream, if anyone asks, is made from them. */
class HeldResponse extends Response {
  readonly held: Uint8Array<ArrayBuffer>;
  whole: Response | undefined;

  constructor(held: Uint8Array<ArrayBuffer>, init: ResponseInit) {
    if (NULL_BODY_STATUSES.has(init.status ?? 200)) throw new TypeError(`a response with status ${init.status} cannot have a body`);
    super(null, init);
    this.held = held;
  }

  /** The same answer as a plain Response, made once: what every body reader reads. */
  plain(): Response {
    return (this.whole ??= new Response(this.held, { status: this.status, statusText: this.statusText, headers: this.headers }));
  }

  override arrayBuffer(): Promise<ArrayBuffer> {
    return this.plain().arrayBuffer();
  }
  override blob(): Promise<Blob> {
    return this.plain().blob();
  }
  override bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return this.plain().bytes();
  }
  override formData(): Promise<FormData> {
    return this.plain().formData();
  }
  override json(): Promise<unknown> {
    return this.plain().json();
  }
  override text(): Promise<string> {
    return this.plain().text();
  }
  override clone(): Response {
    const init = { status: this.status, statusText: this.statusText, headers: this.headers };
    // Once the twin exists, its body is the one to copy (it may be read already); the headers are always this response's.
    return this.whole === undefined ? new HeldResponse(this.held, init) : new Response(this.whole.clone().body, init);
  }
}

// `body` and `bodyUsed` are accessors of Response.prototype: the held response answers them from its plain twin.
Object.defineProperties(HeldResponse.prototype, {
  body: {
    get(this: HeldResponse): ReadableStream<Uint8Array> | null {
      return this.plain().body;
    },
  },
  bodyUsed: {
    get(this: HeldResponse): boolean {
      return this.whole?.bodyUsed ?? false;
    },
  },
});

const encoder = new TextEncoder();

/** A response whose body is `body` (text is sent as UTF-8; bytes are copied, as a Response copies them). */
export function bytesResponse(body: Uint8Array | string, init: ResponseInit = {}): Response {
  if (!holding) return new Response(typeof body === 'string' ? encoder.encode(body) : (body as Uint8Array<ArrayBuffer>), init);
  return new HeldResponse(typeof body === 'string' ? encoder.encode(body) : body.slice(), init);
}

/** The body of `response` when it is held and nobody has read it yet: the bytes to write as they are. */
export function heldBytes(response: Response): Uint8Array | undefined {
  return response instanceof HeldResponse && response.whole === undefined ? response.held : undefined;
}
