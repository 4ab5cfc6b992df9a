/**
 * The base of the commands that talk to a running node (`mesh status`, `mesh send`, `mesh jobs`):
 * finds the node's HTTP address and API token in its data directory, sends requests with the bearer
 * token, reads its event streams, and turns the node's problem details into one clear line.
 *
 * A running `mesh node` records `{url, pid}` in `<data-dir>/api.json` (removed at a clean stop);
 * the token is `<data-dir>/api.token`. `--node URL` names the node directly. The data directory's
 * token goes only to the address its node recorded or to a loopback address, and only once the
 * server there has said it is this data directory's node (`GET /status`, whose `node_id` must be
 * the one in `identity.json`): a stale record whose pid was reused, or a `--node` typo, never
 * receives it. Any other node's token is given with `--token-file FILE`.
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { API_FILE, dataDirOption, readApiAddress, readNodeId, TOKEN_FILE } from '../data-dir.ts';
import { processAlive } from '../process-alive.ts';
import { option, UsageError } from './command.ts';
import { readEvents, type ServerEvent } from './events.ts';

/** Seconds a request may take before the command gives up on the node. */
const TIMEOUT_MS = 15_000;
/** The wait before a stream the node ended is opened again (EventSource's usual retry). */
const RECONNECT_MS = 1_000;

function httpUrl(text: string, name: string): string {
  const url = URL.canParse(text) ? new URL(text) : null;
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new UsageError(`${name} takes an http:// or https:// URL, got ${JSON.stringify(text)}`);
  }
  return url.href.replace(/\/$/, '');
}

/** Whether `url` names this machine: localhost, 127.0.0.0/8 or ::1. */
function isLoopback(url: string): boolean {
  const host = new URL(url).hostname;
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The options every client command takes. */
export const clientOptions = {
  'data-dir': dataDirOption,
  node: option({ value: 'URL', description: "the node's HTTP API (default: the address the running node recorded in its data directory)", parse: httpUrl }),
  'token-file': option({
    value: 'FILE',
    description: "the node's API token (default: <data-dir>/api.token, sent only to this data directory's node)",
  }),
};

/** A node answered with an error, or could not be reached: said in one line. */
export class NodeClientError extends Error {
  override readonly name = 'NodeClientError';
}

/** Problem details (RFC 9457) as the node sends them. */
interface Problem {
  title?: unknown;
  detail?: unknown;
  status?: unknown;
}

/** Where the token of a client's requests comes from. */
type TokenSource =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'data-dir'; readonly dir: string }
  | { readonly kind: 'none'; readonly why: string };

async function readToken(path: string, hint: string): Promise<string> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch (error) {
    throw new NodeClientError(`cannot read the API token ${path}: ${(error as Error).message} (${hint})`);
  }
}

/** A connection to a running node's HTTP API. */
export class NodeClient {
  /** The API's base URL, without a trailing slash. */
  readonly url: string;
  readonly #tokenSource: TokenSource;

  constructor(url: string, tokenSource: TokenSource) {
    this.url = url;
    this.#tokenSource = tokenSource;
  }

  /**
   * The node named by `--node`, or else the one running on `--data-dir`. Throws NodeClientError
   * "no node running …" when the data directory records none, or records one that has stopped.
   */
  static async find(options: { 'data-dir': string; node: string | undefined; 'token-file'?: string | undefined }): Promise<NodeClient> {
    const dataDir = resolve(options['data-dir']);
    const tokenFile = options['token-file'];
    if (options.node !== undefined) {
      const url = options.node;
      if (tokenFile !== undefined) return new NodeClient(url, { kind: 'file', path: resolve(tokenFile) });
      const recorded = isLoopback(url) ? null : await readApiAddress(dataDir).catch(() => null);
      if (isLoopback(url) || recorded?.url === url) return new NodeClient(url, { kind: 'data-dir', dir: dataDir });
      return new NodeClient(url, {
        kind: 'none',
        why: `--node ${url} is not the address the node of ${dataDir} recorded: give its API token with --token-file FILE`,
      });
    }
    const record = await readApiAddress(dataDir);
    if (record === null) {
      throw new NodeClientError(
        `no node running with data directory ${dataDir} (no ${API_FILE}; start one with mesh node --data-dir ${dataDir}, or pass --node URL)`,
      );
    }
    if (!processAlive(record.pid)) {
      throw new NodeClientError(`no node running at ${record.url} (its process ${record.pid} has ended; ${join(dataDir, API_FILE)} is left from it)`);
    }
    return new NodeClient(record.url, tokenFile !== undefined ? { kind: 'file', path: resolve(tokenFile) } : { kind: 'data-dir', dir: dataDir });
  }

  /** GETs `path` and resolves to the parsed JSON answer. */
  get<T>(path: string): Promise<T> {
    return this.#request<T>('GET', path);
  }

  /**
   * POSTs `body` as JSON with the API token; resolves to the parsed JSON answer (undefined for 204).
   * `timeoutMs` is for a route that waits on the mesh longer than the usual 15 s.
   */
  async post<T>(path: string, body: unknown, options: { timeoutMs?: number } = {}): Promise<T> {
    return this.#request<T>('POST', path, body, await this.#token(), options.timeoutMs);
  }

  /** POSTs `bytes` as `application/octet-stream` with the API token; resolves to the parsed JSON answer. */
  async postBytes<T>(path: string, bytes: Uint8Array, options: { timeoutMs?: number } = {}): Promise<T> {
    return this.#request<T>('POST', path, bytes, await this.#token(), options.timeoutMs);
  }

  async #token(): Promise<string> {
    const source = this.#tokenSource;
    if (source.kind === 'none') throw new UsageError(source.why);
    if (source.kind === 'file') {
      if (new URL(this.url).protocol === 'http:' && !isLoopback(this.url)) {
        throw new UsageError(`--node ${this.url} is plain http:// to another machine, which would send the API token in the clear: use https://`);
      }
      return readToken(source.path, 'the file given with --token-file');
    }
    // Only to this data directory's own node: a reused pid or another process must not get the token.
    const mine = await readNodeId(source.dir).catch((error: Error) => {
      throw new NodeClientError(`${error.message} (pass --data-dir of the node)`);
    });
    const { node_id: theirs } = await this.get<{ node_id?: unknown }>('/status');
    if (theirs !== mine) {
      throw new NodeClientError(
        `no node of this data directory is running at ${this.url} (it answers as node ${String(theirs)}, not ${mine} of ${source.dir})`,
      );
    }
    return readToken(join(source.dir, TOKEN_FILE), 'pass --data-dir of the node');
  }

  /** DELETEs `path` with the API token; resolves once the node has answered 2xx (204: no body). */
  async delete(path: string): Promise<void> {
    await this.#request<unknown>('DELETE', path, undefined, await this.#token());
  }

  /**
   * The server-sent events of GET `path`, as they come, until the node ends the stream or `signal`
   * aborts (which ends the iteration quietly). No time limit: a stream may be quiet for long.
   */
  async *events(path: string, signal?: AbortSignal, lastEventId?: string): AsyncGenerator<ServerEvent> {
    let response: Response;
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (lastEventId !== undefined && lastEventId !== '') headers['last-event-id'] = lastEventId;
      response = await this.#fetch('GET', path, headers, undefined, signal);
      if (!response.ok) throw new NodeClientError(problemLine(response.status, await response.text()));
      if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream') || response.body === null) {
        await response.body?.cancel();
        throw new NodeClientError(`the node at ${this.url} answered GET ${path} with something other than an event stream`);
      }
      yield* readEvents(response.body);
    } catch (error) {
      if (signal?.aborted) return;
      throw error;
    }
  }

  /**
   * Follows the event stream of GET `path` as an EventSource does: when the node ends it (it cut a
   * client that read too slowly), it is opened again a second later with `Last-Event-ID`, the id of
   * the last event seen (`lastEventId` at first), so the stream goes on where it stopped. Ends when
   * `handle` returns false or `signal` aborts; a node that cannot be reached is a NodeClientError.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler that returns nothing goes on; only false stops.
  async follow(path: string, handle: (event: ServerEvent) => boolean | void, options: { signal: AbortSignal; lastEventId?: string }): Promise<void> {
    const { signal } = options;
    let lastEventId = options.lastEventId;
    while (!signal.aborted) {
      for await (const event of this.events(path, signal, lastEventId)) {
        if (event.id !== '') lastEventId = event.id;
        if (handle(event) === false) return;
      }
      await sleep(RECONNECT_MS, undefined, { signal }).catch(() => {});
    }
  }

  async #request<T>(method: string, path: string, body?: unknown, token?: string, timeoutMs = TIMEOUT_MS): Promise<T> {
    const headers: Record<string, string> = {};
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = body instanceof Uint8Array ? 'application/octet-stream' : 'application/json';
    const response = await this.#fetch(method, path, headers, body, AbortSignal.timeout(timeoutMs));
    const text = await response.text();
    if (!response.ok) throw new NodeClientError(problemLine(response.status, text));
    if (response.status === 204) return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new NodeClientError(`the node at ${this.url} answered ${method} ${path} with something other than JSON`);
    }
  }

  /** The node's answer, or NodeClientError saying in one line why there is none. */
  async #fetch(method: string, path: string, headers: Record<string, string>, body: unknown, signal: AbortSignal | undefined): Promise<Response> {
    try {
      return await fetch(this.url + path, {
        method,
        headers,
        ...(body !== undefined && { body: body instanceof Uint8Array ? (body as Uint8Array<ArrayBuffer>) : JSON.stringify(body) }),
        ...(signal !== undefined && { signal }),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause;
      if ((error as Error).name === 'TimeoutError') throw new NodeClientError(`the node at ${this.url} did not answer in time`);
      if (cause?.code === 'ECONNREFUSED') throw new NodeClientError(`no node running at ${this.url} (connection refused)`);
      throw new NodeClientError(`cannot reach the node at ${this.url}: ${cause?.code ?? (error as Error).message}`);
    }
  }
}

/** One line for an error answer, `Insufficient free balance (402): …`, from the problem details when there are some. */
function problemLine(status: number, text: string): string {
  let problem: Problem = {};
  try {
    problem = JSON.parse(text) as Problem;
  } catch {
    // Not problem details: the status says what there is to say.
  }
  const title = typeof problem.title === 'string' ? problem.title : `HTTP ${status}`;
  const detail = typeof problem.detail === 'string' && problem.detail !== '' ? `: ${problem.detail}` : '';
  return `${title} (${status})${detail}`;
}
