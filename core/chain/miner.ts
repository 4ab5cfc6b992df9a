/**
 * Block production: when this node may sign the next block, and building it from the mempool.
 */
import type { SigningKey } from '../crypto/ed25519.ts';
import { MeshError } from '../errors.ts';
import { applyTx, LedgerRuleError } from '../ledger/apply.ts';
import { type Block, signBlock } from '../ledger/block.ts';
import { emissionAt, MAX_TXS_PER_BLOCK } from '../ledger/params.ts';
import { advanceSeed, scheduleAfter } from '../ledger/producer.ts';
import type { LedgerState } from '../ledger/state.ts';
import { signTx, type Tx } from '../ledger/tx.ts';
import type { Chain, TipInfo } from './chain.ts';

/** Where a producer takes transactions from: the mempool, or a fixed list. */
export interface TxSource {
  select(max: number): Tx[];
}

/** A block to build on other than the tip, with the state after it: a level rival (`Chain.levelBranch`). */
export interface BlockBase {
  readonly tip: TipInfo;
  readonly state: LedgerState;
}

/** The earliest time (ms) at which `producer` may sign the block after the current tip. */
export function nextSlot(chain: Chain, producer: Uint8Array): number {
  return scheduleAfter(chain.state, chain.tip, chain.params.blockIntervalMs).earliest(producer);
}

/**
 * Builds and signs the next block at `timestampMs`: the producer's UptimeReward, then pooled
 * transactions that still apply, up to MAX_TXS_PER_BLOCK. The chain's state is left as it was.
 * On the tip, unless `on` names another block and its state.
 */
export async function buildBlock(chain: Chain, source: TxSource | null, key: SigningKey, timestampMs: number, on?: BlockBase): Promise<Block> {
  const tip = on?.tip ?? chain.tip;
  const height = tip.height + 1;
  const state = on?.state ?? chain.state;
  const network = chain.params.network;
  const reward = emissionAt(height, state.supply().emitted);
  const txs: Tx[] = [];
  if (reward > 0n) txs.push(await signTx({ kind: 'UptimeReward', sender: key.publicKey, nonce: height, amount: reward }, key, network, chain.crypto.sha256));
  // A block may have landed while the reward was signed; building on a stale tip would sign a
  // second block at an old height, which is equivocation.
  if (on === undefined && chain.tip !== tip) throw new MeshError('tip-moved', 'the tip moved while the block was being built; build again');
  const candidates = source ? source.select(MAX_TXS_PER_BLOCK * 2) : [];
  const mark = state.mark();
  let root: Uint8Array;
  try {
    const ctx = { network, height, producer: key.publicKey, nameBlocks: chain.params.nameBlocks };
    const skipped = new Set<string>();
    const kept: Tx[] = [];
    for (const tx of txs) applyTx(state, tx, ctx);
    for (const tx of candidates) {
      if (txs.length + kept.length >= MAX_TXS_PER_BLOCK) break;
      const sender = String(tx.body.sender);
      // After one of a sender's transactions fails, its later nonces cannot apply either.
      if (skipped.has(sender)) continue;
      try {
        applyTx(state, tx, ctx);
        kept.push(tx);
      } catch (error) {
        if (!(error instanceof LedgerRuleError)) throw error;
        skipped.add(sender);
      }
    }
    txs.push(...kept);
    advanceSeed(state, key.publicKey);
    root = state.stateRoot();
  } finally {
    state.revert(mark);
    state.commit(mark);
  }
  return signBlock(
    network,
    { height, prev_hash: tip.hash, timestamp_ms: timestampMs, producer: key.publicKey, state_root: root },
    txs,
    key,
    chain.crypto.sha256,
  );
}
