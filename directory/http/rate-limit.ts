/**
 * A token bucket per client: each client may make `burst` requests at once and `perSecond` on
 * average after that. The defaults (20 per second, burst 120) are far above what a person or an
 * agent paging through results does, and far below a flood.
 *
 * The buckets live in one fixed table of `maxClients` slots in a buffer that threads can share
 * (`bucketMemory`): every thread of a server that serves on several (directory/adapter/threads.ts)
 * counts against the same buckets, so a client gets its limit once, whichever thread its
 * connections land on. A slot is found by a hash of the client's key among 8 neighbours; a
 * client without one takes an empty slot, else a full bucket's (a bucket that has refilled
 * completely is the same as no bucket), else the least recently used one, whose client then gets
 * a fresh burst: the safe direction to fail in when the table is full of busy clients.
 */
import type { Clock } from './data-source.ts';

export interface RateLimitOptions {
  /** Tokens added per second; 0 turns the limit off. */
  readonly perSecond: number;
  /** Bucket size: requests a client may make at once. */
  readonly burst: number;
  /** Clients tracked at once (default 100,000); ignored when `memory` is given, which has its own size. */
  readonly maxClients?: number;
  /** The table's memory, from `bucketMemory`: given to every thread's limiter, they share the buckets. */
  readonly memory?: ArrayBufferLike;
  /**
   * Which of the threads sharing `memory` this limiter is on (default 0): the table's lock holds
   * it while taken, so that a thread that died holding it can be let go of (`releaseBucketLock`).
   */
  readonly owner?: number;
}

/** A take's outcome, with the tokens (fractional) the client has left after it. */
export type TakeResult = { readonly ok: true; readonly tokens: number } | { readonly ok: false; readonly tokens: number; readonly retryAfterSeconds: number };

const DEFAULT_MAX_CLIENTS = 100_000;
// The table: a lock word (Int32: 0, or 1 + the thread holding it) and padding, then per slot three float64: key, tokens, time of the last take.
const HEAD_BYTES = 8;
const SLOT = 3;
const SLOT_BYTES = SLOT * 8;
// Slots a key may sit in, from its hash on: a lookup reads this many.
const NEIGHBOURS = 8;

/**
 * Memory for a table of `maxClients` buckets: a SharedArrayBuffer where the runtime has one (a
 * page that is not cross-origin isolated has none, and gets a plain buffer), 24 bytes a client.
 */
export function bucketMemory(maxClients = DEFAULT_MAX_CLIENTS): ArrayBufferLike {
  if (!Number.isInteger(maxClients) || maxClients < 1) throw new RangeError('maxClients must be an integer ≥ 1');
  const bytes = HEAD_BYTES + maxClients * SLOT_BYTES;
  return typeof SharedArrayBuffer === 'function' ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes);
}

/**
 * Frees the table's lock if thread `owner` holds it: called for a thread that stopped, which may
 * have died inside a take (a worker at its heap limit is stopped wherever it is), and whose lock
 * would otherwise make every other thread's next take spin forever.
 */
export function releaseBucketLock(memory: ArrayBufferLike, owner: number): void {
  Atomics.compareExchange(new Int32Array(memory, 0, 1), 0, lockWord(owner), 0);
}

function lockWord(owner: number): number {
  if (!Number.isInteger(owner) || owner < 0 || owner >= 0x7fffffff) throw new RangeError('owner must be an integer ≥ 0');
  return owner + 1;
}

/**
 * A client's key as a number of 53 bits, never 0 (an empty slot): two 32-bit hashes of its text
 * (FNV-1a and a multiply-xorshift one), so that two clients share a bucket only by a 2⁻⁵³ chance.
 */
function keyNumber(client: string): number {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < client.length; i++) {
    const c = client.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return (a >>> 0) * 0x200000 + (b >>> 11) || 1;
}

export class TokenBucketLimiter {
  readonly #perMs: number;
  readonly #burst: number;
  readonly #clock: Clock;
  readonly #lock: Int32Array;
  readonly #slots: Float64Array;
  readonly #capacity: number;
  readonly #owner: number;

  constructor(options: RateLimitOptions, clock: Clock) {
    if (!(options.perSecond >= 0) || !Number.isFinite(options.perSecond)) throw new RangeError('perSecond must be a finite number ≥ 0');
    if (!Number.isInteger(options.burst) || options.burst < 1) throw new RangeError('burst must be an integer ≥ 1');
    this.#perMs = options.perSecond / 1000;
    this.#burst = options.burst;
    this.#clock = clock;
    this.#owner = lockWord(options.owner ?? 0);
    const memory = options.memory ?? bucketMemory(options.maxClients);
    this.#capacity = (memory.byteLength - HEAD_BYTES) / SLOT_BYTES;
    if (!Number.isInteger(this.#capacity) || this.#capacity < 1) throw new RangeError('memory is not a bucket table (see bucketMemory)');
    this.#lock = new Int32Array(memory, 0, 1);
    this.#slots = new Float64Array(memory, HEAD_BYTES, this.#capacity * SLOT);
  }

  /** Clients whose bucket is not full: those the limit currently remembers. */
  get size(): number {
    const now = this.#clock.now();
    let busy = 0;
    this.#acquire();
    for (let at = 0; at < this.#slots.length; at += SLOT) if (this.#slots[at] !== 0 && this.#refilled(at, now) < this.#burst) busy++;
    this.#release();
    return busy;
  }

  /** Takes one token for `client`, or says how many whole seconds until one is available. */
  take(client: string): TakeResult {
    if (this.#perMs === 0) return { ok: true, tokens: this.#burst };
    const now = this.#clock.now();
    const key = keyNumber(client);
    this.#acquire();
    const at = this.#slotOf(key, now);
    let tokens = this.#refilled(at, now);
    const ok = tokens >= 1;
    if (ok) tokens -= 1;
    this.#slots[at + 1] = tokens;
    this.#slots[at + 2] = now;
    this.#release();
    if (ok) return { ok, tokens };
    return { ok, tokens, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / this.#perMs / 1000)) };
  }

  /**
   * The RateLimit-Policy and RateLimit fields (IETF httpapi draft "RateLimit header fields for
   * HTTP", -09/-10) after a take, or undefined when the limit is off. The bucket as a quota policy:
   * `q` the burst, `w` the seconds it takes to refill from empty; `r` the whole tokens left, `t` the
   * seconds until the bucket is full again, or after a refusal until the next token (the Retry-After).
   */
  fields(take: TakeResult): { 'ratelimit-policy': string; ratelimit: string } | undefined {
    if (this.#perMs === 0) return undefined;
    const window = Math.ceil(this.#burst / this.#perMs / 1000);
    const reset = take.ok ? Math.ceil((this.#burst - take.tokens) / this.#perMs / 1000) : take.retryAfterSeconds;
    return {
      'ratelimit-policy': `"burst";q=${this.#burst};w=${window}`,
      ratelimit: `"burst";r=${Math.floor(take.tokens)};t=${reset}`,
    };
  }

  /** The slot holding `key`'s bucket, made (full) if it has none. Called under the lock. */
  #slotOf(key: number, now: number): number {
    const home = key % this.#capacity;
    let free = -1;
    let oldest = -1;
    for (let i = 0; i < NEIGHBOURS && i < this.#capacity; i++) {
      const at = ((home + i) % this.#capacity) * SLOT;
      const held = this.#slots[at]!;
      if (held === key) return at;
      if (free >= 0) continue;
      if (held === 0 || this.#refilled(at, now) >= this.#burst) free = at;
      else if (oldest < 0 || this.#slots[at + 2]! < this.#slots[oldest + 2]!) oldest = at;
    }
    const at = free >= 0 ? free : oldest;
    this.#slots[at] = key;
    this.#slots[at + 1] = this.#burst;
    this.#slots[at + 2] = now;
    return at;
  }

  #refilled(at: number, now: number): number {
    // A clock that steps back must not drain a bucket.
    return Math.min(this.#burst, this.#slots[at + 1]! + Math.max(0, now - this.#slots[at + 2]!) * this.#perMs);
  }

  // A spin lock: the sections it guards are a few reads and writes, and no thread waits on it for long.
  #acquire(): void {
    while (Atomics.compareExchange(this.#lock, 0, 0, this.#owner) !== 0);
  }

  #release(): void {
    Atomics.store(this.#lock, 0, 0);
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
  const bare = address
    .replace(/%.*$/, '')
    .replace(/^\[|\]$/g, '')
    .toLowerCase();
  const [head = '', tail] = bare.split('::', 2);
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0');
  return [...left, ...fill, ...right].map((group) => group.replace(/^0+(?=.)/, ''));
}
