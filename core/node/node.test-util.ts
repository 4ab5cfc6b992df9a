/**
 * Test helpers for nodes on the in-memory gossip bus: start a node, wait for a condition.
 */
import type { Chain } from '../chain/chain.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import type { MemoryBus } from '../net/memory.test-util.ts';
import { MeshNode } from './node.ts';

/** A fixed machine, for the atlas. */
export const capacity = (): { cpuCores: number; memMb: number; runningJobs: number; tags: string[] } => ({
  cpuCores: 2,
  memMb: 2048,
  runningJobs: 0,
  tags: ['linux'],
});

/** Resolves once `check` holds, polling every 5 ms; rejects after `timeoutMs`. */
export function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = (): void => {
      if (check()) return resolve();
      if (Date.now() > deadline) return reject(new Error(`timed out: ${what}`));
      setTimeout(poll, 5);
    };
    poll();
  });
}

/** Starts a node for `k` on `bus` over `chain`. */
export async function startNode(bus: MemoryBus, chain: Chain, k: SigningKey, mineBlocks = false, syncTimeoutMs = 2_000): Promise<MeshNode> {
  const n = new MeshNode({ chain, network: bus.join(k.publicKey), key: k, mine: mineBlocks, capacity, syncTimeoutMs });
  await n.start();
  return n;
}
