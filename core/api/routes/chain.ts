/**
 * The chain: GET /history/:node_id, /transactions/:node_id and /beacon, POST /transfer, /bond and
 * /unbond, and the /blocks/stream and /transactions/stream event streams (node-api.md §4–§6).
 */

import type { TxFeedItem } from '../../chain/tx-feed.ts';
import type { BlockEvent } from '../../ledger/block.ts';
import type { ChainService } from '../../node/ledger-service.ts';
import type { Feature } from '../feature.ts';
import { BLOCK_STREAM_PARAMS, blockStreamFrom, lastEventIdParam, nodeIdParam, stakeRequest, transferRequest, txPageParams } from '../input.ts';

/**
 * Unread bytes one /transactions/stream client may hold before it is closed: a bound in bytes, so
 * that the replay of the whole feed (1,024 events of about 200 bytes) fits whole.
 */
export const TX_STREAM_MAX_QUEUED_BYTES = 1024 * 1024;

const TX_PAGE_PARAMS: readonly string[] = ['limit', 'before'];

// The event streams come before the `:node_id` routes they share a prefix with: first match wins.
export const chainRoutes: Feature<ChainService> = (service, { json, query, readJson, reader, stream }) => [
  {
    path: '/blocks/stream',
    get: (call) => {
      const from = blockStreamFrom(query(call.url, BLOCK_STREAM_PARAMS), call.request.headers.get('last-event-id'));
      return stream<BlockEvent>(call, (listener, end, flow) => service.followBlocks(from, listener, flow, end), {
        allowed: BLOCK_STREAM_PARAMS,
        id: (block) => block.index,
      });
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
  {
    path: '/bond',
    post: async ({ request, url }) => {
      query(url);
      return json({ tx_id: await service.bond(stakeRequest(await readJson(request))) }, 202);
    },
  },
  {
    path: '/unbond',
    post: async ({ request, url }) => {
      query(url);
      return json({ tx_id: await service.unbond(stakeRequest(await readJson(request))) }, 202);
    },
  },
];
