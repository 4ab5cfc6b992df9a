/**
 * The sync benchmark's chains: two devnet data directories whose LevelDB chains share a prefix and
 * then part, each mined on by its own producer, with a few transfers a block (the producer paying
 * a few accounts from its rewards): the two halves of a partition. Built once per set of parameters
 * under the system's temp directory and kept, so a rerun starts at once.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Chain, MAX_BLOCKS_PER_RESPONSE } from '../../core/chain/chain.ts';
import { buildBlock, nextSlot } from '../../core/chain/miner.ts';
import type { SigningKey } from '../../core/crypto/ed25519.ts';
import { CREDIT } from '../../core/encoding/amount.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { type ChainParams, devnet } from '../../core/ledger/params.ts';
import { signTx } from '../../core/ledger/tx.ts';
import { IDENTITY_FILE, writeIdentityFile } from '../../host-node/data-dir.ts';
import { LevelStore } from '../../host-node/leveldb-store.ts';
import { benchKey, chainPath } from '../mesh/chain.ts';

/** Bumped whenever the generated chains change, so an old cached directory is not reused. */
const CHAINS_VERSION = 1;
const META_FILE = 'mesh-bench-fork.json';

export interface ForkSpec {
  /** Blocks both halves hold. */
  readonly shared: number;
  /** Blocks the longer half mined after the split: what the other half fetches, and a fresh node too. */
  readonly longer: number;
  /** Blocks the shorter half mined after the split: what it rewinds. */
  readonly shorter: number;
  readonly transfersPerBlock: number;
  readonly blockIntervalMs: number;
}

export interface ForkInfo extends ForkSpec {
  readonly longerTip: string;
  readonly longerHeight: number;
  readonly shorterTip: string;
  /** Encoded blocks of the longer chain, 1 to its tip: what a catch-up from scratch fetches. */
  readonly longerBytes: number;
  /** Seconds the build took, or null when the chains were found in the cache. */
  readonly generateSeconds: number | null;
}

export interface ForkedChains {
  /** Data directories (identity.json and chain/<network>) of the two halves. */
  readonly longer: string;
  readonly shorter: string;
  readonly params: ChainParams;
  readonly info: ForkInfo;
}

/** The cached pair of data directories for `spec`, built first if absent. */
export async function forkedChains(spec: ForkSpec, log: (line: string) => void): Promise<ForkedChains> {
  const params = devnet(spec.blockIntervalMs);
  const dir = join(
    tmpdir(),
    `mesh-bench-fork-v${CHAINS_VERSION}-${spec.shared}s-${spec.longer}l-${spec.shorter}h-${spec.transfersPerBlock}t-${spec.blockIntervalMs}ms`,
  );
  const paths = { longer: join(dir, 'longer'), shorter: join(dir, 'shorter') };
  const meta = await readFile(join(dir, META_FILE), 'utf8').catch(() => null);
  if (meta !== null) return { ...paths, params, info: { ...(JSON.parse(meta) as ForkInfo), generateSeconds: null } };
  const building = `${dir}.${process.pid}.tmp`;
  await rm(building, { recursive: true, force: true });
  log(`building two chains parting after ${spec.shared} blocks (${spec.longer} and ${spec.shorter} more) in ${dir} …`);
  const started = performance.now();
  const longer = await openHalf(join(building, 'longer'), params, benchKey('fork-longer'));
  const shorter = await openHalf(join(building, 'shorter'), params, benchKey('fork-shorter'));
  try {
    await mineOn(longer.chain, benchKey('fork-longer'), spec.shared, spec.transfersPerBlock, log);
    for (let h = 1; h <= spec.shared; h += MAX_BLOCKS_PER_RESPONSE) await shorter.chain.addBranch(await longer.chain.blocksFrom(h, MAX_BLOCKS_PER_RESPONSE));
    await mineOn(longer.chain, benchKey('fork-longer'), spec.longer, spec.transfersPerBlock, log);
    await mineOn(shorter.chain, benchKey('fork-shorter'), spec.shorter, spec.transfersPerBlock, log);
    let longerBytes = 0;
    for (let h = 1; h <= longer.chain.tip.height; h += MAX_BLOCKS_PER_RESPONSE) {
      for (const block of await longer.chain.blocksFrom(h, MAX_BLOCKS_PER_RESPONSE)) longerBytes += block.bytes.length;
    }
    const info: ForkInfo = {
      ...spec,
      longerTip: toHex(longer.chain.tip.hash),
      longerHeight: longer.chain.tip.height,
      shorterTip: toHex(shorter.chain.tip.hash),
      longerBytes,
      generateSeconds: (performance.now() - started) / 1000,
    };
    await writeFile(join(building, META_FILE), `${JSON.stringify({ ...info, generateSeconds: null }, null, 2)}\n`);
    await Promise.all([longer.store.close(), shorter.store.close()]);
    await rm(dir, { recursive: true, force: true });
    await rename(building, dir);
    log(`  built in ${info.generateSeconds!.toFixed(1)} s`);
    return { ...paths, params, info };
  } catch (error) {
    await Promise.all([longer.store.close(), shorter.store.close()]).catch(() => {});
    throw error;
  }
}

async function openHalf(dataDir: string, params: ChainParams, key: SigningKey): Promise<{ chain: Chain; store: LevelStore }> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await writeIdentityFile(join(dataDir, IDENTITY_FILE), key);
  // Throwaway data: no fsync per block (the nodes that read it use the default, synced store).
  const store = await LevelStore.open(chainPath(dataDir, params), { sync: false });
  return { chain: await Chain.open({ store, params }), store };
}

// Mines `count` blocks by `producer`, each with up to `transfers` payments from it to a few accounts.
async function mineOn(chain: Chain, producer: SigningKey, count: number, transfers: number, log: (line: string) => void): Promise<void> {
  const payees = Array.from({ length: 4 }, (_, i) => benchKey(`fork-payee-${i}`).publicKey);
  for (let i = 0; i < count; i++) {
    const account = chain.state.account(producer.publicKey);
    const affordable = account.balance >= BigInt(transfers) * CREDIT ? transfers : 0;
    const txs = await Promise.all(
      Array.from({ length: affordable }, (_, k) =>
        signTx(
          { kind: 'Transfer', sender: producer.publicKey, nonce: account.nonce + k + 1, to: payees[k % payees.length]!, amount: CREDIT },
          producer,
          chain.params.network,
        ),
      ),
    );
    const block = await buildBlock(chain, { select: () => txs }, producer, nextSlot(chain, producer.publicKey));
    await chain.addBlock(block);
    if ((i + 1) % 2_000 === 0) log(`  ${i + 1} blocks`);
  }
}
