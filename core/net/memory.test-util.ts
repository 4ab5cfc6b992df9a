/**
 * The Network port in memory, for several nodes in one process. Members joined to a bus are
 * linked to each other unless told otherwise; gossip goes over links only, is handed over
 * asynchronously, judged by each receiver's handler, and forwarded only when accepted (as gossipsub
 * does), so sync and block propagation run as they would across processes. Requests go to a linked
 * peer under the same bounds, limits, deadlines and errors as on libp2p; a request in flight fails
 * when its link is cut, and `leave` is how a member stops. Raw streams (memory-stream.ts)
 * are reset when their link is cut.
 */
import { toHex } from '../encoding/hex.ts';
import { type Clock, systemClock } from '../time/clock.ts';
import { Scheduler } from '../time/scheduler.ts';
import { InvalidAddressError, PeerUnreachableError } from './errors.ts';
import { Connections, InProcessEndpoint, lostWhenCut } from './local-peers.ts';
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
} from './network.ts';
import { handlerStops, runRequest } from './rpc.ts';

export class MemoryBus {
  /** Request deadlines run on it: a scheduler makes timeouts and hand-overs deterministic. */
  readonly clock: Clock;
  readonly limits: RpcLimits;
  readonly members = new Map<string, MemoryNetwork>();
  /** The round-trip time a ping between two members takes on the bus clock (setLatency); 0 unless set. */
  readonly #latency = new Map<string, number>();
  /** Every verdict, for tests that check who was blamed. */
  readonly verdicts: { topic: string; from: string; to: string; verdict: Verdict }[] = [];

  constructor(clock: Clock = systemClock, limits: Partial<RpcLimits> = {}) {
    this.clock = clock;
    this.limits = rpcLimitsOf(limits);
  }

  /** A new member, linked to every member already there unless `linked` is false. */
  join(self: Uint8Array, options: { linked?: boolean } = {}): MemoryNetwork {
    const net = new MemoryNetwork(this, self);
    if (options.linked !== false) for (const other of this.members.values()) this.link(net, other);
    this.members.set(toHex(self), net);
    return net;
  }

  /** The member stops: its links are cut, and so are the requests in flight to and from it. */
  leave(net: MemoryNetwork): void {
    net.stopped = true;
    for (const other of net.links) this.unlink(net, other);
    this.members.delete(toHex(net.self));
  }

  /** Connects two members (`a` dialled `b`); like a new connection, peers on the heights topic meet. */
  link(a: MemoryNetwork, b: MemoryNetwork): void {
    const since = this.clock.now();
    a.connected(b, 'outbound', since);
    b.connected(a, 'inbound', since);
    if (a.handles(TOPICS.heights) && b.handles(TOPICS.heights)) {
      a.joined(b.self);
      b.joined(a.self);
    }
  }

  /** Makes a ping between `a` and `b` (either way) take `rttMs` on the bus clock. */
  setLatency(a: Uint8Array, b: Uint8Array, rttMs: number): void {
    this.#latency.set(pairKey(a, b), rttMs);
  }

  /** The round-trip time set between `a` and `b`. */
  latency(a: Uint8Array, b: Uint8Array): number {
    return this.#latency.get(pairKey(a, b)) ?? 0;
  }

  /** Disconnects two members; each forgets what it knew of the other. */
  unlink(a: MemoryNetwork, b: MemoryNetwork): void {
    a.disconnected(b);
    b.disconnected(a);
  }

  /**
   * Resolves in a later task, as a message between processes arrives: on a scheduler one of its
   * hand-overs (in order, and waited for by its settles), else a real timer.
   */
  handOver(): Promise<void> {
    return this.clock instanceof Scheduler ? this.clock.nextTask() : new Promise((resolve) => setTimeout(resolve, 0));
  }

  /** Delivers from `from` to each linked subscriber that has not had the message, once each. */
  deliver(topic: string, data: Uint8Array, origin: Uint8Array, from: MemoryNetwork, seen: Set<string>): void {
    for (const member of from.links) {
      const id = toHex(member.self);
      if (seen.has(id) || !member.handles(topic)) continue;
      seen.add(id);
      queueMicrotask(() => void member.receive({ topic, data: data.slice(), origin, peer: from.self }, seen));
    }
  }
}

const pairKey = (a: Uint8Array, b: Uint8Array): string => [toHex(a), toHex(b)].sort().join('-');

/** A request in flight to `peer`; `cut` aborts when the link goes or the handler's deadline passes. */
interface InFlight {
  readonly peer: MemoryNetwork;
  readonly cut: AbortController;
}

export class MemoryNetwork implements Network {
  readonly self: Uint8Array;
  readonly penalties: { node: string; reason: string }[] = [];
  /** The members this one is connected to. */
  readonly links = new Set<MemoryNetwork>();
  /** Set when it leaves the bus. */
  stopped = false;
  readonly #bus: MemoryBus;
  readonly #handlers = new Map<string, (message: GossipMessage) => Promise<Verdict>>();
  readonly #joined = new Set<(peer: Uint8Array) => void>();
  readonly #connections = new Connections<MemoryNetwork>();
  readonly #calls = new Set<InFlight>();
  readonly #endpoint: InProcessEndpoint;

  constructor(bus: MemoryBus, self: Uint8Array) {
    this.#bus = bus;
    this.self = self;
    this.#endpoint = new InProcessEndpoint(self);
  }

  joined(peer: Uint8Array): void {
    for (const listener of this.#joined) listener(peer);
  }

  connected(peer: MemoryNetwork, direction: 'inbound' | 'outbound', since: number): void {
    if (this.links.has(peer)) return;
    this.links.add(peer);
    this.#connections.add(peer, direction, since);
  }

  disconnected(peer: MemoryNetwork): void {
    this.links.delete(peer);
    this.#connections.delete(peer);
    // The handler hears why, as on libp2p: its own node stopped, or the requester went away.
    for (const call of this.#calls) if (call.peer === peer) call.cut.abort(peer.stopped ? handlerStops.nodeStopped() : handlerStops.requesterGone());
    this.#endpoint.cutStreams(peer.#endpoint, 'the connection closed before the stream ended');
  }

  async receive(message: GossipMessage, seen: Set<string>): Promise<void> {
    const handler = this.#handlers.get(message.topic);
    if (!handler) return;
    let verdict: Verdict;
    try {
      verdict = await handler(message);
    } catch {
      // As on libp2p: a failing handler judges nothing, so the message is dropped without blame.
      verdict = 'ignore';
    }
    this.#bus.verdicts.push({ topic: message.topic, from: toHex(message.peer), to: toHex(this.self), verdict });
    if (verdict === 'accept') this.#bus.deliver(message.topic, message.data, message.origin, this, seen);
  }

  async publish(topic: string, data: Uint8Array): Promise<void> {
    this.#bus.deliver(topic, data, this.self, this, new Set([toHex(this.self)]));
  }

  handle(topic: string, handler: (message: GossipMessage) => Promise<Verdict>): void {
    this.#handlers.set(topic, handler);
    // Like a gossipsub subscription: linked peers already on the heights topic and this node meet.
    if (topic !== TOPICS.heights) return;
    for (const other of this.links) {
      if (!other.handles(topic)) continue;
      other.joined(this.self);
      this.joined(other.self);
    }
  }

  unsubscribe(topic: string): void {
    this.#handlers.delete(topic);
  }

  subscribers(topic: string): number {
    let count = 0;
    for (const peer of this.links) if (peer.handles(topic)) count++;
    return count;
  }

  handles(topic: string): boolean {
    return this.#handlers.has(topic);
  }

  onPeerJoined(listener: (peer: Uint8Array) => void): () => void {
    this.#joined.add(listener);
    return () => this.#joined.delete(listener);
  }

  penalise(node: Uint8Array, reason: string): void {
    this.penalties.push({ node: toHex(node), reason });
  }

  #linked(node: Uint8Array): MemoryNetwork {
    const hex = toHex(node);
    for (const peer of this.links) if (toHex(peer.self) === hex) return peer;
    throw new PeerUnreachableError(`${hex} is not connected`);
  }

  request(peer: Uint8Array, protocol: string, data: Uint8Array, options: RequestOptions = {}): Promise<Uint8Array> {
    const { clock, limits } = this.#bus;
    return runRequest(clock, peer, protocol, data, options, async ({ id, peer: name, bounds, signal }) => {
      const target = this.#linked(peer);
      const call: InFlight = { peer: target, cut: new AbortController() };
      this.#calls.add(call);
      try {
        const incoming = { from: this.#endpoint, id, name, data, bounds, signal, cut: call.cut, lost: lostWhenCut(call.cut, name, id) };
        // Handed over in a later task, as a stream would.
        return await target.#endpoint.answer(incoming, clock, limits, () => this.#bus.handOver());
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
    // Agreed on in a later task, as multistream-select would.
    await this.#bus.handOver();
    options.signal?.throwIfAborted();
    if (!this.links.has(target)) throw new PeerUnreachableError(`${toHex(peer)} is not connected`);
    return target.#endpoint.accept(this.#endpoint, id, toHex(peer), options);
  }

  serveStream(protocol: string, handler: StreamHandler, options: StreamOptions = {}): () => void {
    return this.#endpoint.serveStream(protocol, handler, options);
  }

  /** Raw streams this member has open, either way. */
  get openStreams(): number {
    return this.#endpoint.openStreams;
  }

  reportHeight(node: Uint8Array, height: number): void {
    this.#connections.reportHeight(node, height);
  }

  peers(): PeerInfo[] {
    return this.#connections.peers((peer) => `/memory/${toHex(peer.self)}`);
  }

  /** A hand-over, as a message would take, plus the latency set on the bus between the two (on its clock). */
  async ping(peer: Uint8Array, options: { signal?: AbortSignal } = {}): Promise<number> {
    options.signal?.throwIfAborted();
    this.#linked(peer);
    const clock = this.#bus.clock;
    const start = clock.now();
    await this.#bus.handOver();
    const latency = this.#bus.latency(this.self, peer);
    if (latency > 0) await new Promise((resolve) => clock.setTimeout(() => resolve(undefined), latency));
    options.signal?.throwIfAborted();
    this.#linked(peer);
    return clock.now() - start;
  }

  bootstrapAddresses(): string[] {
    return [`/memory/${toHex(this.self)}`];
  }

  /** Links to the member at `/memory/<hex>`, as a dial would connect. */
  async dial(node: Uint8Array, address: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    options.signal?.throwIfAborted();
    const named = /^\/memory\/([0-9a-f]{64})$/.exec(address)?.[1];
    if (named === undefined) throw new InvalidAddressError(`the dial hint ${JSON.stringify(address)} is not /memory/<64 hex>`);
    if (named !== toHex(node)) throw new InvalidAddressError(`the dial hint names ${named}, not the node to reach (${toHex(node)})`);
    const target = this.#bus.members.get(named);
    if (target === undefined || target.stopped || this.stopped) throw new PeerUnreachableError(`cannot reach ${named} at ${address}`);
    if (!this.links.has(target)) this.#bus.link(this, target);
  }
}
