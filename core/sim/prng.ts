/**
 * The simulator's one source of chance: xoshiro128** seeded through SHA-256, so a seed and a
 * label give the same numbers on every run and runtime. Each consumer forks a stream of its own
 * by name (`fork('latency')`), so adding draws to one part never shifts another's.
 */

import type { Random } from '../crypto/random.ts';
import { sha256 } from '../crypto/sha256.ts';

const rotl = (x: number, k: number): number => ((x << k) | (x >>> (32 - k))) >>> 0;

export class Prng implements Random {
  readonly #seed: string;
  readonly #s: Uint32Array;

  constructor(seed: string) {
    this.#seed = seed;
    const digest = sha256(new TextEncoder().encode(seed));
    const view = new DataView(digest.buffer, digest.byteOffset, 16);
    this.#s = Uint32Array.from({ length: 4 }, (_, i) => view.getUint32(4 * i, true));
    // An all-zero state would stay zero.
    if (this.#s.every((word) => word === 0)) this.#s[0] = 1;
  }

  /** An independent stream, named under this one's seed. */
  fork(label: string): Prng {
    return new Prng(`${this.#seed}/${label}`);
  }

  /** A uniform 32-bit unsigned integer. */
  next(): number {
    const s = this.#s;
    const result = Math.imul(rotl(Math.imul(s[1]!, 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1]! << 9) >>> 0;
    s[2]! ^= s[0]!;
    s[3]! ^= s[1]!;
    s[1]! ^= s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    s[3] = rotl(s[3]!, 11);
    return result;
  }

  /** A uniform number in [0, 1). */
  float(): number {
    return this.next() / 2 ** 32;
  }

  /** A uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return p > 0 && this.float() < p;
  }

  /** A draw of an exponential distribution of mean `mean` (the gaps of a Poisson process). */
  exponential(mean: number): number {
    return -Math.log(1 - this.float()) * mean;
  }

  /** `k` distinct items of `items`, in a random order. */
  sample<T>(items: readonly T[], k: number): T[] {
    const pool = [...items];
    const out: T[] = [];
    while (out.length < k && pool.length > 0) out.push(pool.splice(this.int(pool.length), 1)[0]!);
    return out;
  }

  bytes(length: number): Uint8Array {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i++) out[i] = this.next() & 0xff;
    return out;
  }
}
