/**
 * What the operator page derives from the API's answers, apart from the page itself: the chain as
 * the block stream tells it (recent producers, reorganisations seen) and a flat map of the
 * network coordinates. No DOM here, so it runs under test on every runtime.
 */
import type { BlockEvent } from '../../core/ledger/block.ts';

/** A reorganisation the block stream showed: from `height` on, the blocks held were replaced. */
export interface ForkSeen {
  readonly height: number;
  /** Blocks taken back (the held ones from `height` to the highest held then). */
  readonly depth: number;
  /** The hash held at `height` before, and the one that replaced it. */
  readonly replaced: string;
  readonly by: string;
  /** When the page saw it, ms since the epoch. */
  readonly at: number;
}

/**
 * The chain as /blocks/stream delivers it (docs/node-api.md "/blocks/stream"): a height at or
 * below one already sent means the blocks from there on replace those held; a first block after a
 * reconnect whose `prev_hash` is not the held block below it means the same one height lower.
 */
export class ChainWatch {
  readonly #keep: number;
  readonly #blocks = new Map<number, BlockEvent>();
  readonly #forks: ForkSeen[] = [];
  #top = -1;

  /** Keeps the last `keep` blocks. */
  constructor(keep = 50) {
    if (!Number.isInteger(keep) || keep < 1) throw new RangeError(`keep must be a positive integer, got ${keep}`);
    this.#keep = keep;
  }

  /** Takes the next block from the stream; `now` is when (ms). */
  add(block: BlockEvent, now: number): void {
    const held = this.#blocks.get(block.index);
    const below = this.#blocks.get(block.index - 1);
    if (held !== undefined && held.hash !== block.hash) {
      this.#fork(block.index, held.hash, block.hash, now);
    } else if (held === undefined && below !== undefined && below.hash !== block.prev_hash) {
      this.#fork(block.index - 1, below.hash, block.prev_hash, now);
    }
    this.#blocks.set(block.index, block);
    this.#top = Math.max(this.#top, block.index);
    for (const height of this.#blocks.keys()) if (height <= this.#top - this.#keep) this.#blocks.delete(height);
  }

  #fork(height: number, replaced: string, by: string, now: number): void {
    this.#forks.push({ height, depth: this.#top - height + 1, replaced, by, at: now });
    for (const h of this.#blocks.keys()) if (h >= height) this.#blocks.delete(h);
    this.#top = height - 1;
  }

  /** The height of the highest block held, or -1 before any. */
  get height(): number {
    return this.#top;
  }

  /** The last `count` blocks held, newest first. */
  recent(count: number): BlockEvent[] {
    return [...this.#blocks.values()].sort((a, b) => b.index - a.index).slice(0, count);
  }

  /** Blocks per producer among the blocks held, most first (ties by id). */
  producers(): { miner: string; blocks: number }[] {
    const counts = new Map<string, number>();
    for (const block of this.#blocks.values()) counts.set(block.miner, (counts.get(block.miner) ?? 0) + 1);
    return [...counts].map(([miner, blocks]) => ({ miner, blocks })).sort((a, b) => b.blocks - a.blocks || (a.miner < b.miner ? -1 : 1));
  }

  /** The reorganisations seen, newest first. */
  forks(): ForkSeen[] {
    return [...this.#forks].reverse();
  }
}

/** A point of the peers' map: a node and where its coordinate falls, in ms from the map's centre. */
export interface MapPoint {
  readonly id: string;
  readonly x: number;
  readonly y: number;
}

/**
 * Network coordinates (`vec`, seconds, docs/netgraph.md) flattened onto the plane that keeps most
 * of their spread: their two principal directions, found by power iteration, so distances on the
 * map approximate the predicted round trips (the heights, a per-node access delay, are left out).
 * Points come out in ms, centred on their mean.
 */
export function projectCoordinates(points: readonly { id: string; vec: readonly number[] }[]): MapPoint[] {
  if (points.length === 0) return [];
  const dims = Math.max(...points.map((p) => p.vec.length));
  const mean = new Array<number>(dims).fill(0);
  for (const p of points) for (let i = 0; i < dims; i++) mean[i]! += (p.vec[i] ?? 0) / points.length;
  const centred = points.map((p) => mean.map((m, i) => ((p.vec[i] ?? 0) - m) * 1000));
  const axes: number[][] = [];
  for (let k = 0; k < 2; k++) axes.push(principalAxis(centred, axes));
  return points.map((p, n) => ({ id: p.id, x: dot(centred[n]!, axes[0]!), y: dot(centred[n]!, axes[1]!) }));
}

const dot = (a: readonly number[], b: readonly number[]): number => a.reduce((sum, v, i) => sum + v * (b[i] ?? 0), 0);

// The direction of most spread of `rows` orthogonal to `taken`, or zeros when there is none.
function principalAxis(rows: readonly number[][], taken: readonly number[][]): number[] {
  const dims = rows[0]?.length ?? 0;
  const orthogonal = (v: number[]): number[] => {
    for (const axis of taken) {
      const d = dot(v, axis);
      for (let i = 0; i < dims; i++) v[i]! -= d * axis[i]!;
    }
    return v;
  };
  // A start no principal direction is orthogonal to in practice, fixed so the map does not jump.
  let v = orthogonal(Array.from({ length: dims }, (_, i) => 1 / (i + 1)));
  for (let round = 0; round < 100; round++) {
    const next = new Array<number>(dims).fill(0);
    for (const row of rows) {
      const d = dot(row, v);
      for (let i = 0; i < dims; i++) next[i]! += d * row[i]!;
    }
    orthogonal(next);
    const norm = Math.hypot(...next);
    if (norm < 1e-12) return new Array<number>(dims).fill(0);
    v = next.map((x) => x / norm);
  }
  return v;
}

/** A NodeId as people read it in a table: its first 8 characters. */
export const shortId = (id: string): string => `${id.slice(0, 8)}…`;
