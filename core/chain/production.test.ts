/**
 * Block production across several nodes, on a manual clock and a simulated network: each node's
 * BlockProducer signs at its slots, blocks reach the others after a delay, and fork choice settles
 * on one chain.
 */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { CREDIT } from '../encoding/amount.ts';
import { toHex } from '../encoding/hex.ts';
import type { Block } from '../ledger/block.ts';
import { BlockProducer } from '../node/block-producer.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Chain } from './chain.ts';
import { buildBlock, nextSlot } from './miner.ts';
import { key, mine, mineWeight, openChain, params } from './testnet.test-util.ts';
import { goesFirst } from './tie.ts';

interface SimNode {
  readonly name: string;
  readonly key: SigningKey;
  readonly chain: Chain;
  live: boolean;
}

/**
 * Runs the network from `startMs` on a manual clock: the live nodes' producers sign until
 * `untilMs`, then the blocks in flight are delivered. Each block reaches the others `latencyMs`
 * after it is made. Returns the blocks made.
 */
async function simulate(nodes: SimNode[], startMs: number, untilMs: number, latencyMs: number): Promise<Block[]> {
  const clock = testScheduler(startMs);
  const made: Block[] = [];
  const producers = nodes
    .filter((node) => node.live)
    .map(
      (node) =>
        new BlockProducer({
          chain: node.chain,
          mempool: { select: () => [] },
          key: node.key,
          behind: () => false,
          clock,
          publish: async (block) => {
            made.push(block);
            for (const other of nodes) {
              if (other === node || !other.live) continue;
              // A block whose parent this node lacks is simply late here; the next ones carry it along.
              clock.setTimeout(() => void other.chain.addBlock(block, clock.now()).catch(() => undefined), latencyMs);
            }
          },
        }),
    );
  for (const producer of producers) producer.start();
  // One block interval at a time: a block still being signed when a step ends is only late.
  while (clock.now() < untilMs) await clock.advance(Math.min(params.blockIntervalMs, untilMs - clock.now()));
  for (const producer of producers) await producer.stop();
  await clock.advance(latencyMs);
  return made;
}

async function nodesFrom(prefix: Block[], keys: [string, SigningKey][]): Promise<SimNode[]> {
  return Promise.all(
    keys.map(async ([name, k]) => {
      const chain = await openChain();
      if (prefix.length > 0) await chain.addBranch(prefix);
      return { name, key: k, chain, live: true };
    }),
  );
}

/**
 * Two producers may sign the last height at nearly the same moment, leaving equal-length tips that
 * fork choice rightly keeps; the next block decides. Lets the first live node produce once more.
 */
async function settle(nodes: SimNode[]): Promise<void> {
  if (tips(nodes).size === 1) return;
  const live = nodes.filter((n) => n.live);
  const producer = live[0]!;
  const at = nextSlot(producer.chain, producer.key.publicKey);
  const block = await buildBlock(producer.chain, null, producer.key, at);
  await producer.chain.addBlock(block, at);
  for (const other of live.slice(1)) {
    const branch = await producer.chain.blocksFrom(1, 500);
    await other.chain.addBranch(branch, at);
  }
}

function tips(nodes: SimNode[]): Set<string> {
  return new Set(nodes.filter((n) => n.live).map((n) => toHex(n.chain.tip.hash)));
}

test('production: producers without weight on a new network converge on one tip', async () => {
  const nodes = await nodesFrom(
    [],
    [
      ['a', key(1)],
      ['b', key(2)],
      ['c', key(3)],
    ],
  );
  const start = params.genesisTimestampMs;
  await simulate(nodes, start, start + 3_000, 20);
  assert.isAtLeast(Math.min(...nodes.map((n) => n.chain.tip.height)), 15, 'the chain grew');
  await settle(nodes);
  assert.equal(tips(nodes).size, 1, 'one tip');
});

/** A chain prefix in which B, C and D have earned work and bonded: they carry weight; A does not. */
async function weightedPrefix(): Promise<Block[]> {
  const chain = await openChain();
  await mineWeight(chain, key(1), [
    [key(2), 50n * CREDIT],
    [key(3), 90n * CREDIT],
    [key(4), 130n * CREDIT],
  ]);
  assert.sameMembers(
    chain.state.weights().map(([, w]) => Number(w / CREDIT)),
    [50, 90, 130],
  );
  return chain.blocksFrom(1, 500);
}

test('production: weighted producers make every block while online; a producer without weight never out-produces them', async () => {
  const prefix = await weightedPrefix();
  const nodes = await nodesFrom(prefix, [
    ['a', key(1)],
    ['b', key(2)],
    ['c', key(3)],
    ['d', key(4)],
  ]);
  const start = prefix[prefix.length - 1]!.header.timestamp_ms;
  const made = await simulate(nodes, start, start + 4_000, 20);
  const weighted = new Set([2, 3, 4].map((n) => toHex(key(n).publicKey)));
  const onChain = (await nodes[1]!.chain.blocksFrom(prefix.length + 1, 500)).map((b) => toHex(b.header.producer));
  assert.isAtLeast(onChain.length, 25);
  assert.isTrue(
    onChain.every((p) => weighted.has(p)),
    'only weighted producers on the chain',
  );
  assert.isTrue(
    made.every((b) => weighted.has(toHex(b.header.producer))),
    'the unweighted node never even reached its slot',
  );
  assert.isAtLeast(new Set(onChain).size, 2, 'the rank rotates between producers');
  await settle(nodes);
  assert.equal(tips(nodes).size, 1);
});

test('production: the chain keeps growing when the first-ranked producer is stopped', async () => {
  const prefix = await weightedPrefix();
  const nodes = await nodesFrom(prefix, [
    ['a', key(1)],
    ['b', key(2)],
    ['c', key(3)],
    ['d', key(4)],
  ]);
  // Stop whoever ranks first for the next block (the heaviest is most often first).
  const first = nodes.find((n) => nextSlot(n.chain, n.key.publicKey) === n.chain.tip.timestampMs + params.blockIntervalMs)!;
  first.live = false;
  const start = prefix[prefix.length - 1]!.header.timestamp_ms;
  await simulate(nodes, start, start + 4_000, 20);
  const live = nodes.filter((n) => n.live);
  const grown = live[0]!.chain.tip.height - prefix.length;
  assert.isAtLeast(grown, 12, 'blocks kept coming through the ranked fallback');
  const producers = new Set((await live[0]!.chain.blocksFrom(prefix.length + 1, 500)).map((b) => toHex(b.header.producer)));
  assert.isFalse(producers.has(toHex(first.key.publicKey)));
  await settle(nodes);
  assert.equal(tips(nodes).size, 1);
});

/** A chain of 5 blocks by A, then 8 more by `by`: each half of a partition. */
async function half(prefix: readonly Block[], by: SigningKey): Promise<Chain> {
  const chain = await openChain();
  await chain.addBranch([...prefix]);
  await mine(chain, by, 8);
  return chain;
}

/** The block C signs next on `chain`, holding `rival` applied ahead as sync would. */
async function nextOf(chain: Chain, rival: Chain): Promise<Block> {
  chain.readRewindAhead(5, chain.tip.height);
  const branch = await rival.blocksFrom(6, 8);
  await chain.checkSignatures(branch);
  await chain.prepareBranch(branch, Date.now());
  assert.isNotNull(chain.levelBranch(), 'the rival is a valid level branch');
  const k = key(3);
  const clock = testScheduler(chain.tip.timestampMs);
  let made: Block | null = null;
  const producer = new BlockProducer({
    chain,
    mempool: { select: () => [] },
    key: k,
    behind: () => false,
    levelBranch: () => chain.levelBranch(),
    clock,
    publish: async (block) => {
      made ??= block;
    },
  });
  producer.start();
  await clock.until('it signs', () => made !== null, 10 * params.blockIntervalMs);
  await producer.stop();
  return made!;
}

test('production: on a tie both halves build on the tip that goes first', async () => {
  const prefix = await mine(await openChain(), key(1), 5);
  const [a, b] = [await half(prefix, key(4)), await half(prefix, key(5))];
  const lower = toHex(goesFirst(a.tip, b.tip) ? a.tip.hash : b.tip.hash);
  const [onA, onB] = [await nextOf(a, b), await nextOf(b, a)];
  assert.equal(toHex(onA.header.prev_hash), lower, 'the half with the higher tip signs on the rival');
  assert.equal(toHex(onB.header.prev_hash), lower);
  assert.equal(toHex((await a.blockAt(13))!.hash), lower, 'and adopts it: its block made the rival longer');
  assert.equal(toHex((await b.blockAt(13))!.hash), lower);
  assert.equal(a.tip.height, 14);
});
