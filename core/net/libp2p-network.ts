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
 */
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { publicKeyFromRaw } from '@libp2p/crypto/keys';
import { type GossipSub, gossipsub, TopicValidatorResult } from '@libp2p/gossipsub';
import { identify } from '@libp2p/identify';
import type { Connection, Libp2p, PeerId, Stream } from '@libp2p/interface';
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
import { DirectUpgrades, isRelayed } from './direct-upgrade.ts';
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
import { type Bounds, boundsOf, type Call, failureMessage, handlerStops, MAX_FAILURE_CHARS, runRequest } from './rpc.ts';

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
}

type Services = { pubsub: GossipSub; ping: Ping };

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
// Relays a dial to an unknown node tries (docs/network.md, "Through NATs").
const RELAYS_TRIED = 3;
// How often peers are checked for a gossip stream that broke while their connection stayed up.
const GOSSIP_CHECK_MS = 5_000;
// How often, and how long at most, a joined peer is checked for this node's gossip stream to it.
const JOIN_POLL_MS = 10;
const JOIN_WAIT_MS = 3_000;

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
  /** Requests being served, by requester and protocol id. */
  readonly #serving = new Map<string, number>();
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
    const libp2p = await createLibp2p({
      ...host,
      connectionManager: {
        maxIncomingPendingConnections: PEER_LIMITS.pendingConnections,
        inboundConnectionThreshold: PEER_LIMITS.connectionsPerIpPerSecond,
        addressSorter: relayAddressesFirst,
        ...host.connectionManager,
      },
      connectionEncrypters: [noise()],
      streamMuxers: [yamux({ maxInboundStreams: PEER_LIMITS.streamsPerConnection })],
      connectionGater: {
        ...host.connectionGater,
        // One address (one host, or one NAT) holds a bounded share of the node's connections.
        denyInboundConnection: async (maConn) => {
          if ((await host.connectionGater?.denyInboundConnection?.(maConn)) === true) return true;
          // A relayed connection carries the relay's address: peers behind one relay are not one host
          // (the relay bounds them, "Relay limits").
          if (Circuit.matches(maConn.remoteAddr)) return false;
          const ip = ipOf(maConn.remoteAddr);
          if (ip === null || connectionsFrom(ip) < PEER_LIMITS.connectionsPerIp) return false;
          // At most connectionsPerIpPerSecond lines a second from one address: libp2p's rate limit comes first.
          options.log?.(`p2p: refusing a connection from ${ip} (connections-per-ip: ${PEER_LIMITS.connectionsPerIp} open)`);
          return true;
        },
        // A NodeId is an Ed25519 key: other key types cannot be mesh nodes.
        denyInboundEncryptedConnection: (peer) => peer.type !== 'Ed25519' || isBanned(peer),
        denyOutboundEncryptedConnection: (peer) => peer.type !== 'Ed25519' || isBanned(peer),
        denyDialPeer: (peer) => isBanned(peer),
      },
      services: {
        ...host.services,
        identify: identify(),
        // libp2p's connection monitor pings every peer each 10 s and hangs up when it cannot open
        // its ping stream; `ping` (the node's RTT samples) uses the same protocol. With the default
        // of one outbound ping stream per connection, a sample still waiting for a busy peer's answer
        // (one applying a sync range) made the monitor's ping fail, and the connection was cut
        // mid-sync. Each side may hold two of its own at once, and take four from the other.
        ping: ping({ maxOutboundStreams: 2, maxInboundStreams: 4 }),
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
        }),
      },
    });
    connectionsFrom = (ip) => libp2p.getConnections().filter((c) => !isRelayed(c) && ipOf(c.remoteAddr) === ip).length;
    const net = new Libp2pNetwork(libp2p as unknown as Libp2p<Services>, banned, options);
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
      return await this.libp2p.dial(target, signal ? { signal } : {});
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
      await lp.write(answerFrame(status, body));
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
      return await this.libp2p.services.ping.ping(target, options.signal ? { signal: options.signal } : {});
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
