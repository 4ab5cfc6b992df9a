/**
 * The payment channel routes (node-api.md §3 "Payment channel", §4 the channel routes, §7;
 * docs/channels.md): POST /channels/open, POST /channels/receipt, GET /channels, GET /channels/:id,
 * POST /channels/:id/close, POST /channels/:id/expire. GET /channels/:id is ours.
 */
import type { ChannelView, CloseAnswer, ExpireAnswer, OpenRequest, Receipt, ReceiptAnswer } from '../../channels/types.ts';
import type { Feature } from '../feature.ts';
import { channelCloseRequest, channelOpenRequest, channelReceiptRequest, checkBody, EmptyBody, nodeIdParam } from '../input.ts';
import { ApiProblem } from '../problem.ts';

export interface ChannelsService {
  /**
   * Opens a channel to `host`: signs and pools a ChannelOpen that locks the capacity. Throws
   * LedgerRuleError 'insufficient-free-balance' (402), ChannelError 'bad-host', 'bad-expiry' (400).
   */
  openChannel(request: OpenRequest): Promise<{ channel_id: string; expiry_height: number }>;
  /**
   * On the payer: signs a receipt for `cumulative` (no transaction) and hands it to the host.
   * Throws ChannelError 'unknown-channel' (404), 'wrong-host', 'exceeds-capacity' (400),
   * 'below-signed', 'ended' (409).
   */
  signReceipt(channelId: Uint8Array, host: Uint8Array, cumulative: bigint): Promise<ReceiptAnswer>;
  /**
   * On the host: takes `receipt` (when given) and closes with the best receipt held. Throws
   * ChannelError 'unknown-channel' (404), 'bad-signature', 'exceeds-capacity' (400), 'wrong-role',
   * 'not-host', 'not-on-chain', 'ended', 'past-expiry', 'no-receipt' (409).
   */
  closeChannel(channelId: Uint8Array, receipt: Receipt | null): Promise<CloseAnswer>;
  /** On the payer, after expiry_height: ChannelError 'unknown-channel' (404), 'wrong-role', 'ended', 'not-expired' (409). */
  expireChannel(channelId: Uint8Array): Promise<ExpireAnswer>;
  /** Every channel this node is payer or host of, newest first. */
  listChannels(): ChannelView[];
  /** One channel, or undefined. */
  getChannel(channelId: Uint8Array): ChannelView | undefined;
}

function channelIdParam(value: string): Uint8Array {
  return nodeIdParam(value, 'channel_id');
}

function unknownChannel(id: string): ApiProblem {
  return new ApiProblem('unknown-channel', `this node is party to no channel ${JSON.stringify(id)}`);
}

// The fixed paths come before `/channels/:id`, and the routes under a channel before the channel itself.
export const channelRoutes: Feature<ChannelsService> = (service, { json, query, readJson, reader }) => [
  {
    path: '/channels/open',
    post: async ({ request, url }) => {
      query(url);
      return json(await service.openChannel(channelOpenRequest(await readJson(request))), 201);
    },
  },
  {
    path: '/channels/receipt',
    post: async ({ request, url }) => {
      query(url);
      const { channelId, host, cumulative } = channelReceiptRequest(await readJson(request));
      return json(await service.signReceipt(channelId, host, cumulative));
    },
  },
  reader('/channels', () => service.listChannels()),
  {
    path: '/channels/:id/close',
    post: async ({ request, url, params }) => {
      const channelId = channelIdParam(params.id!);
      query(url);
      // No body, or {}: close with the best receipt held.
      const body = await readJson(request, { optional: true });
      return json(await service.closeChannel(channelId, channelCloseRequest(body)), 202);
    },
  },
  {
    path: '/channels/:id/expire',
    post: async ({ request, url, params }) => {
      const channelId = channelIdParam(params.id!);
      query(url);
      const body = await readJson(request, { optional: true });
      if (body !== undefined) checkBody(body, EmptyBody);
      return json(await service.expireChannel(channelId), 202);
    },
  },
  {
    path: '/channels/:id',
    get: ({ url, params }) => {
      const channelId = channelIdParam(params.id!);
      query(url);
      const channel = service.getChannel(channelId);
      if (channel === undefined) throw unknownChannel(params.id!);
      return json(channel);
    },
  },
];
