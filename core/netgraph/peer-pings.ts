/**
 * Round-trip times to the connected peers (node-messaging.md §3 "measured links", first part): the
 * node pings every connected peer about every `intervalMs` (10 s by default), each round set
 * `intervalMs` × (1 ± `jitter`) after the last so that nodes started together do not ping in step,
 * and keeps the last `samples` (5) round trips per peer, of which GET /peers shows the median.
 * A peer also gets its first ping as soon as it joins, so a new link is measured at once.
 *
 * Time runs on the node's clock and the jitter on its Random: tests drive both. A ping that fails
 * or takes longer than `timeoutMs` adds no sample; a peer that goes away is forgotten at the next
 * round. Every outcome, a round trip or a failure, goes to the `observe` callback too (the
 * network graph's loss, jitter and coordinates).
 */
import { median } from '../collections/median.ts';
import type { Random } from '../crypto/random.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import type { Network } from '../net/network.ts';
import type { Clock, Timer } from '../time/clock.ts';

export interface PingSchedule {
  /** Mean time between two rounds (default PING_INTERVAL_MS). */
  readonly intervalMs: number;
  /** Each round's delay is intervalMs × (1 ± jitter), uniformly (default 0.25). */
  readonly jitter: number;
  /** Ping outcomes (round trips and failures) kept per peer (default 10). */
  readonly window: number;
  /** A ping slower than this is abandoned (default 5 s, at most the interval). */
  readonly timeoutMs: number;
}

export const PING_INTERVAL_MS = 10_000;
export const DEFAULT_PING_SCHEDULE: PingSchedule = Object.freeze({ intervalMs: PING_INTERVAL_MS, jitter: 0.25, window: 10, timeoutMs: 5_000 });

/** One ping's outcome: its round trip in ms, or null for a ping that failed or timed out. */
export type PingOutcome = number | null;

/** What the window of one peer's pings says: GET /peers shows the first two, the network graph all. */
export interface PingFigures {
  /** The median of the round trips in the window, null while it holds none. */
  readonly medianMs: number | null;
  /** The round trips in the window, oldest first. */
  readonly samplesMs: readonly number[];
  /** The mean absolute difference of consecutive round trips (RFC 3550's idea, unsmoothed); 0 with fewer than two. */
  readonly jitterMs: number;
  /** The share of the window's outcomes that failed; 0 for an empty window. */
  readonly loss: number;
  /** The outcomes in the window, round trips and failures. */
  readonly outcomes: number;
}

/** The figures of a window of outcomes, oldest first. */
export function pingFigures(outcomes: readonly PingOutcome[]): PingFigures {
  const samplesMs = outcomes.filter((o): o is number => o !== null);
  let spread = 0;
  for (let i = 1; i < samplesMs.length; i++) spread += Math.abs(samplesMs[i]! - samplesMs[i - 1]!);
  return {
    medianMs: median(samplesMs),
    samplesMs,
    jitterMs: samplesMs.length > 1 ? spread / (samplesMs.length - 1) : 0,
    loss: outcomes.length === 0 ? 0 : (outcomes.length - samplesMs.length) / outcomes.length,
    outcomes: outcomes.length,
  };
}

/** What the network graph reads of the pings: a peer's figures, and each outcome as it comes. */
export interface PingWindows {
  figures(peer: Uint8Array): PingFigures;
  onOutcome(listener: (peer: Uint8Array, rttMs: PingOutcome) => void): () => void;
}

/** One connected peer, as GET /peers shows it. */
export interface PeerView {
  node_id: string;
  /** Where the peer says it listens (libp2p identify); empty until it said. */
  multiaddrs: string[];
  /** The far end of the connection. */
  remote_addr: string;
  /** Who opened the connection: `outbound` this node, `inbound` the peer. */
  direction: 'inbound' | 'outbound';
  /** When the connection opened, unix seconds. */
  connected_since: number;
  /** Whether the peer is reached only through a circuit relay (a limited connection: small requests only). */
  relayed: boolean;
  /** The height the peer last announced, null before it announced one. */
  height: number | null;
  /** The median of rtt_samples, in ms; null while none of the last 10 pings was answered. */
  rtt_ms: number | null;
  /** The round trips among the last 10 ping outcomes (core/netgraph/peer-pings.ts), in ms, oldest first. */
  rtt_samples: number[];
}

export class PeerPings implements PingWindows {
  readonly schedule: PingSchedule;
  readonly #network: Network;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #log: (line: string) => void;
  readonly #listeners = new Set<(peer: Uint8Array, rttMs: PingOutcome) => void>();
  /** Each connected peer's window of outcomes, by peer (hex), oldest first. */
  readonly #windows = new Map<string, PingOutcome[]>();
  /** Peers with a ping in flight: a round does not pile a second one on. */
  readonly #inFlight = new Set<string>();
  /** Peers whose last ping failed: a failure is logged once, not every round. */
  readonly #failing = new Set<string>();
  #timer: Timer | null = null;
  #unsubscribe: (() => void) | null = null;
  #stopped = new AbortController();

  constructor(options: { network: Network; clock: Clock; random: Random; schedule?: Partial<PingSchedule>; log?: (line: string) => void }) {
    const schedule = { ...DEFAULT_PING_SCHEDULE, ...options.schedule };
    if (!Number.isInteger(schedule.intervalMs) || schedule.intervalMs < 1)
      throw new RangeError(`the ping interval must be a positive integer of ms, got ${schedule.intervalMs}`);
    if (!(schedule.jitter >= 0 && schedule.jitter < 1)) throw new RangeError(`the ping jitter must be at least 0 and below 1, got ${schedule.jitter}`);
    if (!Number.isInteger(schedule.window) || schedule.window < 1)
      throw new RangeError(`the ping window must be a positive integer of outcomes, got ${schedule.window}`);
    this.schedule = { ...schedule, timeoutMs: Math.min(schedule.timeoutMs, schedule.intervalMs) };
    this.#network = options.network;
    this.#clock = options.clock;
    this.#random = options.random;
    this.#log = options.log ?? (() => {});
  }

  start(): void {
    this.#stopped = new AbortController();
    this.#unsubscribe = this.#network.onPeerJoined((peer) => void this.#ping(peer));
    this.#next();
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = null;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#stopped.abort(new Error('the node stopped'));
  }

  /** What the window of `peer`'s pings says (an empty window for a peer never measured or gone). */
  /** The connected peers, each with its round trips (GET /peers). */
  peers(): PeerView[] {
    return this.#network.peers().map((peer) => {
      const rtt = this.figures(peer.node);
      return {
        node_id: toHex(peer.node),
        multiaddrs: [...peer.multiaddrs],
        remote_addr: peer.remoteAddr,
        direction: peer.direction,
        connected_since: Math.floor(peer.connectedSince / 1000),
        relayed: peer.relayed,
        height: peer.height,
        rtt_ms: rtt.medianMs,
        rtt_samples: [...rtt.samplesMs],
      };
    });
  }

  figures(peer: Uint8Array): PingFigures {
    return pingFigures(this.#windows.get(toHex(peer)) ?? []);
  }

  /** Calls `listener` with each outcome once it is in its peer's window; returns the unsubscribe. */
  onOutcome(listener: (peer: Uint8Array, rttMs: PingOutcome) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** The delay before the next round: the interval, moved by up to ±jitter of it. */
  #delay(): number {
    const bytes = this.#random.bytes(4);
    const unit = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0) / 2 ** 32;
    const { intervalMs, jitter } = this.schedule;
    return Math.round(intervalMs * (1 - jitter + 2 * jitter * unit));
  }

  #next(): void {
    this.#timer = this.#clock.setTimeout(() => {
      this.#round();
      this.#next();
    }, this.#delay());
  }

  #round(): void {
    const connected = new Set<string>();
    for (const peer of this.#network.peers()) {
      connected.add(toHex(peer.node));
      // A relayed peer's round trip is the relay's, not a link's: it waits for a direct connection.
      if (!peer.relayed) void this.#ping(peer.node);
    }
    // Gone peers are forgotten: the maps hold connected peers only.
    for (const key of this.#windows.keys()) if (!connected.has(key)) this.#windows.delete(key);
    for (const key of this.#failing) if (!connected.has(key)) this.#failing.delete(key);
  }

  async #ping(peer: Uint8Array): Promise<void> {
    const key = toHex(peer);
    if (this.#inFlight.has(key) || this.#stopped.signal.aborted) return;
    this.#inFlight.add(key);
    const giveUp = new AbortController();
    const timer = this.#clock.setTimeout(() => giveUp.abort(new Error('ping timed out')), this.schedule.timeoutMs);
    try {
      const rtt = await this.#network.ping(peer, { signal: AbortSignal.any([giveUp.signal, this.#stopped.signal]) });
      if (this.#stopped.signal.aborted) return;
      this.#failing.delete(key);
      // An answer came over the connection just now: the peer is connected (a round forgets it if not).
      this.#record(peer, key, rtt);
    } catch (error) {
      if (this.#stopped.signal.aborted) return;
      // A failed ping counts in the window (the link's loss), whatever was logged, if the peer is
      // still connected: a ping cut by the peer's leaving is no loss of the link.
      if (this.#network.peers().some((p) => bytesEqual(p.node, peer))) this.#record(peer, key, null);
      if (this.#failing.has(key)) return;
      this.#failing.add(key);
      this.#log(`ping ${key.slice(0, 16)}…: ${error instanceof Error ? error.message : String(error)} (said once until a ping answers)`);
    } finally {
      timer.cancel();
      this.#inFlight.delete(key);
    }
  }

  /** Puts an outcome in the peer's window and tells the listeners. */
  #record(peer: Uint8Array, key: string, rttMs: PingOutcome): void {
    const window = this.#windows.get(key) ?? [];
    window.push(rttMs);
    if (window.length > this.schedule.window) window.shift();
    this.#windows.set(key, window);
    for (const listener of this.#listeners) listener(peer, rttMs);
  }
}
