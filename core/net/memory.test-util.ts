/**
 * The Network port in memory, for several nodes in one process. Members joined to a bus are
 * linked to each other unless told otherwise; gossip goes over links only, is handed over
 * asynchronously, judged by each receiver's handler, and forwarded only when accepted (as gossipsub
 * does), so sync and block propagation run as they would across processes. Requests go to a linked
 * peer under the same bounds, deadlines and errors as on libp2p.
 */
import { toHex } from '../encoding/hex.ts';
import { MessageTooLargeError, PeerUnreachableError, ProtocolNotServedError, RemoteError } from './errors.ts';
import {
  TOPICS,
  rpcProtocolId,
  type GossipMessage,
  type Network,
  type PeerInfo,
  type RequestOptions,
  type RpcHandler,
  type ServeOptions,
  type Verdict,
} from './network.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import { boundsOf, failureMessage, runRequest, type Bounds } from './rpc.ts';

export class MemoryBus {
  /** Request deadlines run on it: a manual clock makes timeouts deterministic. */
  readonly clock: Clock;
  readonly members = new Map<string, MemoryNetwork>();
  /** Every verdict, for tests that check who was blamed. */
  readonly verdicts: { topic: string; from: string; to: string; verdict: Verdict }[] = [];

  constructor(clock: Clock = systemClock) {
    this.clock = clock;
  }

  /** A new member, linked to every member already there unless `linked` is false. */
  join(self: Uint8Array, options: { linked?: boolean } = {}): MemoryNetwork {
    const net = new MemoryNetwork(this, self);
    if (options.linked !== false) for (const other of this.members.values()) this.link(net, other);
    this.members.set(toHex(self), net);
    return net;
  }

  leave(net: MemoryNetwork): void {
    for (const other of net.links) this.unlink(net, other);
    this.members.delete(toHex(net.self));
  }

  /** Connects two members; like a new connection, peers on the heights topic meet. */
  link(a: MemoryNetwork, b: MemoryNetwork): void {
    a.links.add(b);
    b.links.add(a);
    if (a.handles(TOPICS.heights) && b.handles(TOPICS.heights)) {
      a.joined(b.self);
      b.joined(a.self);
    }
  }

  /** Disconnects two members; each forgets what it knew of the other. */
  unlink(a: MemoryNetwork, b: MemoryNetwork): void {
    a.disconnected(b);
    b.disconnected(a);
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

interface Served {
  readonly handler: RpcHandler;
  readonly bounds: Bounds;
}

export class MemoryNetwork implements Network {
  readonly self: Uint8Array;
  readonly penalties: { node: string; reason: string }[] = [];
  /** The members this one is connected to. */
  readonly links = new Set<MemoryNetwork>();
  readonly #bus: MemoryBus;
  readonly #handlers = new Map<string, (message: GossipMessage) => Promise<Verdict>>();
  readonly #served = new Map<string, Served>();
  readonly #joined = new Set<(peer: Uint8Array) => void>();
  readonly #heights = new Map<MemoryNetwork, number>();
  readonly #rtts = new Map<MemoryNetwork, number>();

  constructor(bus: MemoryBus, self: Uint8Array) {
    this.#bus = bus;
    this.self = self;
  }

  joined(peer: Uint8Array): void {
    for (const listener of this.#joined) listener(peer);
  }

  disconnected(peer: MemoryNetwork): void {
    this.links.delete(peer);
    this.#heights.delete(peer);
    this.#rtts.delete(peer);
  }

  async receive(message: GossipMessage, seen: Set<string>): Promise<void> {
    const handler = this.#handlers.get(message.topic);
    if (!handler) return;
    const verdict = await handler(message);
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
    return runRequest(this.#bus.clock, peer, protocol, data, options, async ({ id, peer: name, bounds, signal }) => {
      const target = this.#linked(peer);
      const served = target.#served.get(id);
      if (served === undefined) throw new ProtocolNotServedError(name, id);
      if (data.length > served.bounds.maxRequestBytes) {
        throw new MessageTooLargeError('request-too-large', `${name} takes requests of at most ${served.bounds.maxRequestBytes} bytes on ${id}`);
      }
      // Handed over in a later task, as a stream would.
      await new Promise((resolve) => setTimeout(resolve, 0));
      let answer: Uint8Array;
      try {
        answer = await served.handler({ peer: this.self, data: data.slice(), signal });
      } catch (error) {
        throw new RemoteError('remote-failed', `${name} failed on ${id}: ${failureMessage(error)}`);
      }
      const bound = Math.min(served.bounds.maxResponseBytes, bounds.maxResponseBytes);
      if (answer.length > bound) {
        throw new MessageTooLargeError('response-too-large', `an answer of ${answer.length} bytes from ${name} on ${id} is over the bound of ${bound}`);
      }
      return answer.slice();
    });
  }

  serve(protocol: string, handler: RpcHandler, options: ServeOptions = {}): () => void {
    const id = rpcProtocolId(protocol);
    const served: Served = { handler, bounds: boundsOf(options) };
    this.#served.set(id, served);
    return () => {
      if (this.#served.get(id) === served) this.#served.delete(id);
    };
  }

  reportHeight(node: Uint8Array, height: number): void {
    const hex = toHex(node);
    for (const peer of this.links) if (toHex(peer.self) === hex) this.#heights.set(peer, height);
  }

  peers(): PeerInfo[] {
    return [...this.links].map((peer) => ({ node: peer.self, height: this.#heights.get(peer) ?? null, rttMs: this.#rtts.get(peer) ?? null }));
  }

  async ping(peer: Uint8Array, options: { signal?: AbortSignal } = {}): Promise<number> {
    options.signal?.throwIfAborted();
    const target = this.#linked(peer);
    const start = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 0));
    options.signal?.throwIfAborted();
    const rtt = performance.now() - start;
    if (this.links.has(target)) this.#rtts.set(target, rtt);
    return rtt;
  }

  bootstrapAddresses(): string[] {
    return [`/memory/${toHex(this.self)}`];
  }
}
