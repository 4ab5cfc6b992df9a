/**
 * The network port of a simulated node, over the SimWorld (world.ts). Gossip follows gossipsub's
 * own rules and parameters (docs/sim.md): a node publishes its own messages to every subscribed
 * peer (flood publish, js-libp2p's default); a message it accepts goes on to its mesh of D peers
 * per topic, kept between D_lo and D_hi at each one-second heartbeat with GRAFT and PRUNE; and at
 * each heartbeat it tells D_lazy peers outside the mesh the ids it saw in the last three
 * (IHAVE), which they ask for when they lack them (IWANT). Requests, pings and raw streams go to
 * connected peers with the world's latency and uplink; streams carry their bytes at once once
 * opened (their opening takes a round trip).
 */
import { toHex } from '../encoding/hex.ts';
import { InvalidAddressError, PeerUnreachableError } from '../net/errors.ts';
import { IHAVE_HEARTBEATS } from '../net/gossip-options.ts';
import { Connections, InProcessEndpoint, lostWhenCut } from '../net/local-peers.ts';
import {
  checkStreamProtocolId,
  type GossipMessage,
  type Network,
  type PeerInfo,
  type PeerStream,
  type RequestOptions,
  type RpcHandler,
  type RpcLimits,
  rpcLimitsOf,
  type ServeOptions,
  type StreamHandler,
  type StreamOptions,
  TOPICS,
  type Verdict,
} from '../net/network.ts';
import { handlerStops, runRequest } from '../net/rpc.ts';
import type { Timer } from '../time/clock.ts';
import type { Prng } from './prng.ts';
import type { SimPeer, SimWorld } from './world.ts';

/** Gossipsub's parameters, as @libp2p/gossipsub sets them by default and the node sets the rest (gossip-options.ts). */
export const GOSSIPSUB = Object.freeze({
  D: 6,
  Dlo: 4,
  Dhi: 12,
  Dlazy: 6,
  heartbeatMs: 1_000,
  /** Heartbeats a message stays in the cache, and those whose ids IHAVE advertises. */
  historyLength: 5,
  historyGossip: IHAVE_HEARTBEATS,
  /** How long an id counts as seen (gossipsub's seenTTL: 120 heartbeats). */
  seenMs: 120_000,
});

/**
 * Bytes a signed gossip message adds to its data and topic name, as js-libp2p's gossipsub encodes
 * it (measured with GET /traffic, docs/sim.md "Validation"): from 40, seqno 10, signature 66, key
 * 38, the data's and topic's field headers and the message's own in its frame.
 */
const GOSSIP_OVERHEAD = 161;
/** Bytes of a message id in IHAVE and IWANT: from (38) and seqno (8) in a field of their own. */
export const ID_BYTES = 48;
export const CONTROL_BYTES = 40;
/** A request's or answer's framing on its stream (multistream, length prefix). */
const RPC_OVERHEAD = 60;

/** The kind traffic of gossipsub's own control is counted under. */
export const CONTROL_KIND = 'gossipsub-control';

interface Cached {
  readonly topic: string;
  readonly data: Uint8Array;
  readonly origin: Uint8Array;
  /** The origin in hex, worked out once for every node that relays it. */
  readonly originHex: string;
}

/** The messages cached in one heartbeat, and their ids by topic for IHAVE. */
class CacheWindow {
  readonly messages = new Map<string, Cached>();
  readonly idsByTopic = new Map<string, string[]>();

  /** Caches a message new to this node (each id comes once: publish, or its first acceptance). */
  add(id: string, message: Cached): void {
    this.messages.set(id, message);
    const ids = this.idsByTopic.get(message.topic);
    if (ids === undefined) this.idsByTopic.set(message.topic, [id]);
    else ids.push(id);
  }
}

interface InFlight {
  readonly peer: SimNetwork;
  readonly cut: AbortController;
}

export class SimNetwork implements Network, SimPeer {
  readonly self: Uint8Array;
  readonly hex: string;
  /** The node's slot in the world. */
  readonly index: number;
  readonly links = new Set<SimNetwork>();
  readonly penalties: { node: string; reason: string }[] = [];
  /** Bytes sent, by topic or protocol. */
  readonly sent = new Map<string, number>();
  /** When the uplink is free again (ms, fractional). */
  uplinkFreeAt = 0;
  stopped = false;
  /** An adversary's switch: accepts what it receives but forwards and advertises nothing. */
  relays = true;
  /** Told of each gossip message this node's handler accepts, with the bytes every receiver shares. */
  onAccepted: ((topic: string, data: Uint8Array) => void) | null = null;
  readonly #world: SimWorld<SimNetwork>;
  readonly #rng: Prng;
  readonly #limits: RpcLimits;
  readonly #handlers = new Map<string, (message: GossipMessage) => Promise<Verdict>>();
  readonly #mesh = new Map<string, Set<SimNetwork>>();
  /** The message cache: one window per heartbeat, newest first. */
  readonly #cache: CacheWindow[] = [new CacheWindow()];
  readonly #seen = new Map<string, number>();
  #seq = 0;
  #heartbeat: Timer;
  readonly #joined = new Set<(peer: Uint8Array) => void>();
  readonly #connections = new Connections<SimNetwork>();
  readonly #calls = new Set<InFlight>();
  readonly #endpoint: InProcessEndpoint;

  constructor(world: SimWorld<SimNetwork>, self: Uint8Array, index: number, rng: Prng, limits: Partial<RpcLimits> = {}) {
    this.#world = world;
    this.self = self;
    this.hex = toHex(self);
    this.index = index;
    this.#rng = rng;
    this.#limits = rpcLimitsOf(limits);
    this.#endpoint = new InProcessEndpoint(self);
    // Heartbeats spread over the second, as independent processes' would be.
    this.#heartbeat = world.clock.setTimeout(() => this.#beat(), 1 + rng.int(GOSSIPSUB.heartbeatMs));
  }

  count(kind: string, bytes: number): void {
    this.sent.set(kind, (this.sent.get(kind) ?? 0) + bytes);
  }

  /** Stops its heartbeat; the world cuts its connections (SimWorld.detach). */
  close(): void {
    this.#heartbeat.cancel();
  }

  // ----------------------------------------------------------------------------------------
  // Connections

  connected(peer: SimNetwork, direction: 'inbound' | 'outbound', since: number): void {
    if (this.links.has(peer)) return;
    this.links.add(peer);
    this.#connections.add(peer, direction, since);
    if (this.handles(TOPICS.heights) && peer.handles(TOPICS.heights)) this.#joinedBy(peer);
  }

  disconnected(peer: SimNetwork): void {
    if (!this.links.delete(peer)) return;
    this.#connections.delete(peer);
    for (const mesh of this.#mesh.values()) mesh.delete(peer);
    for (const call of this.#calls) if (call.peer === peer) call.cut.abort(peer.stopped ? handlerStops.nodeStopped() : handlerStops.requesterGone());
    this.#endpoint.cutStreams(peer.#endpoint, 'the connection closed before the stream ended');
  }

  #joinedBy(peer: SimNetwork): void {
    for (const listener of this.#joined) listener(peer.self);
  }

  // ----------------------------------------------------------------------------------------
  // Gossip

  handles(topic: string): boolean {
    return this.#handlers.has(topic);
  }

  handle(topic: string, handler: (message: GossipMessage) => Promise<Verdict>): void {
    this.#handlers.set(topic, handler);
    if (!this.#mesh.has(topic)) this.#mesh.set(topic, new Set());
    if (topic !== TOPICS.heights) return;
    for (const other of this.links) {
      if (!other.handles(topic)) continue;
      other.#joinedBy(this);
      this.#joinedBy(other);
    }
  }

  unsubscribe(topic: string): void {
    this.#handlers.delete(topic);
    this.#mesh.delete(topic);
  }

  subscribers(topic: string): number {
    let count = 0;
    for (const peer of this.links) if (peer.handles(topic)) count++;
    return count;
  }

  onPeerJoined(listener: (peer: Uint8Array) => void): () => void {
    this.#joined.add(listener);
    return () => this.#joined.delete(listener);
  }

  penalise(node: Uint8Array, reason: string): void {
    this.penalties.push({ node: toHex(node), reason });
  }

  async publish(topic: string, data: Uint8Array): Promise<void> {
    if (this.stopped) return;
    const id = `${this.hex}:${this.#seq++}`;
    this.#seen.set(id, this.#world.clock.now());
    const message: Cached = { topic, data, origin: this.self, originHex: this.hex };
    this.#cache[0]!.add(id, message);
    for (const peer of this.links) if (peer.handles(topic)) this.#push(peer, id, message);
  }

  #push(peer: SimNetwork, id: string, message: Cached): void {
    const delay = this.#world.transmit(this, peer, message.data.length + GOSSIP_OVERHEAD + message.topic.length, message.topic, true);
    // Most frames carry what their receiver will have seen when they land, and do nothing there:
    // such a frame costs its bytes and its time on the uplink, but no timer.
    if (delay === null || peer.#ignores(id, delay)) return;
    this.#world.deliver(this, peer, delay, () => peer.#receive(id, message, this));
  }

  // Whether a frame of `id` landing in `delay` ms will end at #receive's first line: this node has
  // stopped, or will still count the id as seen then (#beat forgets it only seenMs after).
  #ignores(id: string, delay: number): boolean {
    if (this.stopped) return true;
    const seenAt = this.#seen.get(id);
    return seenAt !== undefined && this.#world.clock.now() + delay - seenAt < GOSSIPSUB.seenMs;
  }

  // Most frames a node receives repeat what it has seen: those end here, without a promise.
  #receive(id: string, message: Cached, from: SimNetwork): void {
    if (this.stopped || this.#seen.has(id)) return;
    const handler = this.#handlers.get(message.topic);
    if (handler === undefined) return;
    this.#seen.set(id, this.#world.clock.now());
    void this.#judge(id, message, from, handler);
  }

  async #judge(id: string, message: Cached, from: SimNetwork, handler: (message: GossipMessage) => Promise<Verdict>): Promise<void> {
    let verdict: Verdict;
    try {
      verdict = await handler({ topic: message.topic, data: message.data.slice(), origin: message.origin, peer: from.self });
    } catch {
      verdict = 'ignore';
    }
    if (verdict !== 'accept' || this.stopped) return;
    this.onAccepted?.(message.topic, message.data);
    if (!this.relays) return;
    this.#cache[0]!.add(id, message);
    for (const peer of this.#mesh.get(message.topic) ?? []) {
      if (peer !== from && peer.hex !== message.originHex && this.links.has(peer)) this.#push(peer, id, message);
    }
  }

  #beat(): void {
    if (this.stopped) return;
    this.#heartbeat = this.#world.clock.setTimeout(() => this.#beat(), GOSSIPSUB.heartbeatMs);
    const now = this.#world.clock.now();
    for (const [topic, mesh] of this.#mesh) {
      const candidates: SimNetwork[] = [];
      for (const peer of this.links) if (peer.handles(topic) && !mesh.has(peer)) candidates.push(peer);
      for (const peer of mesh) if (!peer.handles(topic) || !this.links.has(peer)) mesh.delete(peer);
      if (mesh.size < GOSSIPSUB.Dlo) {
        for (const peer of this.#rng.sample(candidates, GOSSIPSUB.D - mesh.size)) this.#graft(topic, peer);
      } else if (mesh.size > GOSSIPSUB.Dhi) {
        for (const peer of this.#rng.sample([...mesh], mesh.size - GOSSIPSUB.D)) this.#prune(topic, peer);
      }
      if (this.relays) this.#gossip(topic, mesh, candidates);
    }
    this.#cache.unshift(new CacheWindow());
    this.#cache.length = Math.min(this.#cache.length, GOSSIPSUB.historyLength);
    for (const [id, at] of this.#seen) {
      if (now - at < GOSSIPSUB.seenMs) break;
      this.#seen.delete(id);
    }
  }

  #graft(topic: string, peer: SimNetwork): void {
    this.#mesh.get(topic)!.add(peer);
    this.#world.send(this, peer, CONTROL_BYTES, CONTROL_KIND, false, () => peer.#mesh.get(topic)?.add(this));
  }

  #prune(topic: string, peer: SimNetwork): void {
    this.#mesh.get(topic)!.delete(peer);
    this.#world.send(this, peer, CONTROL_BYTES, CONTROL_KIND, false, () => peer.#mesh.get(topic)?.delete(this));
  }

  // IHAVE to D_lazy peers outside the mesh: the ids of this topic in the last historyGossip heartbeats.
  #gossip(topic: string, mesh: Set<SimNetwork>, outside: SimNetwork[]): void {
    const ids: string[] = [];
    for (const window of this.#cache.slice(0, GOSSIPSUB.historyGossip)) for (const id of window.idsByTopic.get(topic) ?? []) ids.push(id);
    if (ids.length === 0) return;
    const targets = outside.filter((peer) => !mesh.has(peer));
    const lazy = Math.max(GOSSIPSUB.Dlazy, Math.floor(targets.length / 4));
    for (const peer of this.#rng.sample(targets, lazy)) {
      this.#world.send(this, peer, CONTROL_BYTES + ids.length * ID_BYTES, CONTROL_KIND, true, () => peer.#ihave(this, ids));
    }
  }

  #ihave(from: SimNetwork, ids: readonly string[]): void {
    if (this.stopped) return;
    const wanted = ids.filter((id) => !this.#seen.has(id));
    if (wanted.length === 0) return;
    this.#world.send(this, from, CONTROL_BYTES + wanted.length * ID_BYTES, CONTROL_KIND, true, () => from.#iwant(this, wanted));
  }

  #iwant(from: SimNetwork, ids: readonly string[]): void {
    for (const id of ids) {
      const message = this.#cached(id);
      if (message !== undefined) this.#push(from, id, message);
    }
  }

  #cached(id: string): Cached | undefined {
    for (const window of this.#cache) {
      const message = window.messages.get(id);
      if (message !== undefined) return message;
    }
    return undefined;
  }

  // ----------------------------------------------------------------------------------------
  // Requests, streams, pings

  #linked(node: Uint8Array): SimNetwork {
    const hex = toHex(node);
    for (const peer of this.links) if (peer.hex === hex) return peer;
    throw new PeerUnreachableError(`${hex} is not connected`);
  }

  /** Resolves when `bytes` sent to `peer` have arrived (never, when the connection goes first). */
  #carry(peer: SimNetwork, bytes: number, kind: string): Promise<void> {
    return new Promise((resolve) => this.#world.send(this, peer, bytes, kind, false, resolve));
  }

  request(peer: Uint8Array, protocol: string, data: Uint8Array, options: RequestOptions = {}): Promise<Uint8Array> {
    const clock = this.#world.clock;
    return runRequest(clock, peer, protocol, data, options, async ({ id, peer: name, bounds, signal }) => {
      const target = this.#linked(peer);
      const kind = `rpc ${protocol}`;
      const call: InFlight = { peer: target, cut: new AbortController() };
      const lost = lostWhenCut(call.cut, name, id);
      this.#calls.add(call);
      try {
        await Promise.race([this.#carry(target, data.length + RPC_OVERHEAD, kind), lost]);
        const incoming = { from: this.#endpoint, id, name, data, bounds, signal, cut: call.cut, lost };
        const answer = await target.#endpoint.answer(incoming, clock, this.#limits);
        await Promise.race([target.#carry(this, answer.length + RPC_OVERHEAD, kind), lost]);
        return answer;
      } finally {
        this.#calls.delete(call);
      }
    });
  }

  serve(protocol: string, handler: RpcHandler, options: ServeOptions = {}): () => void {
    return this.#endpoint.serve(protocol, handler, options);
  }

  async openStream(peer: Uint8Array, protocol: string, options: StreamOptions & { signal?: AbortSignal } = {}): Promise<PeerStream> {
    const id = checkStreamProtocolId(protocol);
    options.signal?.throwIfAborted();
    const target = this.#linked(peer);
    // Agreed on after a round trip, as multistream-select is.
    await this.#carry(target, RPC_OVERHEAD, `stream ${id}`);
    await target.#carry(this, RPC_OVERHEAD, `stream ${id}`);
    options.signal?.throwIfAborted();
    if (!this.links.has(target)) throw new PeerUnreachableError(`${target.hex} is not connected`);
    return target.#endpoint.accept(this.#endpoint, id, target.hex, options);
  }

  serveStream(protocol: string, handler: StreamHandler, options: StreamOptions = {}): () => void {
    return this.#endpoint.serveStream(protocol, handler, options);
  }

  reportHeight(node: Uint8Array, height: number): void {
    this.#connections.reportHeight(node, height);
  }

  peers(): PeerInfo[] {
    return this.#connections.peers((peer) => `/sim/${peer.index}/p2p/${peer.hex}`);
  }

  async ping(peer: Uint8Array, options: { signal?: AbortSignal } = {}): Promise<number> {
    options.signal?.throwIfAborted();
    const target = this.#linked(peer);
    const start = this.#world.clock.now();
    await this.#carry(target, 64, 'ping');
    await target.#carry(this, 64, 'ping');
    options.signal?.throwIfAborted();
    return this.#world.clock.now() - start;
  }

  bootstrapAddresses(): string[] {
    return [`/sim/${this.index}/p2p/${this.hex}`];
  }

  async dial(node: Uint8Array, address: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    options.signal?.throwIfAborted();
    const match = /^\/sim\/(\d+)\/p2p\/([0-9a-f]{64})$/.exec(address);
    if (match === null) throw new InvalidAddressError(`the dial hint ${JSON.stringify(address)} is not /sim/<index>/p2p/<64 hex>`);
    if (match[2] !== toHex(node)) throw new InvalidAddressError(`the dial hint names ${match[2]}, not the node to reach (${toHex(node)})`);
    const target = this.#world.nodes[Number(match[1])];
    if (!target || target.hex !== match[2] || target.stopped || this.stopped || !this.#world.reachable(this.index, target.index)) {
      throw new PeerUnreachableError(`cannot reach ${match[2]} at ${address}`);
    }
    this.#world.link(this, target);
  }
}
