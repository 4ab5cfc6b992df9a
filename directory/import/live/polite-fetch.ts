/**
 * Fetching a public source's page as a well-behaved client: one request at a time, a User-Agent
 * naming the tool, 429 answered by waiting the Retry-After the service asks for, and failures a
 * retry can cure (5xx, a dropped connection, a body cut short, a timeout) retried with a doubling
 * back-off. The whole body is read inside the attempt, so a connection dropped halfway is retried
 * like any other failure. Runtime-neutral: web fetch and timers only.
 */

export interface PoliteFetchOptions {
  /** Attempts per page before the import gives up (default 6). */
  readonly attempts?: number;
  /** First back-off after a failure (ms), doubling each time (default 1000). */
  readonly backoffMs?: number;
  /** Longest wait for one back-off or Retry-After (ms, default 5 minutes). */
  readonly maxWaitMs?: number;
  /** One attempt's time limit, body included (ms, default 120 s). */
  readonly timeoutMs?: number;
  /** Told before every wait: what failed and how long the wait is. */
  readonly onRetry?: (reason: string, waitMs: number) => void;
  /** Sent as the User-Agent (see userAgent). */
  readonly userAgent?: string;
  /** Milliseconds since the epoch, for Retry-After given as a date (default Date.now). */
  readonly now?: () => number;
  /**
   * Hosts that have answered in this run (added to as they answer). A host not in it that cannot
   * be reached at all is given up on at once (SourceUnreachableError) rather than retried.
   */
  readonly reached?: Set<string>;
}

/**
 * The client's User-Agent: the tool, and the contact the user gives (`--contact`), as the
 * Wikimedia User-Agent policy asks of every client of its services.
 */
export function userAgent(contact: string | undefined): string {
  return `mesh-directory-import/0.1 (manufacturer directory importer${contact ? `; ${contact}` : ''})`;
}

/** A page that could not be fetched after every attempt, with the last reason. */
export class FetchFailedError extends Error {}

/**
 * A source this run has never reached could not be reached at all: its name did not resolve, or no
 * route or listener answered. A machine offline gets this on its first request, where retrying
 * with back-off only made the user wait half a minute for the same answer.
 */
export class SourceUnreachableError extends FetchFailedError {}

// Failures to reach a host at all (getaddrinfo, connect), as Node's and Deno's fetch report them.
const UNREACHABLE = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'ECONNREFUSED', 'ENETUNREACH', 'EHOSTUNREACH']);

function unreachableCode(error: unknown): string | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && UNREACHABLE.has(e.code)) return e.code;
  }
  return undefined;
}

const RETRYABLE = new Set([408, 425, 429, 500, 502, 503, 504]);

/** Retry-After (RFC 9110 §10.2.3: seconds, or an HTTP date) in ms, or undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What to ask: headers, and a form body to POST (a GET without one). */
export interface PoliteRequest {
  readonly headers: Record<string, string>;
  readonly form?: string;
  /**
   * Told a retryable failure's status and body: a reason not to retry it (a service's own time
   * limit, which the same request would reach again), or undefined.
   */
  readonly stopRetrying?: (status: number, body: string) => string | undefined;
}

/** The body of `url` as text, fetched with the rules above; rejects with FetchFailedError. */
export async function politeFetch(url: string, request: PoliteRequest, options: PoliteFetchOptions = {}): Promise<string> {
  const attempts = options.attempts ?? 6;
  const backoff = options.backoffMs ?? 1000;
  const maxWait = options.maxWaitMs ?? 300_000;
  const timeout = options.timeoutMs ?? 120_000;
  const now = options.now ?? Date.now;
  let reason = '';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    let wait = Math.min(maxWait, backoff * 2 ** (attempt - 1));
    try {
      const headers = { 'user-agent': options.userAgent ?? userAgent(undefined), ...request.headers };
      const init: RequestInit =
        request.form === undefined
          ? { headers }
          : { method: 'POST', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: request.form };
      const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeout) });
      options.reached?.add(new URL(url).host);
      if (response.ok) return await response.text();
      reason = `HTTP ${response.status}`;
      const stop = request.stopRetrying && RETRYABLE.has(response.status) ? request.stopRetrying(response.status, await response.text()) : undefined;
      if (stop === undefined) await response.body?.cancel().catch(() => {});
      if (stop !== undefined) throw new FetchFailedError(`${url}: ${reason}: ${stop}`);
      if (!RETRYABLE.has(response.status)) throw new FetchFailedError(`${url}: ${reason}`);
      const asked = retryAfterMs(response.headers.get('retry-after'), now());
      if (asked !== undefined) {
        wait = Math.min(maxWait, asked);
        reason += `, Retry-After ${response.headers.get('retry-after')}`;
      }
    } catch (error) {
      if (error instanceof FetchFailedError) throw error;
      const cause = (error as Error).cause as Error | undefined;
      reason = `${(error as Error).message}${cause?.message ? ` (${cause.message})` : ''}`;
      // A host that answered earlier in the run is having a blip: retry. One never reached is not there.
      if (unreachableCode(error) !== undefined && !options.reached?.has(new URL(url).host)) {
        throw new SourceUnreachableError(`${new URL(url).host} cannot be reached: ${reason}`);
      }
    }
    if (attempt === attempts) break;
    options.onRetry?.(reason, wait);
    await sleep(wait);
  }
  throw new FetchFailedError(`${url}: gave up after ${attempts} attempts; last: ${reason}`);
}
