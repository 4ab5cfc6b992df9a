/**
 * The connected peers: GET /peers (node-messaging.md §4 "planned", docs/node-api.md).
 */
import type { Feature } from '../feature.ts';

/** One connected peer, as GET /peers shows it. */
export interface PeerView {
  node_id: string;
  /** Where the peer says it listens (libp2p identify); empty until it said. */
  multiaddrs: string[];
  /** The far end of the connection. */
  remote_addr: string;
  /** Who opened the connection: `outbound` this node, `inbound` the peer. */
  direction: 'inbound' | 'outbound';
  /** When the connection opened, unix seconds. */
  connected_since: number;
  /** The height the peer last announced, null before it announced one. */
  height: number | null;
  /** The median of rtt_samples, in ms; null while none of the last 10 pings was answered. */
  rtt_ms: number | null;
  /** The round trips among the last 10 ping outcomes (core/node/peer-pings.ts), in ms, oldest first. */
  rtt_samples: number[];
}

export interface PeersService {
  peers(): PeerView[];
}

export const peerRoutes: Feature<PeersService> = (service, { reader }) => [reader('/peers', () => ({ peers: service.peers() }))];
