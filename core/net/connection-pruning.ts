/**
 * How many connections a node holds and which it closes first when it holds more (docs/network.md,
 * "Connection limits"). libp2p's own pruner closes only connections without open streams other than
 * identify's and the like, and every mesh connection carries gossipsub's: it would never close one.
 * The node prunes by this order instead.
 */

/**
 * The default of `--max-connections`: connections held at once; past it the lowest in the pruning
 * order are closed. (`--max-connections-per-ip` defaults to PEER_LIMITS.connectionsPerIp.)
 */
export const MAX_CONNECTIONS = 128;

/**
 * What a peer is to this node, most valued last: `needed` (a bootstrap peer, a relay it holds a
 * reservation on, a peer with a job or channel in flight) is never pruned; a `producer` (it made a
 * block on this node's chain recently) only after every `other`.
 */
export type PeerRank = 'other' | 'producer' | 'needed';

const RANK_ORDER: Record<PeerRank, number> = { other: 0, producer: 1, needed: 2 };

/** One open connection as the pruning order sees it. */
export interface PrunableConnection {
  readonly rank: PeerRank;
  readonly direction: 'inbound' | 'outbound';
  /** When it opened (ms). */
  readonly openedAt: number;
}

/**
 * The connections to close to hold at most `max`, first to close first: lowest rank, then inbound
 * before outbound (a peer this node chose to dial is worth more than one that came), then newest
 * first (a long-held peer is not displaced by a stream of newcomers). `needed` connections are never
 * chosen, so a node may hold more than `max` of them.
 */
export function connectionsToPrune<C extends PrunableConnection>(connections: readonly C[], max: number): C[] {
  const excess = connections.length - max;
  if (excess <= 0) return [];
  return connections
    .filter((c) => c.rank !== 'needed')
    .sort(
      (a, b) => RANK_ORDER[a.rank] - RANK_ORDER[b.rank] || (a.direction === b.direction ? 0 : a.direction === 'inbound' ? -1 : 1) || b.openedAt - a.openedAt,
    )
    .slice(0, excess);
}
