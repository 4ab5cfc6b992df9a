/**
 * The network port on libp2p 3, the same on every runtime: noise, yamux, identify, ping and
 * gossipsub on top of the transports a host supplies (TCP, WebSockets and a relay server on
 * Node; WebSockets, WebRTC and the relay transport in a browser).
 *
 * The node's Ed25519 key is its libp2p key, so the peer id a connection authenticates is the NodeId
 * (non-Ed25519 peers are refused). Gossip is signed by its publisher (StrictSign), so a message's
 * origin is authenticated too. Every message goes through the core's handler before gossip forwards
 * it; a peer that keeps sending what the core rejects is disconnected and banned for a while.
 * Requests travel on one libp2p protocol per name, `/mesh/rpc/1/<name>`, as one length-prefixed
 * frame each way (docs/network.md, "Request and response"). Raw byte streams (the tunnel's) are
 * libp2p streams on `/mesh/<family>/1/<name>` (libp2p-stream.ts).
 *
 * Peer routing is a Kademlia DHT of the mesh's own, `/mesh/kad/1.0.0`: a request or stream to a
 * node this one is not connected to, and has no address for, looks the node up by its NodeId
 * first, then dials what the lookup found (directly, or through the relay it announces). Hosts
 * answer lookups ('server'); a page only asks them ('client'). docs/network.md, "Peer routing".
 */
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { publicKeyFromRaw } from '@libp2p/crypto/keys';
import { type GossipSub, gossipsub, TopicValidatorResult } from '@libp2p/gossipsub';
import { RPC } from '@libp2p/gossipsub/message';
import { identify, identifyPush } from '@libp2p/identify';
import type { Connection, Libp2p, PeerInfo as Libp2pPeerInfo, PeerId, Stream } from '@libp2p/interface';
import type { TransportManager } from '@libp2p/interface-internal';
import { type KadDHT, kadDHT, MessageType } from '@libp2p/kad-dht';
import { peerIdFromPublicKey, peerIdFromString } from '@libp2p/peer-id';
import { type Ping, ping } from '@libp2p/ping';
import { lpStream } from '@libp2p/utils';
import { CODE_P2P, type Multiaddr, multiaddr } from '@multiformats/multiaddr';
import { Circuit } from '@multiformats/multiaddr-matcher';
import { createLibp2p, type Libp2pOptions, type ServiceFactoryMap } from 'libp2p';
import { toHex } from '../encoding/hex.ts';
import { messageOf } from '../errors.ts';
import { type Clock, systemClock, type Timer } from '../time/clock.ts';
import { relayAddressesFirst } from './address-order.ts';
import { connectionsToPrune, MAX_CONNECTIONS, type PeerRank } from './connection-pruning.ts';
import { DirectUpgrades, isRelayed, UPGRADE_MS } from './direct-upgrade.ts';
import {
  InvalidAddressError,
  MessageTooLargeError,
  NetworkError,
  PeerBusyError,
  PeerUnreachableError,
  ProtocolNotServedError,
  RelayedOnlyError,
  RemoteError,
} from './errors.ts';
import { IHAVE_HEARTBEATS } from './gossip-options.ts';
import { GOSSIP_SCORE_THRESHOLDS, gossipScoreParams } from './gossip-scoring.ts';
import { Libp2pPeerStream } from './libp2p-stream.ts';
import {
  checkStreamProtocolId,
  DEFAULT_STREAM_LIMIT,
  type GossipMessage,
  type Network,
  type PeerInfo,
  type PeerStream,
  type RequestOptions,
  type RpcHandler,
  type RpcLimits,
  rpcLimitsOf,
  rpcProtocolId,
  type ServeOptions,
  type StreamHandler,
  type StreamOptions,
  TOPICS,
  type Verdict,
} from './network.ts';
import { ipOf, PEER_LIMITS } from './peer-limits.ts';
import { BAN_MS, BAN_POINTS, MAX_SCORED_PEERS, PENALTIES, type Penalty } from './penalties.ts';
import type { Reachability } from './reachability.ts';
import { RELAY_HOP_PROTOCOL } from './relay-keeper.ts';
import { judgeRoutingAnswer } from './routing-message.ts';
import { type Bounds, boundsOf, type Call, failureMessage, handlerStops, MAX_FAILURE_CHARS, runRequest } from './rpc.ts';
import { dialsItself } from './self-dial.ts';
import { addressesToServe } from './served-addresses.ts';
import { gossipRpcKinds, negotiationBytes, rpcKind, TrafficCounter, varintBytes } from './traffic.ts';

/**
 * What a host gives: its key, listen addresses, transports, peer discovery, extra services (a
 * relay server) and connection-gater rules of its own (which addresses it may dial). The network
 * adds the encrypter, the muxer, identify, ping, gossipsub, and the gater's peer rules (Ed25519
 * only, bans).
 */
export type Libp2pHostConfig = Omit<Libp2pOptions, 'connectionEncrypters' | 'streamMuxers' | 'services'> & {
  readonly services?: ServiceFactoryMap<Record<string, unknown>>;
};

export interface Libp2pNetworkOptions {
  /** Multiaddrs (with /p2p/<peer id>) dialled again whenever their connection is gone. */
  readonly bootstrap?: readonly Multiaddr[];
  readonly log?: (line: string) => void;
  /** Misbehaviour points before a peer is banned (BAN_POINTS; each refusal's points are PENALTIES). */
  readonly banThreshold?: number;
  readonly banMs?: number;
  /** Time for bans, request deadlines and the bootstrap redial (default: the system clock). */
  readonly clock?: Clock;
  /** Requests in flight per peer and protocol, and the serving side's deadlines (DEFAULT_RPC_LIMITS). */
  readonly rpc?: Partial<RpcLimits>;
  /** Connections held at once before the pruning order closes some (MAX_CONNECTIONS). */
  readonly maxConnections?: number;
  /** Connections from one IP address at once (PEER_LIMITS.connectionsPerIp). */
  readonly connectionsPerIp?: number;
  /**
   * What the host knows a peer to be (a producer, one with jobs in flight), null for nothing;
   * bootstrap peers and relays holding this node's reservations are `needed` without it.
   */
  readonly rankPeer?: (node: Uint8Array) => PeerRank | null;
  /**
   * Whether the node answers peer-routing lookups ('server': a host other nodes can dial) or only
   * makes them ('client', the default: a page, which nobody can dial directly).
   */
  readonly routing?: 'server' | 'client';
}

type Services = { pubsub: GossipSub; ping: Ping; dht: KadDHT };

/** The mesh's Kademlia DHT: its own protocol, so it never mixes with IPFS's (`/ipfs/kad/1.0.0`). */
export const ROUTING_PROTOCOL = '/mesh/kad/1.0.0';
/** How long a lookup by NodeId may take, at most (a request's own timeout may end it sooner). */
export const ROUTING_LOOKUP_MS = 10_000;
/** How long a dial at the addresses the peer store holds may take before the node is looked up. */
const KNOWN_ADDRESSES_MS = 1_000;
/** How long a lookup waits for a first peer to ask, while the node is connected but has none yet. */
const ROUTING_WARMUP_MS = 2_000;

/**
 * What of kad-dht's classes (beyond the service's interface) the network wraps to bound and judge
 * the routing traffic of each peer; each wrap is skipped when a version lacks it.
 */
interface KadInternals {
  readonly routingTable?: EventTarget & { readonly size: number };
  readonly rpc?: {
    /** The handler of each request type; FIND_NODE's maps each peer it serves (`peerInfoMapper`). */
    readonly handlers?: Record<string, { peerInfoMapper?: (peer: Libp2pPeerInfo) => Libp2pPeerInfo }>;
    handleMessage?: (peer: PeerId, message: { readonly type: MessageType }) => Promise<unknown>;
    onIncomingStream?: (stream: Stream, connection: Connection) => Promise<void>;
  };
  readonly network?: { _writeReadMessage?: (stream: Stream, message: unknown, options: unknown) => Promise<unknown> };
}

/** The only routing requests the mesh serves: it keeps no records and no providers. */
const ROUTING_REQUESTS: ReadonlySet<MessageType> = new Set([MessageType.FIND_NODE, MessageType.PING]);

/**
 * Every address a peer announced, loopback and private ones included (a devnet and a LAN mesh reach
 * each other at them), at most PEER_LIMITS.routingAddresses; a peer that is not an Ed25519 key is
 * no mesh node, and is neither served nor added. Lookups are answered with fewer: the private
 * addresses only of a peer seen from them (served-addresses.ts).
 */
function routingPeerInfo(peer: Libp2pPeerInfo): Libp2pPeerInfo {
  if (peer.id.type !== 'Ed25519') return { ...peer, multiaddrs: [] };
  // A peer with relay addresses is behind a NAT: its others are LAN ones, which lead nowhere from
  // elsewhere and would each cost a dial's timeout (relay-keeper.ts announces only relay ones).
  const relayed = peer.multiaddrs.filter((ma) => Circuit.matches(ma));
  return { ...peer, multiaddrs: (relayed.length > 0 ? relayed : peer.multiaddrs).slice(0, PEER_LIMITS.routingAddresses) };
}

/** The bytes of a libp2p stream message event (a Uint8Array or a Uint8ArrayList). */
const bytesOf = (data: Uint8Array | { subarray(): Uint8Array }): Uint8Array => (data instanceof Uint8Array ? data : data.subarray());

/**
 * What of the GossipSub class (beyond the service's interface) the network uses to see a peer's
 * gossip streams break; each use is skipped when a version lacks it.
 */
interface GossipInternals {
  readonly peers?: ReadonlyMap<string, PeerId>;
  readonly streamsOutbound?: ReadonlyMap<string, unknown>;
  /** Called when reading a peer's stream fails; gossipsub then drops the peer from its router. */
  handlePeerReadStreamError?: (error: unknown, peer: PeerId) => void;
}

const VERDICTS: Record<Verdict, TopicValidatorResult> = {
  accept: TopicValidatorResult.Accept,
  ignore: TopicValidatorResult.Ignore,
  reject: TopicValidatorResult.Reject,
};
const RECONNECT_MS = 3_000;
/** A libp2p ping's protocol and payload, each way. */
const PING_PROTOCOL = '/ipfs/ping/1.0.0';
const PING_BYTES = 32;
// Relays a dial to an unknown node tries (docs/network.md, "Through NATs").
const RELAYS_TRIED = 3;
// How often peers are checked for a gossip stream that broke while their connection stayed up.
const GOSSIP_CHECK_MS = 5_000;
// How often, and how long at most, a joined peer is checked for this node's gossip stream to it.
const JOIN_POLL_MS = 10;
const JOIN_WAIT_MS = 3_000;
// libp2p admits this many connections past the limit, so that the pruning order, not the order of
// arrival, chooses which go.
const PRUNE_HEADROOM = 8;
// Peers libp2p keeps connected (circuit-relay's tag on a relay holding a reservation of this node).
const KEEP_ALIVE_TAG_PREFIX = 'keep-alive';

// The first byte of an answer frame (docs/network.md, "Request and response").
const ANSWER = { ok: 0, failed: 1, requestTooLarge: 2, responseTooLarge: 3, busy: 4 } as const;
// A failure's text is at most MAX_FAILURE_CHARS characters, each at most 4 bytes of UTF-8.
const MAX_FAILURE_BYTES = 4 * MAX_FAILURE_CHARS;
// A stream buffers what arrives before it is read: at least libp2p's default of 4 MiB (a chunk
// may hold more than a small frame), and room for the largest frame with its length prefix.
const bufferFor = (maxFrame: number): number => Math.max(4 * 1024 * 1024, maxFrame + 16);

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A bootstrap multiaddr must name its peer: `/ip4/…/tcp/…/p2p/<peer id>`. */
export function parseBootstrapAddress(text: string): Multiaddr {
  const ma = multiaddr(text);
  const id = ma.getComponents().findLast((c) => c.name === 'p2p')?.value;
  if (id === undefined) throw new RangeError(`bootstrap address ${text} has no /p2p/<peer id>`);
  const peer = peerIdFromString(id);
  if (peer.type !== 'Ed25519') throw new RangeError(`bootstrap address ${text} does not name an Ed25519 peer`);
  return ma;
}

function nodeIdOf(peer: PeerId): Uint8Array | null {
  return peer.type === 'Ed25519' ? peer.publicKey.raw : null;
}

function peerIdOf(node: Uint8Array): PeerId {
  try {
    return peerIdFromPublicKey(publicKeyFromRaw(node));
  } catch {
    throw new PeerUnreachableError(`${toHex(node)} is not a NodeId`);
  }
}

// lpStream's errors for a frame whose announced length is over the bound.
const overBound = (error: unknown): boolean =>
  error instanceof Error && (error.name === 'InvalidDataLengthError' || error.name === 'InvalidDataLengthLengthError');

function answerFrame(status: number, body: Uint8Array): Uint8Array {
  const frame = new Uint8Array(1 + body.length);
  frame[0] = status;
  frame.set(body, 1);
  return frame;
}

export class Libp2pNetwork implements Network {
  readonly self: Uint8Array;
  readonly libp2p: Libp2p<Services>;
  readonly #log: (line: string) => void;
  readonly #bootstrap: readonly Multiaddr[];
  readonly #joined = new Set<(peer: Uint8Array) => void>();
  readonly #points = new Map<string, number>();
  readonly #banned: Map<string, number>;
  readonly #listenAddrs = new Map<string, Multiaddr[]>();
  readonly #heights = new Map<string, number>();
  readonly #served = new Map<string, RpcHandler>();
  readonly #streamHandlers = new Map<string, (stream: Stream, connection: Connection) => void>();
  /** Raw streams open, reset when the node stops or hangs up on their peer (libp2p would close them with a FIN). */
  readonly #rawStreams = new Set<Libp2pPeerStream>();
  readonly #stopping = new AbortController();
  readonly #banThreshold: number;
  readonly #banMs: number;
  readonly #clock: Clock;
  readonly #rpc: RpcLimits;
  readonly #maxConnections: number;
  readonly #rankPeer: ((node: Uint8Array) => PeerRank | null) | undefined;
  /** Requests being served, by requester and protocol id. */
  readonly #serving = new Map<string, number>();
  readonly #traffic = new TrafficCounter();
  /** Routing requests served to each peer in the current minute (PEER_LIMITS.routingRequestsPerMinute). */
  readonly #routingServed = new Map<string, { readonly minute: number; count: number }>();
  /** Lookups by NodeId in flight, by peer id: requests to one node share one. */
  readonly #lookups = new Map<string, Promise<void>>();
  #reconnect: Timer | undefined;
  #gossipCheck: Timer | undefined;
  /** Peers found, at the last check, in gossipsub's router with a stream to send them gossip. */
  #sending = new Set<string>();
  #redialing = false;
  readonly #upgrades: DirectUpgrades;

  private constructor(libp2p: Libp2p<Services>, banned: Map<string, number>, options: Libp2pNetworkOptions) {
    this.libp2p = libp2p;
    this.self = nodeIdOf(libp2p.peerId)!;
    this.#banned = banned;
    this.#log = options.log ?? (() => {});
    this.#bootstrap = options.bootstrap ?? [];
    this.#banThreshold = options.banThreshold ?? BAN_POINTS;
    this.#banMs = options.banMs ?? BAN_MS;
    this.#clock = options.clock ?? systemClock;
    this.#rpc = rpcLimitsOf(options.rpc);
    this.#maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
    this.#rankPeer = options.rankPeer;
    this.#upgrades = new DirectUpgrades(libp2p, this.#clock, this.#log, (peer) => this.#listenAddrs.get(peer.toString()) ?? []);
  }

  /** Starts libp2p from the host's configuration with the mesh's protocols added. */
  static async start(host: Libp2pHostConfig, options: Libp2pNetworkOptions = {}): Promise<Libp2pNetwork> {
    if (host.privateKey?.type !== 'Ed25519') throw new RangeError('a mesh node needs its Ed25519 key as its libp2p key');
    // The gater consults the ban list before the network exists, so the list comes first.
    const banned = new Map<string, number>();
    const clock = options.clock ?? systemClock;
    const isBanned = (peer: PeerId): boolean => {
      const until = banned.get(peer.toString());
      if (until === undefined) return false;
      if (clock.now() < until) return true;
      banned.delete(peer.toString());
      return false;
    };
    // Set once libp2p exists: the gater counts its open connections per address.
    let connectionsFrom = (_ip: string): number => 0;
    // The addresses the node listens on, from the transport manager (`listening` below).
    let listening = (): Multiaddr[] => [];
    const libp2p = await createLibp2p({
      ...host,
      // Started once the network has wrapped the DHT's handlers, before any peer can reach them.
      start: false,
      connectionManager: {
        maxConnections: (options.maxConnections ?? MAX_CONNECTIONS) + PRUNE_HEADROOM,
        maxIncomingPendingConnections: PEER_LIMITS.pendingConnections,
        // A WebRTC upgrade is one address dial: ICE on a loaded machine took over libp2p's 6 s.
        // Its own bound (UPGRADE_MS) is the one that counts.
        addressDialTimeout: UPGRADE_MS,
        inboundConnectionThreshold: PEER_LIMITS.connectionsPerIpPerSecond,
        addressSorter: relayAddressesFirst,
        ...host.connectionManager,
      },
      connectionEncrypters: [noise()],
      // Deno's type check meets two copies of uint8arraylist's types (the interface's and the
      // utils'), so yamux's streams do not look like the interface's there; they are the same objects.
      streamMuxers: [yamux({ maxInboundStreams: PEER_LIMITS.streamsPerConnection }) as unknown as NonNullable<Libp2pOptions['streamMuxers']>[number]],
      connectionGater: {
        ...host.connectionGater,
        // A loopback address at a port this node listens on is this node (self-dial.ts).
        denyDialMultiaddr: async (ma) => (await host.connectionGater?.denyDialMultiaddr?.(ma)) === true || dialsItself(ma, listening()),
        // One address (one host, or one NAT) holds a bounded share of the node's connections.
        denyInboundConnection: async (maConn) => {
          if ((await host.connectionGater?.denyInboundConnection?.(maConn)) === true) return true;
          // A relayed connection carries the relay's address: peers behind one relay are not one host
          // (the relay bounds them, "Relay limits").
          if (Circuit.matches(maConn.remoteAddr)) return false;
          const ip = ipOf(maConn.remoteAddr);
          const perIp = options.connectionsPerIp ?? PEER_LIMITS.connectionsPerIp;
          if (ip === null || connectionsFrom(ip) < perIp) return false;
          // At most connectionsPerIpPerSecond lines a second from one address: libp2p's rate limit comes first.
          options.log?.(`p2p: refusing a connection from ${ip} (connections-per-ip: ${perIp} open)`);
          return true;
        },
        // A NodeId is an Ed25519 key: other key types cannot be mesh nodes.
        denyInboundEncryptedConnection: (peer) => peer.type !== 'Ed25519' || isBanned(peer),
        denyOutboundEncryptedConnection: (peer) => peer.type !== 'Ed25519' || isBanned(peer),
        // Nor is one dialled: a routing answer may name any peer id at any address.
        denyDialPeer: (peer) => peer.type !== 'Ed25519' || isBanned(peer),
      },
      services: {
        ...host.services,
        listening: (components: { transportManager: TransportManager }) => ({ addresses: () => components.transportManager.getAddrs() }),
        identify: identify(),
        // A node's addresses change after identify ran (a relay reservation, an address observed):
        // its peers hear the new ones, and answer lookups for it with them.
        identifyPush: identifyPush(),
        // libp2p's connection monitor pings every peer each 10 s and hangs up when it cannot open
        // its ping stream; `ping` (the node's RTT samples) uses the same protocol. With the default
        // of one outbound ping stream per connection, a sample still waiting for a busy peer's answer
        // (one applying a sync range) made the monitor's ping fail, and the connection was cut
        // mid-sync. Each side may hold two of its own at once, and a third for the DHT, which pings
        // each new contact before it joins the routing table; it takes twice that from the other.
        ping: ping({ maxOutboundStreams: 3, maxInboundStreams: 6 }),
        pubsub: gossipsub({
          allowPublishToZeroTopicPeers: true,
          emitSelf: false,
          fallbackToFloodsub: false,
          // A frame over the bound is refused before it is buffered (and its sender banned, below).
          maxInboundDataLength: PEER_LIMITS.gossipFrameBytes,
          // A peer that stops reading holds at most this much of this node's gossip.
          maxOutboundBufferSize: PEER_LIMITS.gossipBacklogBytes,
          scoreParams: gossipScoreParams(),
          scoreThresholds: GOSSIP_SCORE_THRESHOLDS,
          mcacheGossip: IHAVE_HEARTBEATS,
        }),
        dht: kadDHT({
          protocol: ROUTING_PROTOCOL,
          clientMode: (options.routing ?? 'client') === 'client',
          peerInfoMapper: routingPeerInfo,
          // The first self-lookup, which every lookup waits for, as soon as there is a peer to ask.
          initialQuerySelfInterval: 0,
          maxInboundStreams: PEER_LIMITS.routingStreams,
        }),
      },
    });
    listening = () => (libp2p.services as unknown as { listening: { addresses(): Multiaddr[] } }).listening.addresses();
    connectionsFrom = (ip) => libp2p.getConnections().filter((c) => !isRelayed(c) && ipOf(c.remoteAddr) === ip).length;
    const net = new Libp2pNetwork(libp2p as unknown as Libp2p<Services>, banned, options);
    net.#guardRouting();
    try {
      await libp2p.start();
    } catch (error) {
      await Promise.resolve(libp2p.stop()).catch(() => {});
      throw error;
    }
    net.#wire();
    return net;
  }

  #wire(): void {
    const pubsub = this.libp2p.services.pubsub;
    pubsub.addEventListener('subscription-change', (event) => {
      const joined = event.detail.subscriptions.some((s) => s.subscribe && s.topic === TOPICS.heights);
      const node = nodeIdOf(event.detail.peerId);
      if (!joined || node === null) return;
      this.#whenReachable(event.detail.peerId.toString(), () => {
        for (const listener of this.#joined) listener(node);
      });
    });
    this.libp2p.addEventListener('connection:open', (event) => this.#upgrades.opened(event.detail));
    this.libp2p.addEventListener('peer:identify', (event) => {
      this.#listenAddrs.set(event.detail.peerId.toString(), event.detail.listenAddrs);
      this.#upgrades.identified(event.detail.connection);
    });
    this.libp2p.addEventListener('peer:disconnect', (event) => {
      const key = event.detail.toString();
      this.#listenAddrs.delete(key);
      this.#heights.delete(key);
      this.#upgrades.forget(event.detail);
    });
    this.#reconnect = this.#clock.setInterval(() => void this.#keepBootstrapped(), RECONNECT_MS);
    this.#watchGossipStreams();
    this.libp2p.addEventListener('connection:open', () => void this.#prune());
    this.#countGossip();
  }

  /** Bytes this node sent so far, by gossip topic, `rpc <name>`, `ping` and gossipsub-control (traffic.ts). */
  traffic(): Record<string, number> {
    return this.#traffic.sent();
  }

  // Gossipsub sends every frame through sendRpc (batch publishing, which bypasses it, is off):
  // counted once it went, with what it piggybacked.
  #countGossip(): void {
    const pubsub = this.libp2p.services.pubsub as unknown as { sendRpc?: (id: PeerId, rpc: RPC) => boolean };
    const send = pubsub.sendRpc?.bind(pubsub);
    if (send === undefined) return;
    pubsub.sendRpc = (id, rpc) => {
      const sent = send(id, rpc);
      if (sent) {
        const messages = (rpc.messages ?? []).map((m) => ({ topic: m.topic, encodedBytes: RPC.Message.encode(m).length }));
        for (const [kind, bytes] of gossipRpcKinds(RPC.encode(rpc).length, messages)) this.#traffic.count(kind, bytes);
      }
      return sent;
    };
  }

  // Past the connection limit, closes connections in the pruning order (connection-pruning.ts).
  // Peers are counted, not connections: a second connection to a peer held already (a dial-back
  // check, a simultaneous dial) must not push out the first, or another peer.
  async #prune(): Promise<void> {
    const byPeer = new Map<string, Connection[]>();
    for (const c of this.libp2p.getConnections()) {
      if (c.status !== 'open') continue;
      const key = c.remotePeer.toString();
      byPeer.set(key, [...(byPeer.get(key) ?? []), c]);
    }
    if (byPeer.size <= this.#maxConnections) return;
    const bootstrap = new Set(this.#bootstrap.map((ma) => ma.getComponents().findLast((c) => c.name === 'p2p')?.value));
    const ranked = await Promise.all(
      [...byPeer.values()].map(async (connections) => {
        const oldest = connections.reduce((a, b) => (b.timeline.open < a.timeline.open ? b : a));
        return {
          connections,
          peer: oldest.remotePeer,
          rank: await this.#rankOf(oldest.remotePeer, bootstrap),
          direction: oldest.direction,
          openedAt: oldest.timeline.open,
        };
      }),
    );
    for (const { connections, peer, rank } of connectionsToPrune(ranked, this.#maxConnections)) {
      this.#log(`p2p: closing the connection to ${peer.toString()} (${rank}; max-connections: ${this.#maxConnections})`);
      for (const connection of connections) {
        void connection.close().catch((error: unknown) => connection.abort(error instanceof Error ? error : new Error(String(error))));
      }
    }
  }

  async #rankOf(peer: PeerId, bootstrap: ReadonlySet<string | undefined>): Promise<PeerRank> {
    if (bootstrap.has(peer.toString())) return 'needed';
    const tags = await this.libp2p.peerStore.get(peer).then(
      (p) => [...p.tags.keys()],
      () => [],
    );
    if (tags.some((tag) => tag.startsWith(KEEP_ALIVE_TAG_PREFIX))) return 'needed';
    const node = nodeIdOf(peer);
    return (node === null ? null : this.#rankPeer?.(node)) ?? 'other';
  }

  // Gossipsub opens its stream to a peer once per connection and never again: when the stream
  // breaks (a frame over the bound, a reset, a backlog over gossipBacklogBytes) the peer is left
  // without this node's gossip, or dropped from the router, while the connection, and pings, go
  // on. The node hangs up instead, so a reconnection starts over; a frame over the bound is no
  // honest node's, and bans its sender.
  #watchGossipStreams(): void {
    const pubsub = this.libp2p.services.pubsub as unknown as GossipInternals;
    const onReadError = pubsub.handlePeerReadStreamError?.bind(pubsub);
    if (onReadError !== undefined) {
      pubsub.handlePeerReadStreamError = (error, peer) => {
        onReadError(error, peer);
        if (this.#stopping.signal.aborted) return;
        if (overBound(error)) this.#misbehaved(peer, 'oversized-frame', `a gossip frame over ${PEER_LIMITS.gossipFrameBytes} bytes`);
        else this.#hangUp(peer, `its gossip stream failed: ${messageOf(error)}`);
      };
    }
    const { peers, streamsOutbound } = pubsub;
    if (peers === undefined || streamsOutbound === undefined) return;
    // libp2p stamps connections with Date.now, whatever the network's clock.
    let lastCheck = Date.now();
    this.#gossipCheck = this.#clock.setInterval(() => {
      const sending = new Set<string>();
      for (const [key, peer] of peers) {
        if (streamsOutbound.has(key)) sending.add(key);
        // Gone since the last check, on a connection that was open then. A stream not opened yet
        // may be waiting its turn (gossipsub opens them one at a time), or be a new connection's.
        else if (this.#sending.has(key) && this.libp2p.getConnections(peer).some((c) => c.timeline.open <= lastCheck)) {
          this.#hangUp(peer, 'its gossip stream from this node is gone');
        }
      }
      this.#sending = sending;
      lastCheck = Date.now();
    }, GOSSIP_CHECK_MS);
  }

  #hangUp(peer: PeerId, reason: string): void {
    if (this.libp2p.getConnections(peer).length === 0) return;
    this.#log(`p2p: hanging up on ${peer.toString()} (${reason})`);
    void this.libp2p.hangUp(peer).catch(() => {});
  }

  // Runs `then` once a gossip publish reaches `peer`: its subscriptions may arrive before this
  // node's own stream to it is open, and a message published meanwhile would not go to it (a new
  // peer's first height announcement was lost so, and sync waited for the next). Checked every
  // JOIN_POLL_MS; after JOIN_WAIT_MS `then` runs anyway. Were the streams' map gone
  // (GossipInternals), `then` runs at once, as before.
  #whenReachable(peer: string, then: () => void): void {
    const streams = (this.libp2p.services.pubsub as unknown as GossipInternals).streamsOutbound;
    if (streams === undefined) return then();
    const deadline = this.#clock.now() + JOIN_WAIT_MS;
    const check = (): void => {
      if (this.#stopping.signal.aborted) return;
      if (streams.has(peer) || this.#clock.now() >= deadline) then();
      else this.#clock.setTimeout(check, JOIN_POLL_MS);
    };
    check();
  }

  // Bootstrap peers are dialled again whenever the connection is gone (a restart on either side).
  // A round still dialling when the next is due makes that one skip.
  async #keepBootstrapped(): Promise<void> {
    if (this.#redialing) return;
    this.#redialing = true;
    try {
      const connected = new Set(this.libp2p.getPeers().map(String));
      for (const ma of this.#bootstrap) {
        const id = ma.getComponents().findLast((c) => c.name === 'p2p')?.value;
        if (id === undefined || connected.has(id)) continue;
        const giveUp = new AbortController();
        const timer = this.#clock.setTimeout(() => giveUp.abort(new Error('bootstrap dial timed out')), RECONNECT_MS);
        try {
          await this.libp2p.dial(ma, { signal: giveUp.signal });
        } catch {
          // Still down; tried again next round.
        } finally {
          timer.cancel();
        }
      }
    } finally {
      this.#redialing = false;
    }
  }

  // ---- peer routing ----

  // Bounds and judges what each peer sends on the routing protocol: which requests (peer lookups
  // and pings only), how many a minute, how many bytes a stream carries either way, and whether an
  // answer keeps the mesh's rules (routing-message.ts). A peer breaking them is penalised.
  #guardRouting(): void {
    const dht = this.libp2p.services.dht as unknown as KadInternals;
    const rpc = dht.rpc;
    const handleMessage = rpc?.handleMessage?.bind(rpc);
    if (rpc !== undefined && handleMessage !== undefined) {
      rpc.handleMessage = async (peer, message) => {
        if (!ROUTING_REQUESTS.has(message.type)) {
          this.#misbehaved(peer, 'invalid-routing-message', `a routing request of type ${MessageType[message.type] ?? message.type}`);
          throw new Error('the mesh serves peer lookups and pings only');
        }
        if (!this.#routingBudget(peer)) {
          this.#misbehaved(peer, 'routing-flood', `over ${PEER_LIMITS.routingRequestsPerMinute} routing requests in a minute`);
          throw new Error('too many routing requests');
        }
        return handleMessage(peer, message);
      };
    }
    // A peer's private addresses are served only to those who may share its network
    // (served-addresses.ts); the DHT's own mapper, which also chooses who joins the routing table,
    // keeps them.
    const findNode = rpc?.handlers?.[String(MessageType.FIND_NODE)];
    const served = findNode?.peerInfoMapper;
    if (findNode !== undefined && served !== undefined) {
      findNode.peerInfoMapper = (peer) => {
        const info = served(peer);
        if (info.id.equals(this.libp2p.peerId)) return info;
        const seenFrom = new Set(
          this.libp2p
            .getConnections(info.id)
            .filter((c) => !isRelayed(c))
            .flatMap((c) => ipOf(c.remoteAddr) ?? []),
        );
        return { ...info, multiaddrs: addressesToServe(info.multiaddrs, seenFrom) };
      };
    }
    const onIncomingStream = rpc?.onIncomingStream?.bind(rpc);
    if (rpc !== undefined && onIncomingStream !== undefined) {
      rpc.onIncomingStream = (stream, connection) => {
        this.#boundRoutingStream(stream, connection.remotePeer);
        return onIncomingStream(stream, connection);
      };
    }
    const network = dht.network;
    const writeRead = network?._writeReadMessage?.bind(network);
    if (network !== undefined && writeRead !== undefined) {
      network._writeReadMessage = async (stream, message, options) => {
        const peer = this.libp2p.getConnections().find((c) => c.streams.includes(stream))?.remotePeer;
        const received = peer === undefined ? null : this.#boundRoutingStream(stream, peer);
        let answer: unknown;
        try {
          answer = await writeRead(stream, message, options);
        } catch (error) {
          // libp2p could not decode it: judged only when it arrived whole.
          const verdict = received === null ? null : judgeRoutingAnswer(received());
          if (peer !== undefined && verdict?.kind === 'invalid') this.#misbehaved(peer, 'invalid-routing-message', verdict.reason);
          throw error;
        }
        const verdict = received === null ? null : judgeRoutingAnswer(received());
        if (peer !== undefined && verdict?.kind === 'invalid') {
          this.#misbehaved(peer, 'invalid-routing-message', verdict.reason);
          throw new Error(`a routing answer that breaks the mesh's rules: ${verdict.reason}`);
        }
        return answer;
      };
    }
  }

  // Resets `stream` once `peer` has sent more than PEER_LIMITS.routingMessageBytes on it; returns
  // what it received so far.
  #boundRoutingStream(stream: Stream, peer: PeerId): () => Uint8Array {
    const chunks: Uint8Array[] = [];
    let length = 0;
    stream.addEventListener('message', (event) => {
      if (length > PEER_LIMITS.routingMessageBytes) return;
      const chunk = bytesOf(event.data);
      chunks.push(chunk);
      length += chunk.length;
      if (length <= PEER_LIMITS.routingMessageBytes) return;
      this.#misbehaved(peer, 'oversized-routing-message', `over ${PEER_LIMITS.routingMessageBytes} bytes on a routing stream`);
      stream.abort(new Error(`over ${PEER_LIMITS.routingMessageBytes} bytes on a routing stream`));
    });
    return () => {
      const all = new Uint8Array(length);
      let at = 0;
      for (const chunk of chunks) {
        all.set(chunk, at);
        at += chunk.length;
      }
      return all;
    };
  }

  #routingBudget(peer: PeerId): boolean {
    const key = peer.toString();
    const minute = Math.floor(this.#clock.now() / 60_000);
    let spent = this.#routingServed.get(key);
    if (spent === undefined || spent.minute !== minute) {
      spent = { minute, count: 0 };
      this.#routingServed.delete(key);
      this.#routingServed.set(key, spent);
      if (this.#routingServed.size > MAX_SCORED_PEERS) this.#routingServed.delete(this.#routingServed.keys().next().value!);
    }
    return ++spent.count <= PEER_LIMITS.routingRequestsPerMinute;
  }

  // Connects to `target` when this node is not connected to it: at the addresses it knows, else (or
  // when they no longer answer) at those a lookup by NodeId finds.
  async #reach(target: PeerId, signal: AbortSignal | undefined): Promise<void> {
    if (this.libp2p.getConnections(target).length > 0) return;
    const known = await this.libp2p.peerStore.get(target).then(
      (peer) => peer.addresses.length > 0,
      () => false,
    );
    if (known) {
      // Briefly: addresses heard long ago may be a NATed node's LAN ones, each a dial that hangs to
      // its timeout (libp2p tries them in turn) while the node is reached through a relay now.
      const giveUp = new AbortController();
      const timer = this.#clock.setTimeout(() => giveUp.abort(new Error(`no connection in ${KNOWN_ADDRESSES_MS} ms`)), KNOWN_ADDRESSES_MS);
      try {
        await this.libp2p.dial(target, { signal: signal ? AbortSignal.any([signal, giveUp.signal]) : giveUp.signal });
        return;
      } catch {
        if (signal?.aborted) throw signal.reason;
        // Moved, gone or behind a NAT now: looked up afresh.
      } finally {
        timer.cancel();
      }
    }
    const key = target.toString();
    let lookup = this.#lookups.get(key);
    if (lookup === undefined) {
      lookup = this.#lookUp(target).finally(() => this.#lookups.delete(key));
      this.#lookups.set(key, lookup);
    }
    if (signal === undefined) return lookup;
    signal.throwIfAborted();
    const aborted = new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    aborted.catch(() => {});
    await Promise.race([lookup, aborted]);
  }

  // Whether the routing table holds a peer to ask, waiting ROUTING_WARMUP_MS for one to join it
  // while the node has connections (a new one is checked with a ping before it joins).
  async #routingPeers(): Promise<boolean> {
    const table = (this.libp2p.services.dht as unknown as KadInternals).routingTable;
    if (table === undefined || table.size > 0) return true;
    if (this.libp2p.getConnections().length === 0) return false;
    const joined = table;
    await new Promise<void>((resolve) => {
      const timer = this.#clock.setTimeout(done, ROUTING_WARMUP_MS);
      function done(): void {
        timer.cancel();
        joined.removeEventListener('peer:add', done);
        resolve();
      }
      joined.addEventListener('peer:add', done);
    });
    return joined.size > 0;
  }

  // Asks the DHT for `target`'s addresses and dials each new set an answer brings until one
  // connects: a peer answering first with addresses that lead nowhere does not end the lookup.
  async #lookUp(target: PeerId): Promise<void> {
    const name = toHex(nodeIdOf(target)!);
    if (!(await this.#routingPeers())) throw new PeerUnreachableError(`${name} is not connected, and no peer of this node answers lookups`);
    const giveUp = new AbortController();
    const timer = this.#clock.setTimeout(() => giveUp.abort(new Error(`no answer in ${ROUTING_LOOKUP_MS} ms`)), ROUTING_LOOKUP_MS);
    const signal = AbortSignal.any([giveUp.signal, this.#stopping.signal]);
    const tried = new Set<string>();
    let failure: unknown = null;
    try {
      for await (const event of this.libp2p.services.dht.findPeer(target, { signal, useCache: false })) {
        if (event.name !== 'FINAL_PEER' || !event.peer.id.equals(target)) continue;
        const fresh = event.peer.multiaddrs.filter((ma) => !tried.has(ma.toString()));
        if (fresh.length === 0) continue;
        for (const ma of fresh) tried.add(ma.toString());
        const own = fresh.map((ma) => (ma.getComponents().at(-1)?.name === 'p2p' ? ma : ma.encapsulate(`/p2p/${target.toString()}`)));
        try {
          await this.libp2p.dial(own, { signal });
          return;
        } catch (error) {
          failure = error;
        }
      }
    } catch (error) {
      if (failure === null && !signal.aborted && !(error instanceof Error && error.name === 'NotFoundError')) failure = error;
    } finally {
      timer.cancel();
    }
    if (failure !== null)
      throw new PeerUnreachableError(`cannot reach ${name} at the addresses peer routing found (${[...tried].join(', ')}): ${messageOf(failure)}`);
    if (giveUp.signal.aborted) throw new PeerUnreachableError(`${name} is not connected, and peer routing found no address for it in ${ROUTING_LOOKUP_MS} ms`);
    throw new PeerUnreachableError(`${name} is not connected, and peer routing found no address for it`);
  }

  // ---- gossip ----

  async publish(topic: string, data: Uint8Array): Promise<void> {
    await this.libp2p.services.pubsub.publish(topic, data);
  }

  handle(topic: string, handler: (message: GossipMessage) => Promise<Verdict>): void {
    const pubsub = this.libp2p.services.pubsub;
    pubsub.topicValidators.set(topic, async (peer, message) => {
      const from = message.type === 'signed' ? nodeIdOf(message.from) : null;
      const via = nodeIdOf(peer);
      if (from === null || via === null) return TopicValidatorResult.Reject;
      let verdict: Verdict;
      try {
        verdict = await handler({ topic, data: message.data, origin: from, peer: via });
      } catch (error) {
        this.#log(`gossip: ${topic} handler failed: ${messageOf(error)}`);
        verdict = 'ignore';
      }
      if (verdict === 'reject') this.#misbehaved(peer, 'invalid-message', `a ${topic} message its handler rejected`);
      return VERDICTS[verdict];
    });
    pubsub.subscribe(topic);
  }

  unsubscribe(topic: string): void {
    const pubsub = this.libp2p.services.pubsub;
    pubsub.unsubscribe(topic);
    pubsub.topicValidators.delete(topic);
  }

  subscribers(topic: string): number {
    return this.libp2p.services.pubsub.getSubscribers(topic).length;
  }

  onPeerJoined(listener: (peer: Uint8Array) => void): () => void {
    this.#joined.add(listener);
    return () => this.#joined.delete(listener);
  }

  // ---- penalties ----

  penalise(node: Uint8Array, reason: string, penalty: Penalty = 'invalid-answer'): void {
    this.#misbehaved(peerIdOf(node), penalty, reason);
  }

  #misbehaved(peer: PeerId, penalty: Penalty, detail: string): void {
    const key = peer.toString();
    const total = (this.#points.get(key) ?? 0) + PENALTIES[penalty];
    this.#points.set(key, total);
    if (this.#points.size > MAX_SCORED_PEERS) this.#points.delete(this.#points.keys().next().value!);
    if (total < this.#banThreshold) return;
    this.#points.delete(key);
    this.#banned.set(key, this.#clock.now() + this.#banMs);
    this.#log(`p2p: banning ${key} for ${Math.round(this.#banMs / 1000)} s (${penalty}: ${detail})`);
    this.#resetStreams('the peer was banned', peer);
    void this.libp2p.hangUp(peer).catch(() => {});
  }

  // ---- request/response ----

  request(peer: Uint8Array, protocol: string, data: Uint8Array, options: RequestOptions = {}): Promise<Uint8Array> {
    return runRequest(this.#clock, peer, protocol, data, options, async (call) => {
      const { id, signal } = call;
      const stream = await this.#dial(peer, id, this.#rpc.streams, signal, 'requests', options.relayed === true);
      try {
        return await this.#exchange(stream, call, data);
      } catch (error) {
        stream.abort(error instanceof Error ? error : new Error(String(error)));
        throw error;
      }
    });
  }

  // Opens a stream on `id`; failures as the port names them (`what` is counted against `limit`).
  // A protocol that is not `relayed` gets a direct connection, or says why there is none.
  async #dial(peer: Uint8Array, id: string, limit: number, signal: AbortSignal | undefined, what: string, relayed: boolean): Promise<Stream> {
    const target = peerIdOf(peer);
    try {
      // A relayed connection is used as it is (libp2p would dial every address of the peer beside it).
      let connection = this.#upgrades.connectionTo(target) ?? (await this.#connect(target, signal));
      if (isRelayed(connection) && !relayed) connection = await this.#upgrades.direct(target, id, signal ?? this.#stopping.signal);
      return await connection.newStream(id, { ...(signal ? { signal } : {}), maxOutboundStreams: limit, runOnLimitedConnection: relayed });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof NetworkError) throw error;
      const name = toHex(peer);
      if (error instanceof Error && error.name === 'LimitedConnectionError') {
        throw new RelayedOnlyError(`${name} is reached only through a relay, and ${id} runs on direct connections only`);
      }
      if (error instanceof Error && error.name === 'UnsupportedProtocolError') throw new ProtocolNotServedError(name, id);
      if (error instanceof Error && error.name === 'TooManyOutboundProtocolStreamsError') {
        throw new PeerBusyError(`${limit} ${what} to ${name} on ${id} are already open, as many as this node opens`);
      }
      throw new PeerUnreachableError(`cannot reach ${name}: ${messageOf(error)}`);
    }
  }

  // A node this node cannot dial (no address known, or none that answers) may hold a reservation
  // on a relay this node is connected to: each is tried, at most RELAYS_TRIED of them.
  async #connect(target: PeerId, signal: AbortSignal | undefined): Promise<Connection> {
    try {
      // At the addresses it knows, else at those peer routing finds.
      await this.#reach(target, signal);
      return this.#upgrades.connectionTo(target) ?? (await this.libp2p.dial(target, signal ? { signal } : {}));
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      let tried = 0;
      for (const connection of this.libp2p.getConnections()) {
        if (tried >= RELAYS_TRIED) break;
        const relay = connection.remotePeer;
        if (relay.equals(target) || isRelayed(connection)) continue;
        const served = await this.libp2p.peerStore.get(relay).then(
          (p) => p.protocols,
          () => [] as string[],
        );
        if (!served.includes(RELAY_HOP_PROTOCOL)) continue;
        tried++;
        const address = multiaddr(`${connection.remoteAddr.decapsulateCode(CODE_P2P).toString()}/p2p/${relay}/p2p-circuit/p2p/${target}`);
        try {
          return await this.libp2p.dial(address, signal ? { signal } : {});
        } catch (failure) {
          if (signal?.aborted) throw signal.reason;
          this.#log(`p2p: no way to ${target} through relay ${relay}: ${messageOf(failure)}`);
        }
      }
      throw error;
    }
  }

  // Sends the request frame while reading the answer frame: a handler may refuse an oversized
  // request before reading it, and the refusal must not wait behind the request's bytes.
  async #exchange(stream: Stream, call: Call, data: Uint8Array): Promise<Uint8Array> {
    const { id, peer: name, bounds, signal } = call;
    const maxFrame = 1 + Math.max(bounds.maxResponseBytes, MAX_FAILURE_BYTES);
    const lp = lpStream(stream, { maxDataLength: maxFrame, maxBufferSize: bufferFor(maxFrame) });
    this.#traffic.count(rpcKind(id), negotiationBytes(id) + varintBytes(data.length) + data.length);
    // Its end shows in the answer (or its absence), so nobody awaits it.
    lp.write(data, { signal })
      .then(() => stream.close({ signal }))
      .catch(() => {});
    let frame: Uint8Array;
    try {
      frame = (await lp.read({ signal })).subarray();
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (overBound(error)) {
        throw new MessageTooLargeError('response-too-large', `the answer from ${name} on ${id} is over this call's bound of ${bounds.maxResponseBytes}`);
      }
      throw new PeerUnreachableError(`the stream to ${name} on ${id} ended before its answer: ${messageOf(error)}`);
    }
    const body = frame.subarray(1);
    switch (frame[0]) {
      case ANSWER.ok:
        if (body.length > bounds.maxResponseBytes) {
          throw new MessageTooLargeError(
            'response-too-large',
            `an answer of ${body.length} bytes from ${name} on ${id} is over this call's bound of ${bounds.maxResponseBytes}`,
          );
        }
        return body.slice();
      case ANSWER.failed:
        throw new RemoteError('remote-failed', `${name} failed on ${id}: ${decoder.decode(body)}`);
      case ANSWER.requestTooLarge:
        throw new MessageTooLargeError('request-too-large', `${name} refused the request on ${id}: ${decoder.decode(body)}`);
      case ANSWER.responseTooLarge:
        throw new MessageTooLargeError('response-too-large', `${name} did not send its answer on ${id}: ${decoder.decode(body)}`);
      case ANSWER.busy:
        throw new PeerBusyError(`${name} refused the request on ${id}: ${decoder.decode(body)}`);
      default:
        throw new RemoteError('bad-response', `${name} answered on ${id} with an unknown status`);
    }
  }

  serve(protocol: string, handler: RpcHandler, options: ServeOptions = {}): () => void {
    const id = rpcProtocolId(protocol);
    const bounds = boundsOf(options);
    this.#served.set(id, handler);
    // libp2p refuses streams past its own limit by resetting them, which a requester cannot tell
    // from a lost connection; its inbound limit is therefore a backstop above the node's, and the
    // node answers the requests past its limit as busy. Outbound, the limit is the node's.
    const { streams } = this.#rpc;
    this.libp2p
      .handle(id, (stream, connection) => this.#answer(stream, connection, id, handler, bounds), {
        force: true,
        maxInboundStreams: 2 * streams,
        maxOutboundStreams: streams,
        runOnLimitedConnection: options.relayed === true,
      })
      .catch((error: unknown) => this.#log(`rpc: cannot serve ${id}: ${messageOf(error)}`));
    return () => {
      if (this.#served.get(id) !== handler) return;
      this.#served.delete(id);
      this.libp2p.unhandle(id).catch(() => {});
    };
  }

  async #answer(stream: Stream, connection: Connection, id: string, handler: RpcHandler, bounds: Bounds): Promise<void> {
    const peer = nodeIdOf(connection.remotePeer);
    if (peer === null) return stream.abort(new Error('not a mesh node'));
    const lp = lpStream(stream, { maxDataLength: bounds.maxRequestBytes, maxBufferSize: bufferFor(bounds.maxRequestBytes) });
    const { streams, readMs, handlerMs } = this.#rpc;
    // The handler's signal: the requester went away, the handler's deadline passed, or this node stops.
    const stop = new AbortController();
    const end = (reason: Error): void => {
      stop.abort(reason);
      stream.abort(reason);
    };
    const onGone = (): void => stop.abort(handlerStops.requesterGone());
    stream.addEventListener('close', onGone);
    const onStop = (): void => end(handlerStops.nodeStopped());
    this.#stopping.signal.addEventListener('abort', onStop);
    const key = `${connection.remotePeer.toString()} ${id}`;
    const open = this.#serving.get(key) ?? 0;
    this.#serving.set(key, open + 1);
    let deadline = this.#clock.setTimeout(() => {
      this.#misbehaved(connection.remotePeer, 'stalled-request', `no request frame on ${id} in ${readMs} ms`);
      end(new Error(`no request frame in ${readMs} ms`));
    }, readMs);
    // Once the handler is told to stop, its deadline has nothing left to end.
    stop.signal.addEventListener('abort', () => deadline.cancel(), { once: true });
    const reply = async (status: number, body: Uint8Array): Promise<void> => {
      // The stream's close from here on is the exchange ending, not the requester going away (and
      // an Error built for every answered request costs more than the rest of the close).
      stream.removeEventListener('close', onGone);
      const frame = answerFrame(status, body);
      this.#traffic.count(rpcKind(id), negotiationBytes(id) + varintBytes(frame.length) + frame.length);
      await lp.write(frame);
      await stream.close();
    };
    try {
      if (open >= streams) {
        // Told why rather than reset, so the requester does not take a full peer for a gone one.
        await stream.closeRead();
        return await reply(ANSWER.busy, encoder.encode(`${open} requests from this peer on ${id} are in flight, as many as it takes`));
      }
      let request: Uint8Array;
      try {
        request = (await lp.read({ signal: stop.signal })).subarray();
      } catch (error) {
        if (!overBound(error)) throw error;
        this.#misbehaved(connection.remotePeer, 'oversized-request', `a request on ${id} over ${bounds.maxRequestBytes} bytes`);
        // The rest of the request is discarded as it comes; the requester, told why, hangs up.
        await stream.closeRead();
        return await reply(ANSWER.requestTooLarge, encoder.encode(`requests on ${id} are at most ${bounds.maxRequestBytes} bytes`));
      }
      deadline.cancel();
      deadline = this.#clock.setTimeout(() => end(handlerStops.deadline(handlerMs)), handlerMs);
      let answer: Uint8Array;
      try {
        answer = await handler({ peer, data: request.slice(), signal: stop.signal });
      } catch (error) {
        // A handler that refuses for load (a serve budget spent) says busy, as the stream limit does.
        if (error instanceof PeerBusyError) return await reply(ANSWER.busy, encoder.encode(failureMessage(error)));
        this.#log(`rpc: ${id} handler failed: ${messageOf(error)}`);
        return await reply(ANSWER.failed, encoder.encode(failureMessage(error)));
      }
      if (answer.length > bounds.maxResponseBytes) {
        this.#log(`rpc: ${id} handler answered ${answer.length} bytes, over its bound of ${bounds.maxResponseBytes}`);
        return await reply(ANSWER.responseTooLarge, encoder.encode(`answers on ${id} are at most ${bounds.maxResponseBytes} bytes`));
      }
      await reply(ANSWER.ok, answer);
    } catch (error) {
      stream.abort(error instanceof Error ? error : new Error(String(error)));
    } finally {
      deadline.cancel();
      const left = (this.#serving.get(key) ?? 1) - 1;
      if (left > 0) this.#serving.set(key, left);
      else this.#serving.delete(key);
      stream.removeEventListener('close', onGone);
      this.#stopping.signal.removeEventListener('abort', onStop);
    }
  }

  // ---- raw streams ----

  async openStream(peer: Uint8Array, protocol: string, options: StreamOptions & { signal?: AbortSignal } = {}): Promise<PeerStream> {
    const id = checkStreamProtocolId(protocol);
    options.signal?.throwIfAborted();
    const stream = await this.#dial(peer, id, options.maxStreams ?? DEFAULT_STREAM_LIMIT, options.signal, 'streams', options.relayed === true);
    return this.#tracked(new Libp2pPeerStream(stream, peer));
  }

  #tracked(stream: Libp2pPeerStream): Libp2pPeerStream {
    this.#rawStreams.add(stream);
    const forget = (): void => void this.#rawStreams.delete(stream);
    stream.closed.then(forget, forget);
    return stream;
  }

  #resetStreams(reason: string, peer?: PeerId): void {
    for (const stream of this.#rawStreams) if (peer === undefined || peerIdOf(stream.peer).equals(peer)) stream.reset(new Error(reason));
  }

  serveStream(protocol: string, handler: StreamHandler, options: StreamOptions = {}): () => void {
    const id = checkStreamProtocolId(protocol);
    const limit = options.maxStreams ?? DEFAULT_STREAM_LIMIT;
    const serving = (stream: Stream, connection: Connection): void => {
      const peer = nodeIdOf(connection.remotePeer);
      if (peer === null) return stream.abort(new Error('not a mesh node'));
      const wrapped = this.#tracked(new Libp2pPeerStream(stream, peer));
      try {
        handler(wrapped);
      } catch (error) {
        this.#log(`stream: ${id} handler failed: ${messageOf(error)}`);
        wrapped.reset();
      }
    };
    this.#streamHandlers.set(id, serving);
    this.libp2p
      .handle(id, serving, { force: true, maxInboundStreams: limit, maxOutboundStreams: limit, runOnLimitedConnection: options.relayed === true })
      .catch((error: unknown) => this.#log(`stream: cannot serve ${id}: ${messageOf(error)}`));
    return () => {
      if (this.#streamHandlers.get(id) !== serving) return;
      this.#streamHandlers.delete(id);
      this.libp2p.unhandle(id).catch(() => {});
    };
  }

  // ---- peers ----

  reportHeight(node: Uint8Array, height: number): void {
    let peer: PeerId;
    try {
      peer = peerIdOf(node);
    } catch {
      return;
    }
    // Only a connected peer is listed (and forgotten when it disconnects).
    if (this.libp2p.getConnections(peer).length > 0) this.#heights.set(peer.toString(), height);
  }

  peers(): PeerInfo[] {
    return this.libp2p.getPeers().flatMap((peer) => {
      const node = nodeIdOf(peer);
      // The oldest open connection stands for the peer (a simultaneous dial may leave two), a
      // working direct one before a relayed one.
      const connection =
        this.#upgrades.directTo(peer) ??
        this.libp2p
          .getConnections(peer)
          .filter((c) => c.status === 'open')
          .sort((x, y) => x.timeline.open - y.timeline.open)[0];
      if (node === null || connection === undefined) return [];
      const key = peer.toString();
      return [
        {
          node,
          height: this.#heights.get(key) ?? null,
          multiaddrs: (this.#listenAddrs.get(key) ?? []).map(String),
          remoteAddr: connection.remoteAddr.toString(),
          direction: connection.direction,
          connectedSince: connection.timeline.open,
          relayed: this.#upgrades.directTo(peer) === undefined,
        },
      ];
    });
  }

  async ping(peer: Uint8Array, options: { signal?: AbortSignal } = {}): Promise<number> {
    const target = peerIdOf(peer);
    // A round trip through a relay is not the link's (netgraph, coordinates); and libp2p's ping
    // would dial every address of the peer beside the relayed connection it has.
    if (this.#upgrades.directTo(target) === undefined && this.#upgrades.connectionTo(target) !== undefined) {
      throw new RelayedOnlyError(`${toHex(peer)} is reached only through a relay; pings measure direct links`);
    }
    try {
      const rtt = await this.libp2p.services.ping.ping(target, options.signal ? { signal: options.signal } : {});
      // Both ways counted here: the peer's libp2p answers without the network seeing it.
      this.#traffic.count('ping', 2 * (negotiationBytes(PING_PROTOCOL) + PING_BYTES));
      return rtt;
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw new PeerUnreachableError(`cannot ping ${toHex(peer)}: ${messageOf(error)}`);
    }
  }

  async dial(node: Uint8Array, address: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    const target = peerIdOf(node);
    let ma: Multiaddr;
    try {
      ma = multiaddr(address);
    } catch (error) {
      throw new InvalidAddressError(`the dial hint ${JSON.stringify(address)} is not a multiaddr: ${messageOf(error)}`);
    }
    const components = ma.getComponents();
    const last = components.at(-1);
    if (last?.name === 'p2p') {
      if (last.value !== target.toString()) throw new InvalidAddressError(`the dial hint names ${last.value}, not the node to reach (${target.toString()})`);
    } else {
      ma = ma.encapsulate(`/p2p/${target.toString()}`);
    }
    try {
      await this.libp2p.dial(ma, options.signal ? { signal: options.signal } : {});
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw new PeerUnreachableError(`cannot reach ${toHex(node)} at ${ma.toString()}: ${messageOf(error)}`);
    }
  }

  bootstrapAddresses(): string[] {
    const own = this.libp2p.getMultiaddrs().map(String);
    const theirs: string[] = [];
    for (const peer of this.libp2p.getPeers()) {
      const id = peer.toString();
      for (const ma of this.#listenAddrs.get(id) ?? []) {
        const text = ma.toString();
        theirs.push(text.includes('/p2p/') ? text : `${text}/p2p/${id}`);
      }
    }
    return [...new Set([...own, ...theirs])];
  }

  reachability(): { reachability: Reachability; relayAddresses: string[] } {
    const service = (this.libp2p.services as { reachability?: { readonly verdict: Reachability } }).reachability;
    return {
      reachability: service?.verdict ?? 'unknown',
      relayAddresses: this.libp2p
        .getMultiaddrs()
        .filter((a) => Circuit.matches(a))
        .map(String),
    };
  }

  /** Own multiaddrs (with the peer id), as printed at start. */
  addresses(): string[] {
    return this.libp2p.getMultiaddrs().map(String);
  }

  async stop(): Promise<void> {
    this.#reconnect?.cancel();
    this.#gossipCheck?.cancel();
    this.#stopping.abort();
    this.#upgrades.stop();
    this.#resetStreams('the node stopped');
    await this.libp2p.stop();
  }
}
