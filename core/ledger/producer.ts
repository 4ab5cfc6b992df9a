/**
 * Who may produce the block after a given parent, and from when (DESIGN.md §4; docs/ledger.md
 * "Block production" states the rule in full).
 *
 * Producers with consensus weight are ranked for each parent by weighted sampling seeded with the
 * parent's hash: rank r is drawn with probability proportional to weight among those not yet drawn,
 * using x_r = SHA-256(parent hash ‖ r as u32) mod (remaining total weight). At most
 * MAX_RANKED_PRODUCERS are ranked. Rank r may sign from parent time + interval × (1 + r); anyone
 * else (no weight, or beyond the ranks) from parent time + interval × (1 + R) + stagger, where R is
 * the number of ranked producers and stagger = SHA-256(parent hash ‖ producer) mod interval spreads
 * unweighted producers apart so a new network converges instead of forking at every height.
 */
import { sha256 } from '../crypto/sha256.ts';
import { concatBytes } from '../encoding/bytes.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { MAX_RANKED_PRODUCERS } from './params.ts';

function bigEndian(bytes: Uint8Array): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

/**
 * The producers ranked for the block after `parentHash`, best first, from `weights` (hex id and
 * weight, ascending by id, weights > 0).
 */
export function rankProducers(parentHash: Uint8Array, weights: readonly (readonly [string, bigint])[]): string[] {
  const pool = weights.filter(([, w]) => w > 0n).map(([id, w]) => [id, w] as [string, bigint]);
  let total = pool.reduce((sum, [, w]) => sum + w, 0n);
  const ranked: string[] = [];
  const seed = new Uint8Array(36);
  seed.set(parentHash, 0);
  const view = new DataView(seed.buffer);
  while (pool.length > 0 && ranked.length < MAX_RANKED_PRODUCERS) {
    view.setUint32(32, ranked.length);
    let x = bigEndian(sha256(seed)) % total;
    let i = 0;
    while (x >= pool[i]![1]) x -= pool[i++]![1];
    const [id, w] = pool.splice(i, 1)[0]!;
    ranked.push(id);
    total -= w;
  }
  return ranked;
}

/** The schedule for the block after one parent: each producer's earliest timestamp. */
export class ProducerSchedule {
  readonly #parentHash: Uint8Array;
  readonly #parentTimestampMs: number;
  readonly #intervalMs: number;
  readonly #rank: Map<string, number>;
  /** The ranked producers, best first (hex ids). */
  readonly ranked: readonly string[];

  constructor(
    parentHash: Uint8Array,
    parentTimestampMs: number,
    intervalMs: number,
    weights: readonly (readonly [string, bigint])[],
  ) {
    this.#parentHash = parentHash;
    this.#parentTimestampMs = parentTimestampMs;
    this.#intervalMs = intervalMs;
    this.ranked = rankProducers(parentHash, weights);
    this.#rank = new Map(this.ranked.map((id, r) => [id, r]));
  }

  /** The rank of `producer`, or null when it is not ranked. */
  rankOf(producer: Uint8Array): number | null {
    return this.#rank.get(toHex(producer)) ?? null;
  }

  /** The earliest timestamp (ms) at which `producer` may sign the next block. */
  earliest(producer: Uint8Array): number {
    const interval = this.#intervalMs;
    const rank = this.rankOf(producer);
    if (rank !== null) return this.#parentTimestampMs + interval * (1 + rank);
    const stagger = Number(bigEndian(sha256(concatBytes(this.#parentHash, producer))) % BigInt(interval));
    return this.#parentTimestampMs + interval * (1 + this.ranked.length) + stagger;
  }
}

/** The hex ids back to bytes (for callers that hold ranked producers). */
export function producerId(hex: string): Uint8Array {
  return fromHex(hex, 32, 'producer');
}
