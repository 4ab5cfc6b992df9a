/**
 * Payloads of the chain's gossip topics (node-api.md §6 leaves them open; docs/network.md tabulates
 * them). Blocks and transactions travel in their canonical encodings; the rest are small structs.
 */

import { MAX_BLOCKS_PER_RESPONSE } from '../chain/chain.ts';
import { array, bytes32, fixedBytes, type Infer, struct, u16, uint53, varBytes } from '../encoding/codec.ts';

/** mesh-heights: a node's tip, announced to new peers and periodically. */
export const heightCodec = struct({ height: uint53, hash: bytes32 }, 'height announcement');

/** Most locator hashes in a sync request: enough to find a fork point below a 2^31-block chain. */
export const MAX_LOCATOR = 64;

/**
 * mesh-syncreq: `requester` asks `target` for main-chain blocks after the first locator hash the
 * target holds on its main chain (the locator runs from the requester's tip back to genesis).
 */
export const syncRequestCodec = struct(
  {
    target: bytes32,
    request_id: fixedBytes(8),
    locator: array(bytes32, MAX_LOCATOR),
    max_blocks: u16,
  },
  'sync request',
);

/** Encoded blocks in one sync response stay under this many bytes (gossip frames are 4 MiB). */
export const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

/** mesh-syncresp: the answer, addressed to the requester. */
export const syncResponseCodec = struct(
  {
    requester: bytes32,
    request_id: fixedBytes(8),
    /** The responder's tip height, so the requester knows whether to ask again. */
    tip_height: uint53,
    blocks: array(varBytes(MAX_RESPONSE_BYTES), MAX_BLOCKS_PER_RESPONSE),
  },
  'sync response',
);

export type HeightAnnouncement = Infer<typeof heightCodec>;
export type SyncRequest = Infer<typeof syncRequestCodec>;
export type SyncResponse = Infer<typeof syncResponseCodec>;
