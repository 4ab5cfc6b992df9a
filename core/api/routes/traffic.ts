/**
 * What the node sent on the network: GET /traffic (docs/node-api.md), the bytes by gossip topic,
 * request protocol, ping and gossipsub control since the node started.
 */
import type { TrafficService } from '../../net/traffic.ts';
import type { Feature } from '../feature.ts';

export const trafficRoutes: Feature<TrafficService> = (service, { reader }) => [reader('/traffic', () => ({ sent: service.traffic() }))];
