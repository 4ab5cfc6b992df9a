/**
 * The simulated internet the nodes share: who is connected to whom, what a message between two
 * nodes costs in time (latency with jitter, the sender's uplink as a queue at its bandwidth cap)
 * and whether it arrives (loss, on gossip only: requests ride a reliable stream), partitions that
 * cut every connection across them until they heal, and the bytes each node sends by topic and
 * protocol. Everything runs on the simulation's scheduler; every chance comes from its seed.
 */
import type { Clock } from '../time/clock.ts';
import type { LatencyModel } from './latency.ts';
import type { Prng } from './prng.ts';

export interface WorldOptions {
  readonly clock: Clock;
  readonly latency: LatencyModel;
  /** Jitter and loss draw from it. */
  readonly rng: Prng;
  /** The share of gossip frames lost on the way (0 to 1). */
  readonly loss: number;
  /** Each node's uplink in bytes per second; null: unbounded. */
  readonly uplinkBytesPerSec: number | null;
}

/** What the world needs of a node's network (SimNetwork, sim-network.ts). */
export interface SimPeer {
  readonly index: number;
  readonly links: Set<SimPeer>;
  stopped: boolean;
  /** When its uplink is free again (ms, fractional). */
  uplinkFreeAt: number;
  /** Counts `bytes` sent under `kind`. */
  count(kind: string, bytes: number): void;
  connected(peer: SimPeer, direction: 'inbound' | 'outbound', since: number): void;
  disconnected(peer: SimPeer): void;
}

/** How many peers a node dials, and below how many it dials again (libp2p's connection manager, scaled down). */
export const TARGET_PEERS = 8;
export const MIN_PEERS = 4;

export class SimWorld<N extends SimPeer = SimPeer> {
  readonly clock: Clock;
  readonly options: WorldOptions;
  /** Every node by its index; a node that left keeps its slot (null) until it rejoins. */
  readonly nodes: (N | null)[] = [];
  /** The side of each node while a partition holds; null when there is none. */
  #sides: Int8Array | null = null;
  /** Connections a partition cut, to restore when it heals. */
  #cut: [number, number][] = [];

  constructor(options: WorldOptions) {
    this.clock = options.clock;
    this.options = options;
  }

  /** Whether two nodes can reach each other now. */
  reachable(a: number, b: number): boolean {
    return this.#sides === null || this.#sides[a] === this.#sides[b];
  }

  /** Puts `net` in its slot (joining or rejoining). */
  attach(net: N): void {
    this.nodes[net.index] = net;
  }

  /** Cuts every connection of `net` and empties its slot: the node left. */
  detach(net: N): void {
    net.stopped = true;
    for (const peer of [...net.links]) this.unlink(net, peer);
    if (this.nodes[net.index] === net) this.nodes[net.index] = null;
  }

  link(a: SimPeer, b: SimPeer): void {
    if (a === b || a.links.has(b) || a.stopped || b.stopped || !this.reachable(a.index, b.index)) return;
    const since = this.clock.now();
    a.connected(b, 'outbound', since);
    b.connected(a, 'inbound', since);
  }

  unlink(a: SimPeer, b: SimPeer): void {
    a.disconnected(b);
    b.disconnected(a);
  }

  /** Dials random reachable nodes until `net` has `target` connections (or nobody is left). */
  fillPeers(net: N, rng: Prng, target = TARGET_PEERS): void {
    if (net.stopped) return;
    const candidates = this.nodes.filter((n): n is N => n !== null && n !== net && !n.stopped && !net.links.has(n) && this.reachable(n.index, net.index));
    for (const peer of rng.sample(candidates, target - net.links.size)) this.link(net, peer);
  }

  /** Splits the nodes into the sides given (index to side): every connection across them is cut. */
  partition(sides: Int8Array): void {
    this.#sides = sides;
    for (const net of this.nodes) {
      if (net === null) continue;
      for (const peer of [...net.links]) {
        if (sides[net.index] === sides[peer.index]) continue;
        if (net.index < peer.index) this.#cut.push([net.index, peer.index]);
        this.unlink(net, peer);
      }
    }
  }

  /** Ends the partition: the connections it cut are made again where both ends are still there. */
  heal(): void {
    this.#sides = null;
    for (const [a, b] of this.#cut) {
      const na = this.nodes[a];
      const nb = this.nodes[b];
      if (na && nb) this.link(na, nb);
    }
    this.#cut = [];
  }

  /**
   * Sends `bytes` from `from` to `to`, counted under `kind`: `arrive` runs when the last byte is
   * there, unless the connection is gone by then or the frame was `lossy` and lost.
   */
  send(from: SimPeer, to: SimPeer, bytes: number, kind: string, lossy: boolean, arrive: () => void): void {
    const delay = this.transmit(from, to, bytes, kind, lossy);
    if (delay !== null) this.deliver(from, to, delay, arrive);
  }

  /**
   * Puts `bytes` from `from` to `to` on the wire, counted under `kind`: how many ms until the last
   * byte is there, or null when the frame was `lossy` and lost. The sender's uplink carries one
   * frame at a time at its cap; then the one-way latency.
   */
  transmit(from: SimPeer, to: SimPeer, bytes: number, kind: string, lossy: boolean): number | null {
    from.count(kind, bytes);
    const { latency, rng, loss, uplinkBytesPerSec } = this.options;
    const now = this.clock.now();
    let leaves = now;
    if (uplinkBytesPerSec !== null) {
      const start = Math.max(now, from.uplinkFreeAt);
      from.uplinkFreeAt = start + (bytes * 1000) / uplinkBytesPerSec;
      leaves = from.uplinkFreeAt;
    }
    if (lossy && rng.chance(loss)) return null;
    return Math.ceil(leaves - now + latency.oneWay(from.index, to.index, rng));
  }

  /** Runs `arrive` in `delay` ms (a frame `transmit` put on the wire), unless the connection is gone by then. */
  deliver(from: SimPeer, to: SimPeer, delay: number, arrive: () => void): void {
    this.clock.setTimeout(() => {
      if (from.links.has(to)) arrive();
    }, delay);
  }
}
