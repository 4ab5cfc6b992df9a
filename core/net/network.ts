/**
 * The network port: how the core reaches other nodes. The host implements it over libp2p gossipsub
 * (host-node/p2p.ts); tests may implement it over memory. Every message carries the NodeId of the
 * node that signed it (gossip messages are signed by their publisher's libp2p key, which is its
 * NodeId) and of the peer that handed it over.
 */

/** The spec's gossip topics (node-api.md §6). */
export const TOPICS = Object.freeze({
  transactions: 'mesh-transactions',
  blocks: 'mesh-blocks',
  heights: 'mesh-heights',
  syncRequest: 'mesh-syncreq',
  syncResponse: 'mesh-syncresp',
  signals: 'mesh-protocol-1',
  segments: 'mesh-segments',
});

export type Topic = (typeof TOPICS)[keyof typeof TOPICS];

/**
 * What a handler says of a message: 'accept' delivers and forwards it; 'ignore' drops it without
 * blame (stale, a duplicate, not for us to judge); 'reject' drops it and penalises the peer that
 * sent it (it forwarded something invalid).
 */
export type Verdict = 'accept' | 'ignore' | 'reject';

export interface GossipMessage {
  readonly topic: string;
  readonly data: Uint8Array;
  /** The NodeId that signed (published) the message. */
  readonly origin: Uint8Array;
  /** The NodeId of the peer that handed the message to this node. */
  readonly peer: Uint8Array;
}

export interface Network {
  /** This node's NodeId. */
  readonly self: Uint8Array;
  /** Publishes to every subscribed peer; resolves even when nobody listens yet. */
  publish(topic: Topic, data: Uint8Array): Promise<void>;
  /** Subscribes to `topic`; `handler` judges each message before gossip forwards it. */
  handle(topic: Topic, handler: (message: GossipMessage) => Promise<Verdict>): void;
  /** Called when a peer joins the node's topics (a new connection has subscribed). */
  onPeerJoined(listener: (peer: Uint8Array) => void): () => void;
  /**
   * Records misbehaviour of `node` beyond a single message verdict (a sync answer that did not
   * validate); enough of it disconnects and bans the node for a while.
   */
  penalise(node: Uint8Array, reason: string): void;
  /** NodeIds of connected peers. */
  peers(): Uint8Array[];
  /** Multiaddrs through which a newcomer can join: this node's own, then its peers'. */
  bootstrapAddresses(): string[];
}
