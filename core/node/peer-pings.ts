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
import { toHex } from '../encoding/hex.ts';
import type { Random } from '../crypto/random.ts';
import type { Network } from '../net/network.ts';
import type { Clock, Timer } from '../time/clock.ts';

export interface PingSchedule {
  /** Mean time between two rounds (default PING_INTERVAL_MS). */
  readonly intervalMs: number;
  /** Each round's delay is intervalMs × (1 ± jitter), uniformly (default 0.25). */
  readonly jitter: number;
  /** Samples kept per peer (default 5). */
  readonly samples: number;
  /** A ping slower than this is abandoned (default 5 s, at most the interval). */
  readonly timeoutMs: number;
}

export const PING_INTERVAL_MS = 10_000;
export const DEFAULT_PING_SCHEDULE: PingSchedule = Object.freeze({ intervalMs: PING_INTERVAL_MS, jitter: 0.25, samples: 5, timeoutMs: 5_000 });

/** What GET /peers shows of one peer's round trips. */
export interface RttFigures {
  /** The median of the samples kept, null before the first. */
  readonly medianMs: number | null;
  /** The samples kept, oldest first. */
  readonly samplesMs: readonly number[];
}

export class PeerPings {
  readonly schedule: PingSchedule;
  readonly #network: Network;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #log: (line: string) => void;
  readonly #observe: (peer: Uint8Array, rttMs: number | null) => void;
  /** Samples by peer (hex), oldest first. */
  readonly #samples = new Map<string, number[]>();
  /** Peers with a ping in flight: a round does not pile a second one on. */
  readonly #inFlight = new Set<string>();
  /** Peers whose last ping failed: a failure is logged once, not every round. */
  readonly #failing = new Set<string>();
  #timer: Timer | null = null;
  #unsubscribe: (() => void) | null = null;
  #stopped = new AbortController();

  constructor(options: { network: Network; clock: Clock; random: Random; schedule?: Partial<PingSchedule>; log?: (line: string) => void; observe?: (peer: Uint8Array, rttMs: number | null) => void }) {
    const schedule = { ...DEFAULT_PING_SCHEDULE, ...options.schedule };
    if (!Number.isInteger(schedule.intervalMs) || schedule.intervalMs < 1) throw new RangeError(`the ping interval must be a positive integer of ms, got ${schedule.intervalMs}`);
    if (!(schedule.jitter >= 0 && schedule.jitter < 1)) throw new RangeError(`the ping jitter must be at least 0 and below 1, got ${schedule.jitter}`);
    if (!Number.isInteger(schedule.samples) || schedule.samples < 1) throw new RangeError(`the samples kept must be a positive integer, got ${schedule.samples}`);
    this.schedule = { ...schedule, timeoutMs: Math.min(schedule.timeoutMs, schedule.intervalMs) };
    this.#network = options.network;
    this.#clock = options.clock;
    this.#random = options.random;
    this.#log = options.log ?? (() => {});
    this.#observe = options.observe ?? (() => {});
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

  /** The round trips kept for `peer`. */
  figures(peer: Uint8Array): RttFigures {
    const samples = this.#samples.get(toHex(peer)) ?? [];
    return { medianMs: median(samples), samplesMs: samples.slice() };
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
      void this.#ping(peer.node);
    }
    // Gone peers are forgotten: the maps hold connected peers only.
    for (const key of this.#samples.keys()) if (!connected.has(key)) this.#samples.delete(key);
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
      if (this.#stopped.signal.aborted || !this.#network.peers().some((p) => toHex(p.node) === key)) return;
      this.#failing.delete(key);
      const samples = this.#samples.get(key) ?? [];
      samples.push(rtt);
      if (samples.length > this.schedule.samples) samples.shift();
      this.#samples.set(key, samples);
      this.#observe(peer, rtt);
    } catch (error) {
      if (this.#stopped.signal.aborted) return;
      // A failed ping is lost to the link's figures (the netgraph's loss), whatever was logged.
      if (this.#network.peers().some((p) => toHex(p.node) === key)) this.#observe(peer, null);
      if (this.#failing.has(key)) return;
      this.#failing.add(key);
      this.#log(`ping ${key.slice(0, 16)}…: ${error instanceof Error ? error.message : String(error)} (said once until a ping answers)`);
    } finally {
      timer.cancel();
      this.#inFlight.delete(key);
    }
  }
}
