/**
 * Test helpers for chains: deterministic keys, and mining blocks on a chain at the producer's slot.
 */
import type { SigningKey } from '../crypto/ed25519.ts';
import type { Block } from '../ledger/block.ts';
import { keyOf, PARAMS } from '../ledger/fixtures.test-util.ts';
import { signTx, type Tx, type TxBody } from '../ledger/tx.ts';
import { MemoryStore } from '../store/kv.ts';
import { type Clock, sleep } from '../time/clock.ts';
import { Chain, type ChainOptions } from './chain.ts';
import { buildBlock, nextSlot, type TxSource } from './miner.ts';

// The ledger tests' network and keys, under the names the chain tests use.
export { keyOf as key, PARAMS as params };

export function openChain(options: Partial<ChainOptions> = {}): Promise<Chain> {
  return Chain.open({ store: new MemoryStore(), params: PARAMS, ...options });
}

/** Builds the next block of `chain` by `producer` at its earliest slot (without adding it). */
export function nextBlock(chain: Chain, producer: SigningKey, source: TxSource | readonly Tx[] | null = null, delayMs = 0): Promise<Block> {
  const from = Array.isArray(source) ? { select: () => [...(source as readonly Tx[])] } : (source as TxSource | null);
  return buildBlock(chain, from, producer, nextSlot(chain, producer.publicKey) + delayMs);
}

/** Mines `count` blocks on `chain` by `producer`; returns them. */
export async function mine(chain: Chain, producer: SigningKey, count = 1, source: TxSource | readonly Tx[] | null = null): Promise<Block[]> {
  const out: Block[] = [];
  for (let i = 0; i < count; i++) {
    const block = await nextBlock(chain, producer, i === 0 ? source : null);
    await chain.addBlock(block);
    out.push(block);
  }
  return out;
}

/**
 * Mines on `chain` the honest way to earned work (docs/ledger.md "Bonds"): `payer` mines until it
 * can pay, then bids for each host a heartbeat-billed job of the given amount, and each host bills
 * it whole in one heartbeat, earning it less the 1 % burn as work. Returns the blocks mined.
 */
export async function mineWork(chain: Chain, payer: SigningKey, paid: readonly (readonly [SigningKey, bigint])[]): Promise<Block[]> {
  const blocks: Block[] = [];
  const need = paid.reduce((sum, [, amount]) => sum + amount, 0n);
  while (chain.state.account(payer.publicKey).balance < need) blocks.push(...(await mine(chain, payer)));
  const bids: Tx[] = [];
  for (const [host, amount] of paid) {
    const body = { kind: 'JobBid', spec_hash: new Uint8Array(32), bid: amount, duration_secs: 30, cpu_cores: 1, mem_mb: 64, billing: 1 };
    bids.push(await tx(payer, { ...body, nonce: nextNonce(chain, payer) + bids.length, host: host.publicKey }));
  }
  blocks.push(...(await mine(chain, payer, 1, bids)));
  const beats = await Promise.all(
    paid.map(([host], i) => tx(host, { kind: 'Heartbeat', nonce: nextNonce(chain, host), job_id: bids[i]!.id, cell: payer.publicKey, epoch: 1 })),
  );
  blocks.push(...(await mine(chain, payer, 1, beats)));
  return blocks;
}

/**
 * Mines on `chain` the honest way to weight: each host earns twice its weight in work (mineWork),
 * then bonds its weight, so that afterwards its weight is exactly the given amount.
 */
export async function mineWeight(chain: Chain, payer: SigningKey, weights: readonly (readonly [SigningKey, bigint])[]): Promise<Block[]> {
  const blocks = await mineWork(
    chain,
    payer,
    weights.map(([host, weight]) => [host, 2n * weight] as const),
  );
  const bonds = await Promise.all(weights.map(([host, weight]) => tx(host, { kind: 'HostBond', nonce: nextNonce(chain, host), amount: weight })));
  blocks.push(...(await mine(chain, payer, 1, bonds)));
  return blocks;
}

function nextNonce(chain: Chain, signer: SigningKey): number {
  return chain.state.account(signer.publicKey).nonce + 1;
}

/** A second chain holding the blocks of `chain` (as a peer that synced it), for a node of its own. */
export async function copyChain(chain: Chain): Promise<Chain> {
  const copy = await openChain();
  await copy.addBranch(await chain.blocksFrom(1, chain.tip.height));
  return copy;
}

/** Signs `body` (sender and network filled in) with `signer`. */
export function tx(signer: SigningKey, body: Record<string, unknown>): Promise<Tx> {
  return signTx({ sender: signer.publicKey, ...body } as TxBody, signer, PARAMS.network);
}

/**
 * A memory store whose batches take `delayMs` (0 at first) on `clock`: the moment a block is
 * being written, as long as the test holds the clock there.
 */
export class SlowStore extends MemoryStore {
  delayMs = 0;
  readonly #clock: Clock;

  constructor(clock: Clock) {
    super();
    this.#clock = clock;
  }

  override async batch(ops: Parameters<MemoryStore['batch']>[0]): Promise<void> {
    if (this.delayMs > 0) await sleep(this.#clock, this.delayMs);
    return super.batch(ops);
  }
}
