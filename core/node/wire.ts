/**
 * What sync sends: the height announcements on the gossip topic mesh-heights, and the requests and
 * answers of the RPC protocol `sync.blocks` (docs/network.md tabulates them). Blocks travel in
 * their canonical encodings; the rest are small structs.
 */

import { MAX_BLOCKS_PER_RESPONSE } from '../chain/chain.ts';
import { array, bytes32, type Infer, option, struct, u8, u16, uint53, varBytes } from '../encoding/codec.ts';

/** mesh-heights: a node's tip, announced to new peers and periodically. */
export const heightCodec = struct({ height: uint53, hash: bytes32 }, 'height announcement');

/** The RPC protocol of sync ranges: a request answered to its requester only. */
export const SYNC_PROTOCOL = 'sync.blocks';

/** Most locator entries in a sync request: enough to find a fork point below a 2^31-block chain. */
export const MAX_LOCATOR = 64;

/** A main-chain block of the requester: where it is and what it is. */
export const locatorEntryCodec = struct({ height: uint53, hash: bytes32 }, 'locator entry');

/**
 * `sync.blocks` request: the requester's main-chain blocks by height, from the highest down. The
 * target says which of them it holds on its own main chain, and answers with blocks when that pins
 * the fork point exactly (docs/network.md, "Sync").
 */
export const syncRequestCodec = struct({ locator: array(locatorEntryCodec, MAX_LOCATOR), max_blocks: u16 }, 'sync request');

/** Encoded blocks in one sync answer stay under this many bytes, beyond the first. */
export const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

/** The bound on a `sync.blocks` answer: the blocks, their length prefixes and the rest. */
export const MAX_SYNC_ANSWER_BYTES = MAX_RESPONSE_BYTES + 64 * 1024;

/**
 * `sync.blocks` answer: the target's tip height, the index of the highest locator entry on its main
 * chain (null: none), and the main-chain blocks after that entry when the entry above it in the
 * locator is one height higher (or there is none): the fork point is then exact. Otherwise no
 * blocks: the requester narrows the gap with a denser locator.
 */
export const syncResponseCodec = struct(
  {
    tip_height: uint53,
    matched: option(u8),
    blocks: array(varBytes(MAX_RESPONSE_BYTES), MAX_BLOCKS_PER_RESPONSE),
  },
  'sync response',
);

export type HeightAnnouncement = Infer<typeof heightCodec>;
export type LocatorEntry = Infer<typeof locatorEntryCodec>;
export type SyncRequest = Infer<typeof syncRequestCodec>;
export type SyncResponse = Infer<typeof syncResponseCodec>;

/**
 * Where the fork lies after a target said which locator entry it holds (`matched`, null: none):
 * `exact` when the blocks after the matched entry are what the requester lacks (the entry above it
 * is one height higher, or it is the first), else the gap between the matched entry and the one
 * above it, which a denser locator narrows. Requester and target judge alike from this.
 */
export function forkOf(locator: readonly LocatorEntry[], matched: number | null): { exact: boolean; below: LocatorEntry | null; above: LocatorEntry | null } {
  if (matched === null) return { exact: false, below: null, above: locator[locator.length - 1] ?? null };
  const below = locator[matched]!;
  const above = matched === 0 ? null : locator[matched - 1]!;
  return { exact: above === null || above.height === below.height + 1, below, above };
}
