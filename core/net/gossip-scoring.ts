/**
 * Gossipsub peer scoring for the mesh's topics (gossipsub v1.1, "Peer Scoring": P1 time in mesh,
 * P2 first deliveries, P3/P3b mesh deliveries, P4 invalid messages, P5 application score, P6 IP
 * colocation, P7 behaviour penalty). Every figure is derived the way Lodestar derives Ethereum's
 * (packages/beacon-node/src/network/gossip/scoringParameters.ts) from a few stated inputs: a
 * slot (the main network's block interval), each topic's weight and expected message rate, and
 * Lighthouse's thresholds. docs/network.md, "Peer scoring", has the table and the reasons.
 */
import {
  type PeerScoreParams,
  type PeerScoreThresholds,
  type TopicScoreParams,
  validatePeerScoreParams,
  validatePeerScoreThresholds,
} from '@libp2p/gossipsub/score';
import { TOPICS } from './network.ts';

/** The time base: MAINNET's block interval (a devnet's faster blocks only fill P2's cap sooner). */
export const SCORE_SLOT_MS = 10_000;
/** Lodestar's epoch, 32 slots: the unit of its decay times. */
const EPOCH_MS = 32 * SCORE_SLOT_MS;
/** Gossipsub's D: the mesh degree a first delivery is shared among. */
const MESH_DEGREE = 6;
/** A counter decayed below this is zero (Lodestar). */
const DECAY_TO_ZERO = 0.01;
/** P1 and P2 at their caps, before the topic weight (Lodestar's MAX_IN_MESH_SCORE, MAX_FIRST_MESSAGE_DELIVERIES_SCORE). */
const MAX_IN_MESH_SCORE = 10;
const MAX_FIRST_MESSAGE_DELIVERIES_SCORE = 40;

/** What scoring needs to know of a topic. */
interface TopicInput {
  /** Its share of the score: 0.5 for the chain's main payloads, 0.05 for the occasional ones (Lodestar's two classes). */
  readonly weight: number;
  /** Messages a slot expected of the whole mesh (P2's cap is twice a mesh peer's share of it). */
  readonly perSlot: number;
  /** How long a first delivery counts (P2's decay). */
  readonly firstDeliveryMs: number;
}

/** The chain's main payloads: Lodestar's class of beacon blocks and aggregates. */
const MAIN_TOPICS: Readonly<Record<string, TopicInput>> = {
  [TOPICS.blocks]: { weight: 0.5, perSlot: 1, firstDeliveryMs: 20 * EPOCH_MS },
  [TOPICS.transactions]: { weight: 0.5, perSlot: 1, firstDeliveryMs: 4 * EPOCH_MS },
};

/** The occasional topics with a rate or a memory of their own: Lodestar's class of exits and slashings. */
const OCCASIONAL_TOPICS: Readonly<Record<string, TopicInput>> = {
  [TOPICS.signals]: { weight: 0.05, perSlot: 1, firstDeliveryMs: 100 * EPOCH_MS },
  [TOPICS.netgraph]: { weight: 0.05, perSlot: 1, firstDeliveryMs: 4 * EPOCH_MS },
  // Rare, as Lodestar's slashings: one in five epochs.
  [TOPICS.evidence]: { weight: 0.05, perSlot: 1 / 5 / 32, firstDeliveryMs: 100 * EPOCH_MS },
};

/**
 * Every other topic of TOPICS: heights (and, while they are topics, sync and segments) are used by
 * the node they concern and never accepted, so they earn no P2 and are scored for P1 and P4.
 */
const OCCASIONAL: TopicInput = { weight: 0.05, perSlot: 1, firstDeliveryMs: EPOCH_MS };

/**
 * The scored topics: every one of TOPICS. App topics (`mesh-app/…`) cannot be listed and are not
 * scored: a rejected app message costs the peer its misbehaviour points only.
 */
const TOPIC_INPUTS: Readonly<Record<string, TopicInput>> = Object.fromEntries(
  Object.values(TOPICS).map((topic) => [topic, MAIN_TOPICS[topic] ?? OCCASIONAL_TOPICS[topic] ?? OCCASIONAL]),
);

/** The most a peer can earn, every topic's P1 and P2 at their caps: 50 × Σ weights. */
export const MAX_POSITIVE_SCORE = (MAX_IN_MESH_SCORE + MAX_FIRST_MESSAGE_DELIVERIES_SCORE) * Object.values(TOPIC_INPUTS).reduce((sum, t) => sum + t.weight, 0);

/**
 * Lighthouse's thresholds, which Lodestar takes as they are: below `gossip` a peer gets no IHAVE
 * and its IHAVEs are ignored, below `publish` this node's own messages skip it, below `graylist`
 * everything it sends is dropped unread.
 */
export const GOSSIP_SCORE_THRESHOLDS: PeerScoreThresholds = Object.freeze({
  gossipThreshold: -4000,
  publishThreshold: -8000,
  graylistThreshold: -16000,
  acceptPXThreshold: 100,
  opportunisticGraftThreshold: 5,
});

/**
 * Addresses P6 does not count: on loopback every peer is a process of this machine (a devnet), so
 * a shared address says nothing about Sybils, and throwaway identities on it would push the honest
 * peers below the publish threshold (docs/network.md, "Why a stranger could silence a node").
 */
export const COLOCATION_EXEMPT_IPS: readonly string[] = ['127.0.0.1', '::1'];

/** The decay per decay interval that takes a counter to DECAY_TO_ZERO in `ms`. */
function decayOver(ms: number): number {
  return DECAY_TO_ZERO ** (SCORE_SLOT_MS / ms);
}

/** Where a counter incremented `rate` times per interval and decayed by `decay` settles. */
function convergence(decay: number, rate: number): number {
  return rate / (1 - decay);
}

function topicParams(input: TopicInput): TopicScoreParams {
  const timeInMeshCap = 3_600_000 / SCORE_SLOT_MS;
  const firstMessageDeliveriesDecay = decayOver(input.firstDeliveryMs);
  const firstMessageDeliveriesCap = convergence(firstMessageDeliveriesDecay, (2 * input.perSlot) / MESH_DEGREE);
  return {
    topicWeight: input.weight,
    // P1: MAX_IN_MESH_SCORE after an hour in the mesh.
    timeInMeshQuantum: SCORE_SLOT_MS,
    timeInMeshCap,
    timeInMeshWeight: MAX_IN_MESH_SCORE / timeInMeshCap,
    // P2: MAX_FIRST_MESSAGE_DELIVERIES_SCORE for twice a mesh peer's share of the expected rate.
    firstMessageDeliveriesDecay,
    firstMessageDeliveriesCap,
    firstMessageDeliveriesWeight: MAX_FIRST_MESSAGE_DELIVERIES_SCORE / firstMessageDeliveriesCap,
    // P3, P3b: off. No topic has a rate a node can hold its mesh peers to: production is optional
    // (`--mine`), a network may go minutes without a miner, and transactions come when users send
    // them. Lodestar turns P3 off for every topic without an expected rate.
    meshMessageDeliveriesWeight: 0,
    meshMessageDeliveriesDecay: 0,
    meshMessageDeliveriesCap: 0,
    meshMessageDeliveriesThreshold: 0,
    meshMessageDeliveriesWindow: 0,
    meshMessageDeliveriesActivation: 0,
    meshFailurePenaltyWeight: 0,
    meshFailurePenaltyDecay: 0,
    // P4: each invalid message, squared, costs all a peer can earn; remembered for 50 epochs.
    invalidMessageDeliveriesWeight: -MAX_POSITIVE_SCORE / input.weight,
    invalidMessageDeliveriesDecay: decayOver(50 * EPOCH_MS),
  };
}

/** The score parameters for gossipsub's `scoreParams`, checked by gossipsub's own validation. */
export function gossipScoreParams(): PeerScoreParams {
  const topics: Record<string, TopicScoreParams> = {};
  for (const [topic, input] of Object.entries(TOPIC_INPUTS)) topics[topic] = topicParams(input);
  const topicScoreCap = MAX_POSITIVE_SCORE / 2;
  // P7: a peer breaking 10 promises an epoch (IHAVE not followed by the message, a GRAFT during
  // its backoff) settles at the gossip threshold, with 6 forgiven.
  const behaviourPenaltyDecay = decayOver(10 * EPOCH_MS);
  const behaviourPenaltyThreshold = 6;
  const target = convergence(behaviourPenaltyDecay, 10 / 32) - behaviourPenaltyThreshold;
  const params: PeerScoreParams = {
    topics,
    topicScoreCap,
    // P5: unused (0); a peer's misbehaviour points ban it outright (docs/network.md, "Penalties").
    appSpecificScore: () => 0,
    appSpecificWeight: 1,
    // P6: past 3 peers on one address, each more costs the square of the surplus times half of
    // what a peer can earn.
    IPColocationFactorWeight: -topicScoreCap,
    IPColocationFactorThreshold: 3,
    IPColocationFactorWhitelist: new Set(COLOCATION_EXEMPT_IPS),
    behaviourPenaltyWeight: GOSSIP_SCORE_THRESHOLDS.gossipThreshold / (target * target),
    behaviourPenaltyThreshold,
    behaviourPenaltyDecay,
    decayInterval: SCORE_SLOT_MS,
    decayToZero: DECAY_TO_ZERO,
    // A disconnected peer's score is kept 100 epochs, so reconnecting does not wash it.
    retainScore: 100 * EPOCH_MS,
  };
  validatePeerScoreParams(params);
  validatePeerScoreThresholds(GOSSIP_SCORE_THRESHOLDS);
  return params;
}
