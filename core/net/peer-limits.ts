/**
 * What one peer, and one address, can make a node hold: connections, streams and buffered bytes
 * (docs/network.md, "Limits on one peer"). Requests in flight per peer and name are RpcLimits.
 */
import type { Multiaddr } from '@multiformats/multiaddr';

export const PEER_LIMITS = Object.freeze({
  /**
   * The largest gossip frame read: the largest honest message is a block (1,024 transactions of at
   * most 1 KiB, and its header), the rest is gossipsub's envelope. Sync answers and segments, larger,
   * travel as requests with bounds of their own. A 3 MiB frame is refused before it is buffered.
   */
  gossipFrameBytes: 1.25 * 1024 * 1024,
  /**
   * This node's gossip held for one peer that does not read it, past what yamux's window (up to
   * 16 MiB) already took. Past it gossipsub drops its stream, and the node hangs up on the peer so
   * that a reconnection starts a new one.
   */
  gossipBacklogBytes: 16 * 1024 * 1024,
  /** Connections from one IP address at once (yamux multiplexes everything two nodes say on one). */
  connectionsPerIp: 16,
  /** New inbound connections one IP address may open a second (libp2p's default). */
  connectionsPerIpPerSecond: 5,
  /** Inbound connections still upgrading (noise, yamux) at once, from everyone (libp2p's default). */
  pendingConnections: 10,
  /**
   * Streams a peer may open on one connection, all protocols together (yamux's default is 1,000):
   * four protocols at the RPC limit of 64.
   */
  streamsPerConnection: 256,
  /**
   * Peer-routing (DHT) requests served to one peer a minute. A lookup asks each peer once or twice;
   * the routing table's refresh, a burst of about 15 lookups every 5 minutes, stays far below.
   */
  routingRequestsPerMinute: 600,
  /** Peer-routing streams one peer may have open on a connection at once (libp2p's default is 32). */
  routingStreams: 16,
  /** Peers in one routing answer: Kademlia's k (20), as honest nodes send. */
  routingPeers: 20,
  /** Addresses of one peer in a routing answer; a node serves at most this many of each peer's. */
  routingAddresses: 16,
  /**
   * A routing message, either way: 20 peers of 16 addresses are about 25 KB; a request is tens of
   * bytes. Past it the stream is reset.
   */
  routingMessageBytes: 64 * 1024,
});

/** The IP address of a multiaddr (`/ip4/…` or `/ip6/…`), null for any other. */
export function ipOf(address: Multiaddr): string | null {
  const first = address.getComponents()[0];
  return first !== undefined && (first.name === 'ip4' || first.name === 'ip6') ? (first.value ?? null) : null;
}
