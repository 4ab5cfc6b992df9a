/**
 * A token bucket per client: each client may make `burst` requests at once and `perSecond` on
 * average after that. The defaults (20 per second, burst 120) are far above what a person or an
 * agent paging through results does, and far below a flood.
 *
 * Memory stays bounded: a bucket that has refilled completely is the same as no bucket, so idle
 * ones are dropped when the table grows past `maxClients`; if every bucket is still busy, the
 * oldest are dropped (those clients get a fresh burst, which is the safe direction to fail in).
 */
import type { Clock } from './data-source.ts';

export interface RateLimitOptions {
  /** Tokens added per second; 0 turns the limit off. */
  readonly perSecond: number;
  /** Bucket size: requests a client may make at once. */
  readonly burst: number;
  /** Clients tracked before idle buckets are swept (default 100,000). */
  readonly maxClients?: number;
}

export type TakeResult = { readonly ok: true } | { readonly ok: false; readonly retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  at: number;
}

export class TokenBucketLimiter {
  readonly #perMs: number;
  readonly #burst: number;
  readonly #maxClients: number;
  readonly #clock: Clock;
  readonly #buckets = new Map<string, Bucket>();

  constructor(options: RateLimitOptions, clock: Clock) {
    if (!(options.perSecond >= 0) || !Number.isFinite(options.perSecond)) throw new RangeError('perSecond must be a finite number ≥ 0');
    if (!Number.isInteger(options.burst) || options.burst < 1) throw new RangeError('burst must be an integer ≥ 1');
    this.#perMs = options.perSecond / 1000;
    this.#burst = options.burst;
    this.#maxClients = options.maxClients ?? 100_000;
    this.#clock = clock;
  }

  /** Clients currently tracked. */
  get size(): number {
    return this.#buckets.size;
  }

  /** Takes one token for `client`, or says how many whole seconds until one is available. */
  take(client: string): TakeResult {
    if (this.#perMs === 0) return { ok: true };
    const now = this.#clock.now();
    let bucket = this.#buckets.get(client);
    if (bucket === undefined) {
      if (this.#buckets.size >= this.#maxClients) this.#sweep(now);
      bucket = { tokens: this.#burst, at: now };
      this.#buckets.set(client, bucket);
    } else {
      bucket.tokens = this.#refilled(bucket, now);
      bucket.at = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.#perMs / 1000)) };
  }

  /**
   * The RateLimit-Policy and RateLimit fields (IETF httpapi draft "RateLimit header fields for
   * HTTP", -09/-10) after a take by `client`, or undefined when the limit is off. The bucket as a
   * quota policy: `q` the burst, `w` the seconds it takes to refill from empty; `r` the whole
   * tokens left, `t` the seconds until the bucket is full again, or after a refusal until the next
   * token (the Retry-After).
   */
  fields(client: string, take: TakeResult): { 'ratelimit-policy': string; ratelimit: string } | undefined {
    if (this.#perMs === 0) return undefined;
    const tokens = this.#buckets.get(client)?.tokens ?? this.#burst;
    const window = Math.ceil(this.#burst / this.#perMs / 1000);
    const reset = take.ok ? Math.ceil((this.#burst - tokens) / this.#perMs / 1000) : take.retryAfterSeconds;
    return {
      'ratelimit-policy': `"burst";q=${this.#burst};w=${window}`,
      ratelimit: `"burst";r=${Math.floor(tokens)};t=${reset}`,
    };
  }

  #refilled(bucket: Bucket, now: number): number {
    // A clock that steps back must not drain a bucket.
    return Math.min(this.#burst, bucket.tokens + Math.max(0, now - bucket.at) * this.#perMs);
  }

  #sweep(now: number): void {
    for (const [client, bucket] of this.#buckets) {
      if (this.#refilled(bucket, now) >= this.#burst) this.#buckets.delete(client);
    }
    // Still full of busy clients: drop the least recently created, a tenth at a time.
    if (this.#buckets.size >= this.#maxClients) {
      let drop = Math.max(1, Math.floor(this.#maxClients / 10));
      for (const client of this.#buckets.keys()) {
        if (drop-- === 0) break;
        this.#buckets.delete(client);
      }
    }
  }
}

/**
 * The rate-limit key of a remote address: the address itself for IPv4, its /64 network for IPv6
 * (one host usually holds a whole /64, so per-address keys would not limit it).
 */
export function clientKeyOf(address: string | undefined): string {
  if (!address) return 'unknown';
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (v4) return v4[1]!;
  if (!address.includes(':')) return address;
  return `${expandIpv6(address).slice(0, 4).join(':')}::/64`;
}

function expandIpv6(address: string): string[] {
  const bare = address.replace(/%.*$/, '').replace(/^\[|\]$/g, '').toLowerCase();
  const [head = '', tail] = bare.split('::', 2);
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0');
  return [...left, ...fill, ...right].map((group) => group.replace(/^0+(?=.)/, ''));
}
