/**
 * What a feature's routes module gets from the node's API: the few ways every route answers (JSON,
 * the query, a bounded JSON body, an event stream), set up once with the API's limits. A feature
 * is a function from its narrow service interface and these tools to its routes, the way Hono
 * mounts a sub-app; handler.ts composes them under the shared policy.
 */
import type { Call, Route } from '../web/router.ts';
import type { EventFormat, Subscribe } from '../web/sse.ts';

export interface ApiTools {
  /** A JSON answer; node state changes block by block, so nothing is cached. */
  json(value: unknown, status?: number): Response;
  /** A GET route that takes no query and answers what `read` gives, as JSON. */
  reader(path: string, read: (call: Call) => unknown): Route;
  /** The query's values, refusing names not in `allowed` (none by default) and names given twice (400). */
  query(url: URL, allowed?: readonly string[]): Record<string, string>;
  /**
   * The request's JSON body within the API's byte bound, or `maxBytes` for a route whose bodies
   * carry more (415, 413, 400 otherwise). With `optional`, an empty body (with or without a JSON
   * content-type) is undefined.
   */
  readJson(request: Request, options?: { optional?: boolean; maxBytes?: number }): Promise<unknown>;
  /** The request's raw body, sent as `application/octet-stream`, within `maxBytes` (415, 413 otherwise). */
  readBytes(request: Request, options: { maxBytes: number }): Promise<Uint8Array>;
  /**
   * An SSE answer carrying the events `subscribe` delivers until the client goes away, or until the
   * subscriber calls `end`; a subscriber that replays history paces itself by the flow it is given.
   * It takes the query parameters in `allowed` (none by default; the route reads their values
   * itself); `id` gives each event's `id:` line.
   */
  stream<T>(call: Call, subscribe: Subscribe<T>, options?: StreamOptions<T>): Response;
}

/** What an event stream takes beyond its events. */
export interface StreamOptions<T> {
  readonly allowed?: readonly string[];
  readonly id?: (event: T) => string | number | undefined;
  /** What the frame's `data:` carries (default: the event). */
  readonly data?: (event: T) => unknown;
  /** The frame's `event:` type, for an event that is not a plain message (default: none). */
  readonly type?: (event: T) => string | undefined;
  /**
   * Bound the unread events by their bytes instead of their number (the API's maxQueuedEvents),
   * for a stream whose events may be large.
   */
  readonly maxQueuedBytes?: number;
  /** Another framing than SSE (for a client that asked for it); `id` is then unused. */
  readonly format?: EventFormat<T>;
}

/** A feature's routes over the part of the node it needs. */
export type Feature<S> = (service: S, tools: ApiTools) => Route[];
