/**
 * Which of two level tips producers build on (docs/chain.md, "Ties after a partition").
 */
import { compareBytes } from '../encoding/bytes.ts';

/** A tip as the tie-break sees it. */
export interface TieTip {
  readonly timestampMs: number;
  readonly hash: Uint8Array;
}

/**
 * Whether `a` goes before `b`: the earlier timestamp, then the lower hash. A block may carry no
 * timestamp before its producer's slot, so a producer ranked after the one that signed cannot sign
 * its way ahead by signing late; the hash, the producer's to grind, decides only between blocks of
 * one instant, as both halves of a healed partition sign.
 */
export function goesFirst(a: TieTip, b: TieTip): boolean {
  return a.timestampMs !== b.timestampMs ? a.timestampMs < b.timestampMs : compareBytes(a.hash, b.hash) < 0;
}

/** A block as a tie tip. */
export const tieTip = (block: { readonly hash: Uint8Array; readonly header: { readonly timestamp_ms: number } }): TieTip => ({
  timestampMs: block.header.timestamp_ms,
  hash: block.hash,
});
