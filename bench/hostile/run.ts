/**
 * After the hostile-peer sequence (test/hostile-peer.ts) ends, how long until a three-node mining
 * devnet agrees on one tip again; next to the baseline measured in the same run on the same
 * devnet: how long the three take to agree after an ordinary new block. Each run starts a fresh
 * devnet; the figures are medians over the runs.
 *
 *   npx node bench/hostile/run.ts [--runs 5] [--write]
 *
 * `--write` rewrites the `hostile` section of bench/RESULTS.md and bench/results/hostile.json.
 */
import { parseArgs } from 'node:util';
import { ATTACK, attack, highest, oneTip } from '../../test/hostile-peer.ts';
import { type MeshProcess, startNode, stopAll, stopNode, tcpAddress } from '../../test/mesh-process.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { resultPaths, writeResults } from '../lib/results.ts';

const GOAL_MS = 30_000;
const BLOCK_INTERVAL_MS = 300;

interface Run {
  /** From a new block first seen on any node to all three on a tip at least that high. */
  readonly baselineMs: number;
  /** From the attack's end to all three on one tip above every height at its end. */
  readonly afterAttackMs: number;
  readonly attackMs: number;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function baseline(nodes: readonly MeshProcess[]): Promise<number> {
  const before = await highest(nodes);
  let height = before;
  while (height === before) height = await highest(nodes);
  const seen = Date.now();
  await oneTip(nodes, height, GOAL_MS);
  return Date.now() - seen;
}

async function oneRun(): Promise<Run> {
  const options = { mine: true, blockIntervalMs: BLOCK_INTERVAL_MS };
  const target = await startNode(options);
  const b = await startNode({ ...options, bootstrap: [tcpAddress(target)] });
  const c = await startNode({ ...options, bootstrap: [tcpAddress(target), tcpAddress(b)] });
  const nodes = [target, b, c];
  try {
    await oneTip(nodes, 5, 60_000);
    const baselines: number[] = [];
    for (let i = 0; i < 5; i++) baselines.push(await baseline(nodes));
    const started = Date.now();
    await attack(target, ATTACK);
    const ended = Date.now();
    await oneTip(nodes, (await highest(nodes)) + 1, 120_000);
    return { baselineMs: median(baselines), afterAttackMs: Date.now() - ended, attackMs: ended - started };
  } finally {
    await Promise.all(nodes.map((n) => stopNode(n)));
  }
}

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, write: { type: 'boolean', default: false } } });
const count = Number(values.runs);
const runs: Run[] = [];
const startedAt = new Date();
try {
  for (let i = 0; i < count; i++) {
    const run = await oneRun();
    runs.push(run);
    console.log(`run ${i + 1}: agreed ${run.afterAttackMs} ms after the attack (${run.attackMs} ms of attack); baseline ${run.baselineMs} ms`);
  }
} finally {
  await stopAll();
}
const after = median(runs.map((r) => r.afterAttackMs));
const base = median(runs.map((r) => r.baselineMs));
const machine = await describeMachine();
const source = await sourceState();
const met = after <= GOAL_MS;
console.log(`median: ${after} ms after the attack, ${base} ms after an ordinary block; goal ${met ? 'met' : 'missed'}`);
if (values.write) {
  const section = `## Hostile peer

Measured ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC by \`npx node bench/hostile/run.ts --runs ${count} --write\` on ${machine.cpu}, ${machine.cores} cores, ${machine.os}; the machine was shared with other work while it ran. Code measured: commit ${source?.commit ?? 'unknown'}.

Three \`mesh node --devnet --mine --block-interval-ms ${BLOCK_INTERVAL_MS}\` processes on loopback; a foreign peer built from the project's libp2p runs the sequence of test/hostile-peer.ts against one of them (junk on every topic, forged transactions, 1 MiB and 3 MiB gossip frames, oversized and stalled request streams, a fresh identity per phase). **After the attack**: from its end until all three report one tip above every height at the end (so it includes the wait for a next block, up to one interval: the target's blocks must reach the others again). **Baseline**: in the same run, before the attack, from a new block first seen on any node until all three are on a tip at least that high (median of 5 blocks). Medians over ${count} runs, each on a fresh devnet.

### Goals

1. ${met ? '✅ met' : '❌ missed'}: after the hostile-peer sequence ends, the mesh agrees on one tip within 30 s. Median ${(after / 1000).toFixed(2)} s (baseline ${(base / 1000).toFixed(2)} s).

| run | attack | after the attack | baseline |
| ---: | ---: | ---: | ---: |
${runs.map((r, i) => `| ${i + 1} | ${(r.attackMs / 1000).toFixed(1)} s | ${(r.afterAttackMs / 1000).toFixed(2)} s | ${(r.baselineMs / 1000).toFixed(2)} s |`).join('\n')}
| **median** |  | **${(after / 1000).toFixed(2)} s** | **${(base / 1000).toFixed(2)} s** |
`;
  await writeResults(
    'hostile',
    { date: startedAt.toISOString(), machine, source, runs, median: { afterAttackMs: after, baselineMs: base } },
    section,
    resultPaths('hostile'),
  );
}
