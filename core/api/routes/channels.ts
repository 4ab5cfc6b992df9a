/**
 * The payment channel routes (node-api.md §3 "Payment channel", §4 the channel routes, §7;
 * docs/channels.md): POST /channels/open, POST /channels/receipt, GET /channels, GET /channels/:id,
 * POST /channels/:id/close, POST /channels/:id/expire. GET /channels/:id is ours.
 */
import type { ChannelsService } from '../../channels/service.ts';
import type { Feature } from '../feature.ts';
import { channelCloseRequest, channelOpenRequest, channelReceiptRequest, checkBody, EmptyBody, nodeIdParam } from '../input.ts';
import { ApiProblem } from '../problem.ts';

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
