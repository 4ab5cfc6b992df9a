/**
 * The network graph (node-messaging.md §3, docs/netgraph.md): GET /netgraph shows this node's
 * coordinate, the link samples and coordinates it holds and the mesh's figures; GET /netgraph/rtt
 * answers the RTT to one node, measured if it can, else predicted from coordinates.
 */
import type { NetgraphView, RttAnswer } from '../../netgraph/netgraph.ts';
import { toHex } from '../../encoding/hex.ts';
import type { Feature } from '../feature.ts';
import { badQuery, nodeIdParam } from '../input.ts';
import { ApiProblem } from '../problem.ts';

export interface NetgraphService {
  readonly nodeId: string;
  netgraphView(): NetgraphView;
  /** Measured (pings, or a link sample), else predicted; undefined when neither is known. */
  netgraphRtt(to: Uint8Array): RttAnswer | undefined;
}

export const netgraphRoutes: Feature<NetgraphService> = (service, { json, query, reader }) => [
  reader('/netgraph', () => service.netgraphView()),
  {
    path: '/netgraph/rtt',
    get: ({ url }) => {
      const { to } = query(url, ['to']);
      if (to === undefined) throw badQuery('to', 'is required: the node id (64 hex) to give the RTT to');
      const node = nodeIdParam(to, 'to');
      if (toHex(node) === service.nodeId) throw badQuery('to', 'is this node');
      const answer = service.netgraphRtt(node);
      if (answer === undefined) throw new ApiProblem('unknown-rtt', `this node has neither measured ${to} nor holds its coordinate`);
      return json(answer);
    },
  },
];
