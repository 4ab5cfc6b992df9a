/**
 * /blocks/stream's follower of the main chain: the blocks from a height on, replayed from the store
 * and then live, with neither a gap nor a duplicate at the seam (docs/node-api.md, "Replay and
 * resume").
 *
 * It is a cursor, `next`: the height of the next block to send. While `next` is below the tip it
 * reads pages of block objects from the store, no more at a time than the client's queue has room
 * for, and waits for the client to read before the next page; so a long chain is replayed in bounded
 * memory and a slow client only falls behind, it is not cut off. Once at the tip it sends each
 * block the chain connects at `next` as it comes. A block the chain connects while the cursor is
 * reading, or waiting, is not held: the cursor reads it from the store when it gets there. Replay
 * and live are one walk along the main chain, so the seam needs no buffer and no de-duplication.
 *
 * A reorganisation that takes back blocks already sent moves the cursor back to the first of them:
 * the client is sent the new branch from there, so a height at or below one it already has means
 * "from here on, these replace what you had". A page read while the chain changed is dropped and
 * read again.
 */

import { type BlockEvent, blockEvent } from '../ledger/block.ts';
import type { Flow, Unsubscribe } from '../web/sse.ts';
import type { Chain } from './chain.ts';

/** Blocks read from the store at a time. */
export const REPLAY_PAGE = 100;

/** A flow that never makes the follower wait, for a listener that takes everything at once. */
export const UNPACED: Flow = { room: () => Number.POSITIVE_INFINITY, drained: () => Promise.resolve() };

export interface FollowOptions {
  /** Paces the replay (default: UNPACED). */
  readonly flow?: Flow;
  /** Told when the store fails a read; the follower has stopped then. */
  readonly onError?: (error: unknown) => void;
}

/**
 * Sends `listener` the main chain's blocks from height `from` on (null: from the next block to
 * come), paced by `flow`, until the returned function is called. Blocks below the oldest held (a
 * light node's base) are skipped.
 */
export function followBlocks(chain: Chain, from: number | null, listener: (event: BlockEvent) => void, options: FollowOptions = {}): Unsubscribe {
  const flow = options.flow ?? UNPACED;
  let next = from ?? chain.tip.height + 1;
  let stopped = false;
  // A read or a wait for room is under way; `woken` says a block came meanwhile.
  let busy = false;
  let woken = false;
  // Moves whenever a reorganisation takes back blocks: a page read across it is stale.
  let epoch = 0;

  const walk = async (): Promise<void> => {
    busy = true;
    try {
      while (!stopped) {
        woken = false;
        await flow.drained();
        const room = flow.room();
        if (stopped || room === 0) return;
        if (next < chain.base) next = chain.base;
        const start = next;
        const seen = epoch;
        const page = await chain.blockEventsFrom(start, Math.min(REPLAY_PAGE, room));
        if (stopped) return;
        if (seen !== epoch) continue;
        for (const event of page) listener(event);
        next = start + page.length;
        // At the tip: live from here, unless a block came while the page was read.
        if (page.length === 0 && !woken) return;
      }
    } catch (error) {
      stop();
      options.onError?.(error);
    } finally {
      busy = false;
    }
  };

  const unsubscribe = chain.subscribe((event) => {
    if (stopped) return;
    if (event.type === 'disconnected') {
      const height = event.block.header.height;
      if (height < next) next = height;
      if (busy) epoch++;
      return;
    }
    if (event.type !== 'connected') return;
    if (!busy && event.block.header.height === next && flow.room() > 0) {
      next++;
      listener(blockEvent(event.block));
      return;
    }
    woken = true;
    if (!busy) void walk();
  });
  function stop(): void {
    stopped = true;
    unsubscribe();
  }
  void walk();
  return stop;
}
