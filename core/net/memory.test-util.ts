/**
 * A gossip bus in memory: the Network port for several nodes in one process. Messages are handed
 * over asynchronously, judged by each receiver's handler, and forwarded only when accepted (as
 * gossipsub does), so sync and block propagation run as they would across processes.
 */
import { toHex } from '../encoding/hex.ts';
import type { GossipMessage, Network, Topic, Verdict } from './network.ts';

export class MemoryBus {
  readonly members = new Map<string, MemoryNetwork>();
  /** Every verdict, for tests that check who was blamed. */
  readonly verdicts: { topic: string; from: string; to: string; verdict: Verdict }[] = [];

  join(self: Uint8Array): MemoryNetwork {
    const net = new MemoryNetwork(this, self);
    this.members.set(toHex(self), net);
    return net;
  }

  leave(net: MemoryNetwork): void {
    this.members.delete(toHex(net.self));
  }

  /** Delivers from `peer` to every other member that subscribes, once per member. */
  deliver(topic: Topic, data: Uint8Array, origin: Uint8Array, peer: Uint8Array, seen: Set<string>): void {
    for (const [id, member] of this.members) {
      if (seen.has(id)) continue;
      seen.add(id);
      queueMicrotask(() => void member.receive({ topic, data, origin, peer }, seen));
    }
  }
}

export class MemoryNetwork implements Network {
  readonly self: Uint8Array;
  readonly penalties: { node: string; reason: string }[] = [];
  readonly #bus: MemoryBus;
  readonly #handlers = new Map<string, (message: GossipMessage) => Promise<Verdict>>();
  readonly #joined = new Set<(peer: Uint8Array) => void>();

  constructor(bus: MemoryBus, self: Uint8Array) {
    this.#bus = bus;
    this.self = self;
  }

  joined(peer: Uint8Array): void {
    for (const listener of this.#joined) listener(peer);
  }

  async receive(message: GossipMessage, seen: Set<string>): Promise<void> {
    const handler = this.#handlers.get(message.topic);
    if (!handler) return;
    const verdict = await handler(message);
    this.#bus.verdicts.push({ topic: message.topic, from: toHex(message.peer), to: toHex(this.self), verdict });
    if (verdict === 'accept') this.#bus.deliver(message.topic as Topic, message.data, message.origin, this.self, seen);
  }

  async publish(topic: Topic, data: Uint8Array): Promise<void> {
    this.#bus.deliver(topic, data, this.self, this.self, new Set([toHex(this.self)]));
  }

  handle(topic: Topic, handler: (message: GossipMessage) => Promise<Verdict>): void {
    this.#handlers.set(topic, handler);
    // Like a gossipsub subscription: peers already on the heights topic and this node meet.
    if (topic !== 'mesh-heights') return;
    for (const other of this.#bus.members.values()) {
      if (other === this || !other.handles(topic)) continue;
      other.joined(this.self);
      this.joined(other.self);
    }
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

  peers(): Uint8Array[] {
    return [...this.#bus.members.values()].filter((m) => m !== this).map((m) => m.self);
  }

  bootstrapAddresses(): string[] {
    return [`/memory/${toHex(this.self)}`];
  }
}
