/**
 * The chain: GET /history/:node_id, /transactions/:node_id and /beacon, POST /transfer, and the
 * /blocks/stream and /transactions/stream event streams (node-api.md §4–§6).
 */
import type { History, TxListItem } from '../../chain/readmodel.ts';
import type { BlockEvent } from '../../ledger/block.ts';
import type { Recipient } from '../../names/names.ts';
import type { Flow, Unsubscribe } from '../../web/sse.ts';
import type { Feature } from '../feature.ts';
import { BLOCK_STREAM_PARAMS, blockStreamFrom, lastEventIdParam, nodeIdParam, transferRequest, txPageParams } from '../input.ts';

/** An event of /transactions/stream (node-api.md §6); amount is a decimal string of base units. */
export interface TxStreamEvent {
  id: string;
  origin: string;
  kind: string;
  amount: string;
}

/**
 * What /transactions/stream carries: a transaction event at its position in the node's feed (the
 * frame's `id:`), or, first on a resumed stream that may have lost some, `missed`: the
 * `Last-Event-ID` it resumed after and the position of the oldest event still held (null: none).
 */
export type TxFeedItem =
  | { readonly kind: 'tx'; readonly seq: number; readonly event: TxStreamEvent }
  | { readonly kind: 'missed'; readonly after: number; readonly first_held: number | null };

/**
 * Unread bytes one /transactions/stream client may hold before it is closed: a bound in bytes, so
 * that the replay of the whole feed (1,024 events of about 200 bytes) fits whole.
 */
export const TX_STREAM_MAX_QUEUED_BYTES = 1024 * 1024;

export interface ChainService {
  history(node: Uint8Array): Promise<History>;
  transactions(node: Uint8Array, options: { limit?: number; before?: number }): Promise<TxListItem[]>;
  beacon(): { height: number; hash: string };
  /**
   * Signs a Transfer from this node to a node or a name's holder, pools and broadcasts it; resolves
   * to its tx id (hex). Throws LedgerRuleError or MempoolError, answered as their tables say, and
   * NameError 'unknown' (404) for a name nobody holds.
   */
  transfer(to: Recipient, amount: bigint): Promise<string>;
  /**
   * The main chain's blocks from height `from` on (null: from the next to come), the held ones read
   * from the store no faster than `flow` has room for, then live; after a reorganisation, again from
   * the fork on. `end` is called if the node cannot go on.
   */
  followBlocks(from: number | null, listener: (event: BlockEvent) => void, flow?: Flow, end?: () => void): Unsubscribe;
  /**
   * The transactions put on /transactions/stream from now on; with `after` (a Last-Event-ID), first
   * those the node still holds after that position, told first when some may be lost (tx-feed.ts).
   */
  followTransactions(after: number | null, listener: (item: TxFeedItem) => void): Unsubscribe;
}

const TX_PAGE_PARAMS: readonly string[] = ['limit', 'before'];

// The event streams come before the `:node_id` routes they share a prefix with: first match wins.
export const chainRoutes: Feature<ChainService> = (service, { json, query, readJson, reader, stream }) => [
  {
    path: '/blocks/stream',
    get: (call) => {
      const from = blockStreamFrom(query(call.url, BLOCK_STREAM_PARAMS), call.request.headers.get('last-event-id'));
      return stream<BlockEvent>(call, (listener, end, flow) => service.followBlocks(from, listener, flow, end), { allowed: BLOCK_STREAM_PARAMS, id: (block) => block.index });
    },
  },
  {
    path: '/transactions/stream',
    get: (call) => {
      const after = lastEventIdParam(call.request.headers.get('last-event-id'));
      // A `missed` frame has no id, so an EventSource keeps the id it resumed after until a transaction comes.
      return stream<TxFeedItem>(call, (listener) => service.followTransactions(after, listener), {
        id: (item) => (item.kind === 'tx' ? item.seq : undefined),
        type: (item) => (item.kind === 'tx' ? undefined : 'missed'),
        data: (item) => (item.kind === 'tx' ? item.event : { after: item.after, first_held: item.first_held }),
        maxQueuedBytes: TX_STREAM_MAX_QUEUED_BYTES,
      });
    },
  },
  reader('/history/:node_id', ({ params }) => service.history(nodeIdParam(params.node_id!))),
  {
    path: '/transactions/:node_id',
    get: async ({ url, params }) => {
      const page = txPageParams(query(url, TX_PAGE_PARAMS));
      return json(await service.transactions(nodeIdParam(params.node_id!), page));
    },
  },
  reader('/beacon', () => service.beacon()),
  {
    path: '/transfer',
    post: async ({ request, url }) => {
      query(url);
      const { to, amount } = transferRequest(await readJson(request));
      return json({ tx_id: await service.transfer(to, amount) }, 201);
    },
  },
];
