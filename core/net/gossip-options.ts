/**
 * The gossipsub options the node sets besides scoring (gossip-scoring.ts), which the simulator
 * models (core/sim/sim-network.ts) as the node runs them (core/net/libp2p-network.ts).
 */

/**
 * Heartbeats whose message ids IHAVE advertises (gossipsub's mcacheGossip, 3 by default). Each id
 * went to D_lazy peers outside the mesh at each of three heartbeats, and that was most of the
 * mesh's control traffic; every peer outside the mesh of a node hears of it from several of its
 * other peers, so one heartbeat is enough to repair a lost frame (docs/scale.md, measured with loss).
 * IWANT is still answered from the whole cache (mcacheLength, 5 heartbeats).
 */
export const IHAVE_HEARTBEATS = 1;
