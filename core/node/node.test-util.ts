/**
 * Test helpers for nodes on the in-memory gossip bus, on a manual clock shared by all of them.
 */
import type { Chain } from '../chain/chain.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { seededRandom } from '../crypto/random.test-util.ts';
import type { MemoryBus } from '../net/memory.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import { MeshNode } from './node.ts';
import { type FullNodeInit, type FullNodeServices, fullNodeServices } from './services.ts';

/** A node with every service, as `mesh node` runs it. */
export type FullNode = MeshNode<FullNodeServices>;

/** A fixed machine, for the atlas. */
export const capacity = (): { cpuCores: number; memMb: number; runningJobs: number; tags: string[] } => ({
  cpuCores: 2,
  memMb: 2048,
  runningJobs: 0,
  tags: ['linux'],
});

/**
 * Starts a full node for `k` on `bus` over `chain`, on `clock`, with request ids repeatable per
 * key. Not mining, with the fixed capacity and a 2 s sync timeout unless `options` say otherwise.
 */
export async function startNode(bus: MemoryBus, chain: Chain, k: SigningKey, clock: Scheduler, options: Partial<FullNodeInit> = {}): Promise<FullNode> {
  const random = seededRandom(new DataView(k.publicKey.buffer, k.publicKey.byteOffset).getUint32(0));
  const n = await MeshNode.create({
    chain,
    network: bus.join(k.publicKey),
    key: k,
    clock,
    random,
    services: fullNodeServices({ mine: false, capacity, syncTimeoutMs: 2_000, ...options }),
  });
  await n.start();
  return n;
}
