/**
 * Identities without weight against one weighted producer, at the chain level, with time passed
 * explicitly: a branch they build in private, as fast as the producer schedule and the drift bound
 * let them, never replaces the weighted chain, and signing ahead of time never lets them take the
 * weighted producer's blocks (docs/ledger.md "Block production").
 */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { CREDIT } from '../encoding/amount.ts';
import { toHex } from '../encoding/hex.ts';
import { type Block, InvalidBlockError } from '../ledger/block.ts';
import type { ChainParams } from '../ledger/params.ts';
import type { AddOutcome, Chain } from './chain.ts';
import { buildBlock, nextSlot } from './miner.ts';
import { key, mineWeight, openChain, params } from './testnet.test-util.ts';

const INTERVAL = params.blockIntervalMs;
const WEIGHTED = key(2);
const SYBILS: SigningKey[] = Array.from({ length: 20 }, (_, i) => key(100 + i));
// The drift bound devnets had before it was halved to half an interval: 20 intervals at 100 ms.
const LOOSE: ChainParams = { ...params, maxClockDriftMs: 20 * INTERVAL };

let prefix: Block[] | undefined;

/** The chain up to WEIGHTED's bond: it alone carries weight (100 credits), no Sybil has any. */
async function weightedPrefix(): Promise<Block[]> {
  if (prefix !== undefined) return prefix;
  const chain = await openChain();
  await mineWeight(chain, key(1), [[WEIGHTED, 100n * CREDIT]]);
  assert.deepEqual(chain.state.weights(), [[toHex(WEIGHTED.publicKey), 100n * CREDIT]]);
  prefix = await chain.blocksFrom(1, chain.tip.height);
  return prefix;
}

async function chainWith(blocks: Block[], chainParams: ChainParams): Promise<Chain> {
  const chain = await openChain({ params: chainParams });
  await chain.addBranch(blocks);
  return chain;
}

/** The Sybil that may sign the next block of `chain` first, and from when. */
function firstSybil(chain: Chain): { sybil: SigningKey; at: number } {
  let best = { sybil: SYBILS[0]!, at: Number.POSITIVE_INFINITY };
  for (const sybil of SYBILS) {
    const at = nextSlot(chain, sybil.publicKey);
    if (at < best.at) best = { sybil, at };
  }
  return best;
}

/**
 * Runs `intervals` block intervals from the prefix's tip. The weighted producer signs at its slots
 * on the honest chain; the Sybils build their own branch from the same tip, each block at the
 * earliest slot any of them has and as soon as the drift bound lets it pass (its timestamp at most
 * `maxClockDriftMs` ahead), and offer the whole branch to the honest chain every fifth of an
 * interval once that chain has a block of its own past the fork (before, the branch would only
 * extend it: the signing-ahead test below is about that). Returns what the honest chain answered, and both chains.
 */
async function privateRace(chainParams: ChainParams, intervals: number): Promise<{ outcomes: Set<AddOutcome>; honest: Chain; branch: Block[] }> {
  const blocks = await weightedPrefix();
  const honest = await chainWith(blocks, chainParams);
  const attacker = await chainWith(blocks, chainParams);
  const start = honest.tip.timestampMs;
  const branch: Block[] = [];
  const outcomes = new Set<AddOutcome>();
  for (let now = start; now <= start + intervals * INTERVAL; now += INTERVAL / 5) {
    for (let next = firstSybil(attacker); next.at <= now + chainParams.maxClockDriftMs; next = firstSybil(attacker)) {
      const block = await buildBlock(attacker, null, next.sybil, next.at);
      await attacker.addBlock(block, now);
      branch.push(block);
    }
    if (branch.length > 0 && honest.tip.height > blocks.length) outcomes.add(await honest.addBranch(branch, now));
    const slot = nextSlot(honest, WEIGHTED.publicKey);
    if (slot <= now) await honest.addBlock(await buildBlock(honest, null, WEIGHTED, slot), slot);
  }
  return { outcomes, honest, branch };
}

test('private chain: a branch built by identities without weight never replaces the weighted chain', async () => {
  const { outcomes, honest, branch } = await privateRace(params, 100);
  const base = (await weightedPrefix()).length;
  assert.sameMembers([...outcomes], ['side'], 'every offer was kept aside, none adopted');
  const mainChain = await honest.blocksFrom(base + 1, honest.tip.height);
  assert.isAtLeast(mainChain.length, 100);
  assert.isTrue(
    mainChain.every((b) => toHex(b.header.producer) === toHex(WEIGHTED.publicKey)),
    'the weighted producer made every block of the chain',
  );
  // The branch grew as fast as the rules allow: a block per two intervals and a little.
  assert.isAtLeast(branch.length, 45);
  assert.isBelow(branch.length, mainChain.length);
  // And it is valid: a node that never saw the weighted chain takes it whole.
  const stranger = await chainWith(await weightedPrefix(), params);
  assert.equal(await stranger.addBranch(branch, honest.tip.timestampMs), 'extended');
});

test('private chain: the drift bound is what holds it; 20 intervals of drift would let the branch win', async () => {
  const { outcomes } = await privateRace(LOOSE, 30);
  assert.include([...outcomes], 'reorganized', 'a branch signed far ahead of time replaced weighted blocks');
});

/**
 * One chain that every block reaches at once. The weighted producer signs at its slot; the Sybils
 * sign their slot as early as the drift bound lets their block pass. Whoever can be seen first
 * makes the block. Returns the producers of `count` blocks.
 */
async function signAhead(chainParams: ChainParams, count: number): Promise<string[]> {
  const chain = await chainWith(await weightedPrefix(), chainParams);
  const producers: string[] = [];
  for (let i = 0; i < count; i++) {
    const slot = nextSlot(chain, WEIGHTED.publicKey);
    const sybil = firstSybil(chain);
    const sybilSeen = Math.max(sybil.at - chainParams.maxClockDriftMs, chain.tip.timestampMs);
    const [signer, at, seen] = sybilSeen < slot ? [sybil.sybil, sybil.at, sybilSeen] : [WEIGHTED, slot, slot];
    await chain.addBlock(await buildBlock(chain, null, signer, at), seen);
    producers.push(toHex(signer.publicKey));
  }
  return producers;
}

test('private chain: identities without weight signing ahead of time never take the weighted producer’s blocks', async () => {
  const weighted = toHex(WEIGHTED.publicKey);
  const producers = await signAhead(params, 100);
  assert.isTrue(
    producers.every((p) => p === weighted),
    'the weighted producer made all 100 blocks',
  );
  // Under the loose bound the Sybils are seen first at almost every height.
  const loose = await signAhead(LOOSE, 100);
  assert.isBelow(loose.filter((p) => p === weighted).length, 10);
});

test('private chain: a block without weight signed at the weighted slot is refused', async () => {
  const chain = await chainWith(await weightedPrefix(), params);
  const slot = nextSlot(chain, WEIGHTED.publicKey);
  const early = await buildBlock(chain, null, SYBILS[0]!, slot);
  const refusal = await chain.addBlock(early, slot).catch((error: unknown) => error);
  assert.instanceOf(refusal, InvalidBlockError);
  assert.equal((refusal as InvalidBlockError).code, 'producer-too-early');
});
