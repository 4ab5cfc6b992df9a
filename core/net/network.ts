/**
 * The network port: how the core reaches other nodes. `core/net/libp2p-network.ts` implements it
 * over libp2p (each host supplies its transports); `core/net/memory.test-util.ts` over memory, for
 * tests. It carries gossip on named topics, request/response between two peers on the mesh RPC
 * protocol 1, the list of connected peers with the heights they announced, a ping that measures
 * the round-trip time to a peer, and raw byte streams between two peers (the tunnel's). Every message carries the NodeId of the node that signed it (gossip messages are signed
 * by their publisher's libp2p key, which is its NodeId) and of the peer that handed it over.
 * docs/network.md describes the wire forms and the errors.
 */
import type { Duplex } from './duplex.ts';
import { InvalidNameError } from './errors.ts';

/**
 * The gossip topics (node-api.md §6). Sync ranges and light-node segments, which the spec lists
 * as topics too, are requests answered to their requester only (RPC `sync.blocks`, `sync.segments`).
 */
export const TOPICS = Object.freeze({
  transactions: 'mesh-transactions',
  blocks: 'mesh-blocks',
  heights: 'mesh-heights',
  signals: 'mesh-protocol-1',
  /** Network coordinates and link samples (docs/netgraph.md). */
  netgraph: 'mesh-netgraph',
  /** Equivocation evidence: two headers one producer signed at one height (docs/network.md). */
  evidence: 'mesh-evidence',
});

const APP_TOPIC = /^[\x21-\x7e]{1,128}$/;
const PROTOCOL_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/**
 * The gossip topic of an app's pub/sub topic (node-messaging.md §2): `mesh-app/<topic>`, where
 * `topic` is 1 to 128 visible ASCII characters (no space).
 *
 * @example appTopic('chat/room-1') // 'mesh-app/chat/room-1'
 */
export function appTopic(topic: string): string {
  if (!isAppTopic(topic)) {
    throw new InvalidNameError('an app topic is 1 to 128 visible ASCII characters, without spaces');
  }
  return `mesh-app/${topic}`;
}

/** Whether `topic` is an app topic `appTopic` takes. */
export function isAppTopic(topic: string): boolean {
  return typeof topic === 'string' && APP_TOPIC.test(topic);
}

/**
 * The libp2p protocol id of an RPC protocol name: `/mesh/rpc/1/<name>`, where `name` is 1 to 64
 * of `a-z 0-9 . _ -`, starting with a letter or digit.
 */
export function rpcProtocolId(name: string): string {
  if (typeof name !== 'string' || !PROTOCOL_NAME.test(name)) {
    throw new InvalidNameError(`RPC protocol name ${JSON.stringify(name)} is not 1 to 64 of a-z 0-9 . _ - (starting with a letter or digit)`);
  }
  return `/mesh/rpc/1/${name}`;
}

/** Whether `name` is an RPC or stream protocol name: 1 to 64 of `a-z 0-9 . _ -`, starting with a letter or digit. */
export function isProtocolName(name: string): boolean {
  return PROTOCOL_NAME.test(name);
}

const STREAM_FAMILY = /^[a-z][a-z0-9-]{0,15}$/;
const STREAM_PROTOCOL = /^\/mesh\/([a-z][a-z0-9-]{0,15})\/1\/([a-z0-9][a-z0-9._-]{0,63})$/;

/**
 * The libp2p protocol id of a raw stream protocol: `/mesh/<family>/1/<name>` (the tunnel's is
 * `/mesh/tunnel/1/<name>`), where `name` follows the RPC names' rule and `family` is 1 to 16 of
 * `a-z 0-9 -`, starting with a letter, and not `rpc` (the RPC protocols' family).
 */
export function streamProtocolId(family: string, name: string): string {
  if (typeof family !== 'string' || !STREAM_FAMILY.test(family) || family === 'rpc')
    throw new InvalidNameError(`stream family ${JSON.stringify(family)} is not 1 to 16 of a-z 0-9 - (starting with a letter)`);
  if (typeof name !== 'string' || !PROTOCOL_NAME.test(name)) {
    throw new InvalidNameError(`stream protocol name ${JSON.stringify(name)} is not 1 to 64 of a-z 0-9 . _ - (starting with a letter or digit)`);
  }
  return `/mesh/${family}/1/${name}`;
}

/** `id` if it is a protocol id `streamProtocolId` makes; InvalidNameError otherwise. */
export function checkStreamProtocolId(id: string): string {
  const family = typeof id === 'string' ? STREAM_PROTOCOL.exec(id)?.[1] : undefined;
  if (family === undefined || family === 'rpc')
    throw new InvalidNameError(`${JSON.stringify(id)} is not a stream protocol id (/mesh/<family>/1/<name>, not an RPC one)`);
  return id;
}

/** Streams of one protocol between two peers, each way, unless its server or opener says otherwise. */
export const DEFAULT_STREAM_LIMIT = 64;

/** How long a request waits for its answer unless the caller says otherwise. */
export const DEFAULT_RPC_TIMEOUT_MS = 10_000;
/** The bound on a request and on an answer unless the caller or the handler sets another. */
export const DEFAULT_RPC_MAX_BYTES = 1024 * 1024;

/** How a network bounds the requests it carries, per node; `rpcLimitsOf` fills in the defaults. */
export interface RpcLimits {
  /**
   * Requests in flight on one protocol between two peers, each way (default 64). One more fails
   * with NetworkError 'busy' rather than waiting: the peer is connected, just full.
   */
  readonly streams: number;
  /** The serving side's wait for the request frame (default 10 s); past it the stream is reset. */
  readonly readMs: number;
  /** The serving side's wait for its handler (default 5 min); past it the handler's signal aborts and the stream is reset. */
  readonly handlerMs: number;
}

export const DEFAULT_RPC_LIMITS: RpcLimits = Object.freeze({ streams: 64, readMs: 10_000, handlerMs: 5 * 60_000 });

/** `limits` with the defaults for what it leaves out. */
export function rpcLimitsOf(limits: Partial<RpcLimits> = {}): RpcLimits {
  return { ...DEFAULT_RPC_LIMITS, ...limits };
}

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

export interface RequestOptions {
  /** Default DEFAULT_RPC_TIMEOUT_MS; past it the request fails with RequestTimeoutError. */
  readonly timeoutMs?: number;
  /** Aborting it abandons the request; the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Default DEFAULT_RPC_MAX_BYTES; a larger request fails before it is sent. */
  readonly maxRequestBytes?: number;
  /** Default DEFAULT_RPC_MAX_BYTES; a larger answer fails with MessageTooLargeError. */
  readonly maxResponseBytes?: number;
  /**
   * Whether the protocol may run over a relayed connection, one a circuit relay limits in time and
   * bytes (default false: bulk traffic). Without it, a peer reached only through a relay is first
   * upgraded to a direct connection (WebRTC, DCUtR); when that fails the call fails with
   * RelayedOnlyError saying why. Give the same on both ends: a server without it refuses the
   * stream on a relayed connection. docs/network.md, "Relayed connections".
   */
  readonly relayed?: boolean;
}

export interface ServeOptions {
  /** Default DEFAULT_RPC_MAX_BYTES; a larger request is refused unread. */
  readonly maxRequestBytes?: number;
  /** Default DEFAULT_RPC_MAX_BYTES; a larger answer is not sent, the requester hears why. */
  readonly maxResponseBytes?: number;
  /** Whether requests may come over a relayed connection (RequestOptions.relayed); default false. */
  readonly relayed?: boolean;
}

export interface RpcRequest {
  /** The NodeId of the requesting peer (authenticated by the connection). */
  readonly peer: Uint8Array;
  readonly data: Uint8Array;
  /** Aborted when the requester goes away, the handler's deadline passes or the network stops; the reason says which. */
  readonly signal: AbortSignal;
}

/** Answers a request; a throw reaches the requester as RemoteError 'remote-failed'. */
export type RpcHandler = (request: RpcRequest) => Promise<Uint8Array>;

/**
 * A raw byte stream to or from a peer, authenticated by the connection: a Duplex (duplex.ts) that
 * knows the peer at its other end.
 */
export interface PeerStream extends Duplex {
  /** The NodeId at the other end. */
  readonly peer: Uint8Array;
}

export interface StreamOptions {
  /**
   * Streams of this protocol between two peers, each way (default DEFAULT_STREAM_LIMIT). On the
   * opener, one more fails with PeerBusyError; on the server, one more is reset.
   */
  readonly maxStreams?: number;
  /** Whether the streams may run over a relayed connection (RequestOptions.relayed); default false. */
  readonly relayed?: boolean;
}

/** Takes a stream a peer opened; it owns the stream from then on (a throw resets it). */
export type StreamHandler = (stream: PeerStream) => void;

/** A connected peer, as the network last heard of it. */
export interface PeerInfo {
  readonly node: Uint8Array;
  /** The height the peer last announced (reported by sync), null before it announced one. */
  readonly height: number | null;
  /** The addresses the peer says it listens on (libp2p identify), as it announced them; empty until it has. */
  readonly multiaddrs: readonly string[];
  /** The far end of the connection: the address it was dialled at, or the one it came from. */
  readonly remoteAddr: string;
  /** Who opened the connection: this node (`outbound`) or the peer (`inbound`). */
  readonly direction: 'inbound' | 'outbound';
  /** When the connection opened, ms since the epoch. With several connections to a peer, the oldest. */
  readonly connectedSince: number;
  /**
   * Whether the peer is reached only through a circuit relay: a limited connection, on which only
   * the protocols that say `relayed` run (docs/network.md, "Relayed connections").
   */
  readonly relayed: boolean;
}

export interface Network {
  /** This node's NodeId. */
  readonly self: Uint8Array;
  /** Publishes to every subscribed peer; resolves even when nobody listens yet. */
  publish(topic: string, data: Uint8Array): Promise<void>;
  /** Subscribes to `topic`; `handler` judges each message before gossip forwards it. */
  handle(topic: string, handler: (message: GossipMessage) => Promise<Verdict>): void;
  /** Leaves `topic`: its handler is dropped and its messages are no longer received or forwarded. */
  unsubscribe(topic: string): void;
  /**
   * How many connected peers are subscribed to `topic`, as their subscriptions have reached this
   * node: the peers a publish on it goes to (0: it reaches nobody). Whether this node itself is
   * subscribed does not count.
   */
  subscribers(topic: string): number;
  /** Called when a peer joins the node's topics (a new connection has subscribed). */
  onPeerJoined(listener: (peer: Uint8Array) => void): () => void;
  /**
   * Records misbehaviour of `node` beyond a single message verdict (a sync answer that did not
   * validate); enough of it disconnects and bans the node for a while.
   */
  penalise(node: Uint8Array, reason: string): void;
  /**
   * Sends `data` to `peer` on the RPC protocol `protocol` (a name for `rpcProtocolId`) and
   * resolves with its answer. Fails with a NetworkError (errors.ts), or the signal's reason.
   */
  request(peer: Uint8Array, protocol: string, data: Uint8Array, options?: RequestOptions): Promise<Uint8Array>;
  /** Serves `protocol` (a name for `rpcProtocolId`) with `handler`; returns what stops serving it. */
  serve(protocol: string, handler: RpcHandler, options?: ServeOptions): () => void;
  /**
   * Opens a raw byte stream to `peer` on `protocol` (an id of `streamProtocolId`), resolving once
   * the peer has agreed to the protocol. Fails with ProtocolNotServedError when it serves no such
   * protocol, PeerUnreachableError when it cannot be reached, PeerBusyError past the limit,
   * InvalidNameError for a bad id, or the signal's reason.
   */
  openStream(peer: Uint8Array, protocol: string, options?: StreamOptions & { signal?: AbortSignal }): Promise<PeerStream>;
  /**
   * Hands each stream a peer opens on `protocol` to `handler`; returns what stops serving it (the
   * streams already open go on). Throws InvalidNameError for a bad id.
   */
  serveStream(protocol: string, handler: StreamHandler, options?: StreamOptions): () => void;
  /** Records the height `node` announced; the peer list shows it until the peer disconnects. */
  reportHeight(node: Uint8Array, height: number): void;
  /** Connected peers with their announced heights and their connections. */
  peers(): PeerInfo[];
  /**
   * Measures the round-trip time to a connected `peer` in milliseconds (libp2p ping). Fails with
   * PeerUnreachableError when it cannot be reached, or the signal's reason.
   */
  ping(peer: Uint8Array, options?: { signal?: AbortSignal }): Promise<number>;
  /** Multiaddrs through which a newcomer can join: this node's own, then its peers'. */
  bootstrapAddresses(): string[];
  /**
   * Connects to `node` through `address`, a dial hint (a multiaddr, possibly through a relay:
   * `/ip4/…/tcp/…/p2p/<relay>/p2p-circuit`). The hint may end in `/p2p/<id>`, which must be
   * `node`'s. Fails with PeerUnreachableError when it cannot connect, InvalidAddressError when
   * the hint does not parse or names another peer.
   */
  dial(node: Uint8Array, address: string, options?: { signal?: AbortSignal }): Promise<void>;
  /**
   * Whether peers can open connections to this node (docs/network.md, "Through NATs"), and the
   * relay addresses it announces while they cannot. Absent: the network has no such notion.
   */
  reachability?(): { readonly reachability: 'public' | 'private' | 'unknown'; readonly relayAddresses: string[] };
}
