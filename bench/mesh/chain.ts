/**
 * The catch-up benchmark's chain: a devnet data directory whose LevelDB chain holds `blocks` blocks,
 * each the producer's UptimeReward plus `transfersPerBlock` transfers among a few accounts (from
 * block 2 on, once the producer has a balance). Built once per set of parameters under the system's
 * temp directory and kept, so a rerun starts at once; a node started on a copy of it serves it.
 */
import { cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Chain } from '../../core/chain/chain.ts';
import { buildBlock, nextSlot } from '../../core/chain/miner.ts';
import { type CryptoBackends, coreCrypto } from '../../core/crypto/backends.ts';
import { SigningKey } from '../../core/crypto/ed25519.ts';
import { sha256 } from '../../core/crypto/sha256.ts';
import { CREDIT } from '../../core/encoding/amount.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { type ChainParams, devnet } from '../../core/ledger/params.ts';
import { signTx, type Tx } from '../../core/ledger/tx.ts';
import { IDENTITY_FILE, openDataDir, writeIdentityFile } from '../../host-node/data-dir.ts';
import { LevelStore } from '../../host-node/leveldb-store.ts';
import { seededRandom } from '../lib/random.ts';

/** Bumped whenever the generated chain changes, so an old cached directory is not reused. */
export const CHAIN_VERSION = 1;
/** Accounts that send and receive transfers, the producer among them. */
export const ACCOUNTS = 8;
const META_FILE = 'mesh-bench-chain.json';

export interface ChainSpec {
  readonly blocks: number;
  readonly transfersPerBlock: number;
  /** The devnet's block interval: the nodes that serve and sync the chain must get the same. */
  readonly blockIntervalMs: number;
  /** Where cached data directories are kept (default the system's temp directory). */
  readonly cacheDir?: string;
}

/** What the generated chain holds. */
export interface ChainInfo {
  readonly blocks: number;
  /** Every transaction in blocks 1..blocks: the rewards and the transfers. */
  readonly txs: number;
  readonly transfersPerBlock: number;
  readonly accounts: number;
  readonly blockIntervalMs: number;
  /** Encoded blocks 1..blocks, in bytes: what a sync sends. */
  readonly blockBytes: number;
  readonly tipHash: string;
  /** Seconds it took to build, or null when it was found in the cache. */
  readonly generateSeconds: number | null;
}

export interface SourceChain {
  /** The cached data directory (identity.json, api.token, chain/<network>). */
  readonly dataDir: string;
  readonly params: ChainParams;
  readonly info: ChainInfo;
}

/** The chain directory of a data directory, as `mesh node` opens it. */
export function chainPath(dataDir: string, params: ChainParams): string {
  return join(dataDir, 'chain', params.network);
}

// Deterministic keys, so every build of a given spec is the same chain.
export function benchKey(name: string): SigningKey {
  return SigningKey.fromSeed(sha256(new TextEncoder().encode(`mesh-bench-${name}`)));
}

/** The cached data directory for `spec`, built first if absent (with `crypto`, as a node would). */
export async function sourceChain(spec: ChainSpec, log: (line: string) => void = () => {}, crypto: CryptoBackends = coreCrypto): Promise<SourceChain> {
  const params = devnet(spec.blockIntervalMs);
  const dir = join(spec.cacheDir ?? tmpdir(), `mesh-bench-chain-v${CHAIN_VERSION}-${spec.blocks}b-${spec.transfersPerBlock}t-${spec.blockIntervalMs}ms`);
  const meta = await readFile(join(dir, META_FILE), 'utf8').catch(() => null);
  if (meta !== null) return { dataDir: dir, params, info: { ...(JSON.parse(meta) as ChainInfo), generateSeconds: null } };
  // Built aside and renamed into place: an interrupted build never looks like a finished one.
  const building = `${dir}.${process.pid}.tmp`;
  await rm(building, { recursive: true, force: true });
  log(`building a chain of ${spec.blocks.toLocaleString('en-US')} blocks in ${dir} …`);
  const started = performance.now();
  const info = await buildChain(building, params, spec, log, crypto);
  const done = { ...info, generateSeconds: (performance.now() - started) / 1000 };
  await writeFile(join(building, META_FILE), `${JSON.stringify({ ...done, generateSeconds: null }, null, 2)}\n`);
  await rm(dir, { recursive: true, force: true });
  await rename(building, dir);
  log(`  built in ${done.generateSeconds.toFixed(1)} s`);
  return { dataDir: dir, params, info: done };
}

async function buildChain(
  dir: string,
  params: ChainParams,
  spec: ChainSpec,
  log: (line: string) => void,
  crypto: CryptoBackends,
): Promise<Omit<ChainInfo, 'generateSeconds'>> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const producer = benchKey('producer');
  await writeIdentityFile(join(dir, IDENTITY_FILE), producer);
  const data = await openDataDir(dir);
  if (toHex(data.identity.publicKey) !== toHex(producer.publicKey)) throw new Error('the data directory did not take the producer identity');
  // Throwaway data: no fsync per block (the nodes that read it use the default, synced store).
  const store = await LevelStore.open(chainPath(dir, params), { sync: false });
  try {
    const chain = await Chain.open({ store, params, crypto });
    const accounts = [producer, ...Array.from({ length: ACCOUNTS - 1 }, (_, i) => benchKey(`account-${i + 1}`))];
    const balance = accounts.map(() => 0n);
    const nonce = accounts.map(() => 0);
    const random = seededRandom(spec.blocks ^ (spec.transfersPerBlock << 20));
    const pick = (n: number): number => Math.floor(random() * n);
    const maxAmount = 20n * CREDIT;
    let txs = 0;
    let blockBytes = 0;
    for (let height = 1; height <= spec.blocks; height++) {
      const planned: Promise<Tx>[] = [];
      for (let i = 0; i < spec.transfersPerBlock; i++) {
        const able = accounts.map((_, k) => k).filter((k) => balance[k]! >= maxAmount);
        if (able.length === 0) break;
        const from = able[pick(able.length)]!;
        const to = (from + 1 + pick(ACCOUNTS - 1)) % ACCOUNTS;
        const amount = BigInt(1 + pick(20)) * CREDIT - BigInt(pick(1_000_000));
        balance[from]! -= amount;
        balance[to]! += amount;
        const key = accounts[from]!;
        planned.push(
          signTx({ kind: 'Transfer', sender: key.publicKey, nonce: ++nonce[from]!, to: accounts[to]!.publicKey, amount }, key, params.network, crypto.sha256),
        );
      }
      const transfers = await Promise.all(planned);
      const block = await buildBlock(chain, { select: () => transfers }, producer, nextSlot(chain, producer.publicKey));
      if (block.txs.length !== transfers.length + 1) {
        throw new Error(`block ${height} took ${block.txs.length - 1} of ${transfers.length} transfers: the generator's bookkeeping is wrong`);
      }
      await chain.addBlock(block);
      // The reward comes with the block, so the producer can spend it from the next one on.
      const reward = block.txs[0]!.body;
      if (reward.kind === 'UptimeReward') balance[0]! += reward.amount;
      txs += block.txs.length;
      blockBytes += block.bytes.length;
      if (height % 1000 === 0) log(`  block ${height.toLocaleString('en-US')}`);
    }
    return {
      blocks: spec.blocks,
      txs,
      transfersPerBlock: spec.transfersPerBlock,
      accounts: ACCOUNTS,
      blockIntervalMs: spec.blockIntervalMs,
      blockBytes,
      tipHash: toHex(chain.tip.hash),
    };
  } finally {
    await store.close();
  }
}

/** Copies the cached data directory to `to` (a node must not open the cache itself: it would hold its lock). */
export async function copyDataDir(source: SourceChain, to: string): Promise<void> {
  await cp(source.dataDir, to, { recursive: true });
}

/** The size in bytes of the files under `dir`. */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}
