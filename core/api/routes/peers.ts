/**
 * The connected peers: GET /peers (node-messaging.md §4 "planned", docs/node-api.md).
 */
import type { PeersService } from '../../netgraph/service.ts';
import type { Feature } from '../feature.ts';

export const peerRoutes: Feature<PeersService> = (service, { reader }) => [reader('/peers', () => ({ peers: service.peers() }))];
