/**
 * Partitions on the memory network, for the sync tests: two chains that share a prefix and part,
 * and the check that their nodes converge once linked, with every range served past the fork.
 */
import { assert } from 'chai';
import { type Chain, MAX_BLOCKS_PER_RESPONSE } from '../chain/chain.ts';
import { key, mine, openChain } from '../chain/testnet.test-util.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { toHex } from '../encoding/hex.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import { capacity, type FullNode } from './node.test-util.ts';
import { MeshNode } from './node.ts';
import { fullNodeServices } from './services.ts';

const A = key(1);
const B = key(2);

/** Two chains that share `shared` blocks, then `a` more by A on one and `b` more by B on the other. */
export async function forkedChains(shared: number, a: number, b: number): Promise<[Chain, Chain]> {
  const chainA = await openChain();
  const common = await mine(chainA, A, shared);
  const chainB = await openChain();
  for (let i = 0; i < common.length; i += MAX_BLOCKS_PER_RESPONSE) await chainB.addBranch(common.slice(i, i + MAX_BLOCKS_PER_RESPONSE));
  await mine(chainA, A, a);
  await mine(chainB, B, b);
  return [chainA, chainB];
}

/** A full node on `bus` linked to nobody yet, not mining. */
export async function startApart(bus: MemoryBus, chain: Chain, k: SigningKey, clock: Scheduler): Promise<FullNode> {
  const node = await MeshNode.create({
    chain,
    network: bus.join(k.publicKey, { linked: false }),
    key: k,
    clock,
    services: fullNodeServices({ mine: false, capacity, syncTimeoutMs: 2_000 }),
  });
  await node.start();
  return node;
}

/** Nodes of keys A and B on one bus for `chainA` and `chainB`, started unlinked: a partition. */
export async function startHalves(chainA: Chain, chainB: Chain) {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const a = await startApart(bus, chainA, A, clock);
  const b = await startApart(bus, chainB, B, clock);
  return { clock, bus, a, b, netA: bus.members.get(toHex(A.publicKey))!, netB: bus.members.get(toHex(B.publicKey))! };
}

/** Records the first height of every range `chain` serves. */
export function servedFrom(chain: Chain): number[] {
  const from: number[] = [];
  const serve = chain.blockBytesFrom.bind(chain);
  chain.blockBytesFrom = (start, count, maxBytes) => {
    from.push(start);
    return serve(start, count, maxBytes);
  };
  return from;
}

/**
 * Halves that mined `depth` and `depth + 7` blocks apart after 40 shared, each a node on the memory
 * network, unlinked, then linked: the shorter one must adopt the longer chain, every range it is
 * served starting past the fork, and nobody blamed.
 */
export async function partitionHeals(depth: number): Promise<void> {
  const shared = 40;
  const [chainA, chainB] = await forkedChains(shared, depth, depth + 7);
  const served = servedFrom(chainB);
  const { clock, bus, a, b, netA, netB } = await startHalves(chainA, chainB);
  try {
    await clock.advance(5_000);
    assert.equal(a.chain.tip.height, shared + depth, 'apart, each half keeps its own chain');
    bus.link(netA, netB);
    await clock.until('the halves agree', () => toHex(a.chain.tip.hash) === toHex(chainB.tip.hash), 60_000);
    assert.equal(toHex(a.chain.state.stateRoot()), toHex(chainB.state.stateRoot()));
    // Every range served starts past the fork: none of them held blocks the requester had.
    assert.equal(served[0], shared + 1, 'the first range starts just past the fork');
    assert.isTrue(
      served.every((h) => h > shared),
      `ranges served from ${served.join(', ')}`,
    );
    assert.isAtMost(served.length, Math.ceil((depth + 7) / MAX_BLOCKS_PER_RESPONSE) + 1, 'no range asked for twice');
    assert.deepEqual([...netA.penalties, ...netB.penalties], [], 'nobody was blamed');
  } finally {
    await a.stop();
    await b.stop();
  }
}
