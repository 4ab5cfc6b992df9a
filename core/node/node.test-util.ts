/**
 * Test helpers for nodes on the in-memory gossip bus, on a manual clock shared by all of them.
 */
import type { Chain } from '../chain/chain.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { seededRandom } from '../crypto/random.test-util.ts';
import type { MemoryBus } from '../net/memory.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import { MeshNode, type MeshNodeOptions } from './node.ts';

/** A fixed machine, for the atlas. */
export const capacity = (): { cpuCores: number; memMb: number; runningJobs: number; tags: string[] } => ({
  cpuCores: 2,
  memMb: 2048,
  runningJobs: 0,
  tags: ['linux'],
});

/**
 * Starts a node for `k` on `bus` over `chain`, on `clock`, with request ids repeatable per key.
 * Not mining and a 2 s sync timeout unless `options` say otherwise.
 */
export async function startNode(bus: MemoryBus, chain: Chain, k: SigningKey, clock: Scheduler, options: Partial<MeshNodeOptions> = {}): Promise<MeshNode> {
  const random = seededRandom(new DataView(k.publicKey.buffer, k.publicKey.byteOffset).getUint32(0));
  const n = new MeshNode({ chain, network: bus.join(k.publicKey), key: k, mine: false, capacity, syncTimeoutMs: 2_000, clock, random, ...options });
  await n.start();
  return n;
}
