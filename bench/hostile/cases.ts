/**
 * One run of the hostile-peer benchmark: a fresh three-node mining devnet on loopback, the time
 * its nodes take to agree after an ordinary new block, then the attack of test/hostile-peer.ts on
 * one of them and the time until all three agree again.
 */
import { ATTACK, attack, highest, oneTip } from '../../test/hostile-peer.ts';
import { type MeshProcess, startNode, stopNode, tcpAddress } from '../../test/mesh-process.ts';

/** The goal's bound, and how long a run waits for one tip before it gives up. */
export const GOAL_MS = 30_000;
const GIVE_UP_MS = 120_000;

export interface HostileRun {
  /** Median over `blocks` new blocks: from one first seen on any node to all three on a tip at least that high. */
  readonly baselineMs: number;
  /** From the attack's end to all three on one tip above every height at its end; null past GIVE_UP_MS. */
  readonly afterAttackMs: number | null;
  readonly attackMs: number;
}

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function afterNewBlock(nodes: readonly MeshProcess[]): Promise<number> {
  const before = await highest(nodes);
  let height = before;
  while (height === before) height = await highest(nodes);
  const seen = Date.now();
  await oneTip(nodes, height, GOAL_MS);
  return Date.now() - seen;
}

export async function hostileRun(options: { readonly blockIntervalMs: number; readonly blocks: number }): Promise<HostileRun> {
  const node = { mine: true, blockIntervalMs: options.blockIntervalMs };
  const target = await startNode(node);
  const b = await startNode({ ...node, bootstrap: [tcpAddress(target)] });
  const c = await startNode({ ...node, bootstrap: [tcpAddress(target), tcpAddress(b)] });
  const nodes = [target, b, c];
  try {
    await oneTip(nodes, 5, 60_000);
    const baselines: number[] = [];
    for (let i = 0; i < options.blocks; i++) baselines.push(await afterNewBlock(nodes));
    const started = Date.now();
    await attack(target, ATTACK);
    const ended = Date.now();
    const agreed = await oneTip(nodes, (await highest(nodes)) + 1, GIVE_UP_MS).then(
      () => Date.now() - ended,
      () => null,
    );
    return { baselineMs: median(baselines), afterAttackMs: agreed, attackMs: ended - started };
  } finally {
    await Promise.all(nodes.map((n) => stopNode(n)));
  }
}
