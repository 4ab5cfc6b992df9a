/**
 * Who may produce the block after a given parent, and from when (DESIGN.md §4; docs/ledger.md
 * "Block production" states the rule in full).
 *
 * Producers with consensus weight are ranked for each block by weighted sampling from the state's
 * producer seed: rank r is drawn with probability proportional to weight among those not yet drawn,
 * using x_r = SHA-256(seed ‖ r as u32) mod (remaining total weight). At most MAX_RANKED_PRODUCERS
 * are ranked. Rank r may sign from parent time + interval × (1 + r); anyone else (no weight, or
 * beyond the ranks) from parent time + interval × (1 + R) + stagger, where R is the number of
 * ranked producers and stagger = SHA-256(seed ‖ producer) mod interval spreads unweighted producers
 * apart so a new network converges instead of forking at every height.
 *
 * The seed is not the parent's hash, which its producer could grind (by trying timestamps) until it
 * ranks first again: each block replaces it with SHA-256(seed ‖ producer) (`advanceSeed`), so the
 * only choice a producer has over the next ranking is whether to produce at all.
 */
import { sha256 } from '../crypto/sha256.ts';
import { concatBytes } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { MAX_RANKED_PRODUCERS } from './params.ts';
import type { LedgerState } from './state.ts';

function bigEndian(bytes: Uint8Array): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

/**
 * The producers ranked under `seed`, best first, from `weights` (hex id and weight, ascending by id,
 * weights > 0).
 */
export function rankProducers(seed: Uint8Array, weights: readonly (readonly [string, bigint])[]): string[] {
  const pool = weights.filter(([, w]) => w > 0n).map(([id, w]) => [id, w] as [string, bigint]);
  let total = pool.reduce((sum, [, w]) => sum + w, 0n);
  const ranked: string[] = [];
  const draw = new Uint8Array(36);
  draw.set(seed, 0);
  const view = new DataView(draw.buffer);
  while (pool.length > 0 && ranked.length < MAX_RANKED_PRODUCERS) {
    view.setUint32(32, ranked.length);
    let x = bigEndian(sha256(draw)) % total;
    let i = 0;
    while (x >= pool[i]![1]) x -= pool[i++]![1];
    const [id, w] = pool.splice(i, 1)[0]!;
    ranked.push(id);
    total -= w;
  }
  return ranked;
}

/** The schedule for the next block: each producer's earliest timestamp. */
export class ProducerSchedule {
  readonly #seed: Uint8Array;
  readonly #parentTimestampMs: number;
  readonly #intervalMs: number;
  readonly #rank: Map<string, number>;
  /** The ranked producers, best first (hex ids). */
  readonly ranked: readonly string[];

  constructor(seed: Uint8Array, parentTimestampMs: number, intervalMs: number, weights: readonly (readonly [string, bigint])[]) {
    this.#seed = seed;
    this.#parentTimestampMs = parentTimestampMs;
    this.#intervalMs = intervalMs;
    this.ranked = rankProducers(seed, weights);
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
    const stagger = Number(bigEndian(sha256(concatBytes(this.#seed, producer))) % BigInt(interval));
    return this.#parentTimestampMs + interval * (1 + this.ranked.length) + stagger;
  }
}

/** Ends a block's state changes: the seed that ranks the next block's producers moves on. */
export function advanceSeed(state: LedgerState, producer: Uint8Array): void {
  state.setProducerSeed(sha256(concatBytes(state.producerSeed(), producer)));
}

/** The schedule for the block after `parent`, from the parent's state. */
export function scheduleAfter(state: LedgerState, parent: { readonly timestampMs: number }, intervalMs: number): ProducerSchedule {
  return new ProducerSchedule(state.producerSeed(), parent.timestampMs, intervalMs, state.weights());
}
