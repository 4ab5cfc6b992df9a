/**
 * What a circuit-relay v2 server gives the nodes that hold reservations on it, and what it refuses
 * (docs/network.md, "Through NATs"). libp2p's relay server keeps at most `maxReservations` and
 * answers RESERVATION_REFUSED past them; the guard here adds what it lacks: a bound per address
 * (one host cannot take every slot with many keys) and a bound per peer on how often it asks,
 * whose excess is a misbehaviour.
 */
import type { Clock } from '../time/clock.ts';

export interface RelayLimits {
  /** Reservations held at once, from everyone (libp2p's store; it refuses the one after). */
  readonly maxReservations: number;
  /** Reservations held at once by peers behind one IP address (one NAT may hide a household). */
  readonly reservationsPerIp: number;
  /** Reservation requests one peer may make per `requestWindowMs`; each one past it is penalised. */
  readonly requestsPerPeer: number;
  readonly requestWindowMs: number;
  /** How long a reservation lasts; its holder renews it before the end, and loses it on hanging up. */
  readonly reservationTtlMs: number;
  /** How long one relayed connection may stay open, and how many bytes it may carry each way. */
  readonly relayedDurationMs: number;
  readonly relayedDataBytes: number;
}

export const DEFAULT_RELAY_LIMITS: RelayLimits = Object.freeze({
  maxReservations: 64,
  reservationsPerIp: 8,
  requestsPerPeer: 4,
  requestWindowMs: 10 * 60_000,
  reservationTtlMs: 30 * 60_000,
  relayedDurationMs: 10 * 60_000,
  relayedDataBytes: 16 * 1024 * 1024,
});

/** The peers whose requests are counted at once; the oldest is forgotten past it. */
const MAX_COUNTED_PEERS = 4_096;

export type ReservationVerdict = { readonly admit: true } | { readonly admit: false; readonly reason: string; readonly penalise: boolean };

/** Decides each reservation request before libp2p's store counts it. */
export class RelayGuard {
  readonly limits: RelayLimits;
  readonly #clock: Clock;
  /** Request times per peer, oldest first, within the window. */
  readonly #requests = new Map<string, number[]>();

  constructor(clock: Clock, limits: Partial<RelayLimits> = {}) {
    this.#clock = clock;
    this.limits = { ...DEFAULT_RELAY_LIMITS, ...limits };
  }

  /**
   * A request from `peer` at `ip` (null: not an IP connection), given the reservations held now
   * (peer and IP of each).
   */
  judge(peer: string, ip: string | null, held: readonly { readonly peer: string; readonly ip: string | null }[]): ReservationVerdict {
    const now = this.#clock.now();
    const times = (this.#requests.get(peer) ?? []).filter((t) => now - t < this.limits.requestWindowMs);
    times.push(now);
    this.#requests.delete(peer);
    this.#requests.set(peer, times);
    if (this.#requests.size > MAX_COUNTED_PEERS) this.#requests.delete(this.#requests.keys().next().value!);
    if (times.length > this.limits.requestsPerPeer) {
      return {
        admit: false,
        penalise: true,
        reason: `reservation-flood: ${times.length} requests in ${this.limits.requestWindowMs / 60_000} min, at most ${this.limits.requestsPerPeer}`,
      };
    }
    // A renewal keeps its slot whatever the others hold.
    if (held.some((h) => h.peer === peer)) return { admit: true };
    if (ip !== null && held.filter((h) => h.ip === ip).length >= this.limits.reservationsPerIp) {
      return { admit: false, penalise: false, reason: `reservations-per-ip: ${this.limits.reservationsPerIp} held from ${ip}` };
    }
    return { admit: true };
  }
}
