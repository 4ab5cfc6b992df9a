/**
 * Misbehaviour points, one named refusal each (docs/network.md, "Penalties"). A peer reaching
 * BAN_POINTS is hung up on and refused for BAN_MS; points live in memory for at most
 * MAX_SCORED_PEERS peers. Gossipsub scores the same peers on its own (gossip-scoring.ts).
 */

/** Points before a ban. */
export const BAN_POINTS = 10;
export const BAN_MS = 10 * 60_000;
export const MAX_SCORED_PEERS = 4_096;

export const PENALTIES = Object.freeze({
  /** A gossip message a handler rejected. */
  'invalid-message': 1,
  /** A sync answer or segment that did not validate (the core's `penalise`). */
  'invalid-answer': 5,
  /** A gossip frame over PEER_LIMITS.gossipFrameBytes: no honest node sends one. */
  'oversized-frame': BAN_POINTS,
  /** A request frame over the handler's bound. */
  'oversized-request': 2,
  /** A request stream that sent no request frame by the read deadline. */
  'stalled-request': 2,
  /** A relay reservation request past RelayLimits.requestsPerPeer in its window (relay-limits.ts). */
  'reservation-flood': 2,
});

export type Penalty = keyof typeof PENALTIES;
