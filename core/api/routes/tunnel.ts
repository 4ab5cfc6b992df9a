/**
 * The tunnel routes (node-messaging.md `POST /tunnel`, "tunnel transport"; docs/tunnel.md):
 * POST /tunnel opens a listener (`{listen: {protocol, target, allow}}`) or a forward
 * (`{forward: {protocol, node, bind}}`) and answers 201 with the tunnel; GET /tunnel lists the
 * tunnels, GET /tunnel/:id shows one, DELETE /tunnel/:id closes it (204). The spec leaves the
 * bodies to us; these are Kubo's `ipfs p2p listen/forward` with an allow list.
 */
import { array, object, optional, refine, size, string } from 'superstruct';
import { fromHex } from '../../encoding/hex.ts';
import { isProtocolName } from '../../net/network.ts';
import { loopbackRule, parseLoopbackAddress } from '../../tunnel/address.ts';
import type { TunnelsService } from '../../tunnel/service.ts';
import { DEFAULT_TUNNEL_LIMITS } from '../../tunnel/tunnels.ts';
import type { TunnelRequest } from '../../tunnel/types.ts';
import type { Feature } from '../feature.ts';
import { badQuery, checkBody, NodeId } from '../input.ts';
import { ApiProblem } from '../problem.ts';

export type { TunnelView } from '../../tunnel/types.ts';

const Protocol = refine(string(), 'protocol', (name) => isProtocolName(name) || 'must be 1 to 64 of a-z 0-9 . _ - (starting with a letter or digit)');
const Target = refine(string(), 'target', (text) => loopbackRule(text));
const Bind = refine(string(), 'bind', (text) => loopbackRule(text, { anyPort: true }));

/** POST /tunnel: exactly one of `listen` and `forward`. */
export const TunnelBody = object({
  listen: optional(object({ protocol: Protocol, target: Target, allow: size(array(NodeId), 1, DEFAULT_TUNNEL_LIMITS.allow) })),
  forward: optional(object({ protocol: Protocol, node: NodeId, bind: optional(Bind) })),
});

/** Where a forward listens when the body does not say. */
export const DEFAULT_BIND = '127.0.0.1:0';

/** The tunnel a valid body asks for. */
export function tunnelRequest(value: unknown): TunnelRequest {
  const { listen, forward } = checkBody(value, TunnelBody);
  if (listen !== undefined && forward === undefined) {
    return {
      kind: 'listen',
      protocol: listen.protocol,
      target: parseLoopbackAddress(listen.target, 'listen.target'),
      allow: listen.allow.map((id) => fromHex(id, 32)),
    };
  }
  if (forward !== undefined && listen === undefined) {
    return {
      kind: 'forward',
      protocol: forward.protocol,
      node: fromHex(forward.node, 32),
      bind: parseLoopbackAddress(forward.bind ?? DEFAULT_BIND, 'forward.bind', { anyPort: true }),
    };
  }
  throw new ApiProblem('invalid-body', 'the body holds either listen or forward', {
    errors: [{ name: 'listen', detail: 'give listen or forward, exactly one' }],
  });
}

function tunnelIdParam(value: string): string {
  if (/^[0-9a-f]{16}$/.test(value)) return value;
  throw badQuery('id', 'must be a tunnel id: 16 lowercase hex characters');
}

function unknownTunnel(id: string): ApiProblem {
  return new ApiProblem('unknown-tunnel', `this node has no tunnel ${id}`);
}

export const tunnelRoutes: Feature<TunnelsService> = (service, { json, query, readJson, reader }) => [
  {
    ...reader('/tunnel', () => service.listTunnels()),
    post: async ({ request, url }) => {
      query(url);
      return json(await service.openTunnel(tunnelRequest(await readJson(request))), 201);
    },
  },
  {
    path: '/tunnel/:id',
    get: ({ url, params }) => {
      const id = tunnelIdParam(params.id!);
      query(url);
      const tunnel = service.getTunnel(id);
      if (tunnel === undefined) throw unknownTunnel(id);
      return json(tunnel);
    },
    delete: async ({ url, params }) => {
      const id = tunnelIdParam(params.id!);
      query(url);
      if (!(await service.closeTunnel(id))) throw unknownTunnel(id);
      return new Response(null, { status: 204 });
    },
  },
];
