/**
 * The chain a simulation starts from: its producers earn their weight the honest way before the
 * nodes start (docs/ledger.md "Bonds"). A bootstrap key mines until it can pay, bids for each
 * producer a heartbeat-billed job worth twice the weight, each producer bills it whole in one
 * heartbeat (earning it, less the burn, as work) and bonds the weight. From then on only weighted
 * producers rank (docs/chain.md), as on a network past its first days.
 */
import { Chain } from '../chain/chain.ts';
import { buildBlock, nextSlot } from '../chain/miner.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import type { Block } from '../ledger/block.ts';
import type { ChainParams } from '../ledger/params.ts';
import { signTx, type Tx, type TxBody } from '../ledger/tx.ts';
import { MemoryStore } from '../store/kv.ts';

export async function weightedPrefix(params: ChainParams, bootstrap: SigningKey, producers: readonly SigningKey[], weight: bigint): Promise<Block[]> {
  const chain = await Chain.open({ store: new MemoryStore(), params });
  const blocks: Block[] = [];
  const mine = async (txs: readonly Tx[] = []): Promise<void> => {
    const block = await buildBlock(chain, { select: () => [...txs] }, bootstrap, nextSlot(chain, bootstrap.publicKey));
    await chain.addBlock(block);
    blocks.push(block);
  };
  const sign = (key: SigningKey, body: Record<string, unknown>): Promise<Tx> =>
    signTx({ sender: key.publicKey, nonce: chain.state.account(key.publicKey).nonce + 1, ...body } as TxBody, key, params.network);

  const paid = 2n * weight;
  while (chain.state.account(bootstrap.publicKey).balance < paid * BigInt(producers.length)) await mine();
  const first = chain.state.account(bootstrap.publicKey).nonce + 1;
  const bids = await Promise.all(
    producers.map((host, i) =>
      signTx(
        {
          kind: 'JobBid',
          sender: bootstrap.publicKey,
          nonce: first + i,
          spec_hash: new Uint8Array(32),
          bid: paid,
          duration_secs: 30,
          cpu_cores: 1,
          mem_mb: 64,
          billing: 1,
          host: host.publicKey,
        },
        bootstrap,
        params.network,
      ),
    ),
  );
  await mine(bids);
  await mine(await Promise.all(producers.map((host, i) => sign(host, { kind: 'Heartbeat', job_id: bids[i]!.id, cell: bootstrap.publicKey, epoch: 1 }))));
  await mine(await Promise.all(producers.map((host) => sign(host, { kind: 'HostBond', amount: weight }))));
  return blocks;
}
