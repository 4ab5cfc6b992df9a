/**
 * The network graph (node-messaging.md §3, docs/netgraph.md): GET /netgraph shows this node's
 * coordinate, the link samples and coordinates it holds and the mesh's figures; GET /netgraph/rtt
 * answers the RTT to one node, measured if it can, else predicted from coordinates.
 */
import { toHex } from '../../encoding/hex.ts';
import type { NetgraphService } from '../../netgraph/service.ts';
import type { Feature } from '../feature.ts';
import { badQuery, nodeIdParam } from '../input.ts';
import { ApiProblem } from '../problem.ts';

export const netgraphRoutes: Feature<NetgraphService> = (service, { json, query, reader }) => [
  reader('/netgraph', () => service.view()),
  {
    path: '/netgraph/rtt',
    get: ({ url }) => {
      const { to } = query(url, ['to']);
      if (to === undefined) throw badQuery('to', 'is required: the node id (64 hex) to give the RTT to');
      const node = nodeIdParam(to, 'to');
      if (toHex(node) === service.nodeId) throw badQuery('to', 'is this node');
      const answer = service.rtt(node);
      if (answer === undefined) throw new ApiProblem('unknown-rtt', `this node has neither measured ${to} nor holds its coordinate`);
      return json(answer);
    },
  },
];
