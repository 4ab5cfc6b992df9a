/**
 * Two machines running one key, over real libp2p: `mesh node --devnet --mine` processes on two
 * halves of a devnet, each half with one machine of the key, mine apart, then join. The evidence
 * reaches the chain, the key's bond is burned, and both machines of the key stop producing.
 *
 * The key needs a bond and weight first (docs/ledger.md: weight = min(bond, work earned)): the test
 * writes a chain prefix in which it hosted a job and bonded into every node's data directory.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Chain } from '../core/chain/chain.ts';
import { buildBlock, nextSlot } from '../core/chain/miner.ts';
import { SlashingProtection } from '../core/chain/slashing-protection.ts';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { CREDIT } from '../core/encoding/amount.ts';
import { fromHex, toHex } from '../core/encoding/hex.ts';
import type { Block } from '../core/ledger/block.ts';
import { type ChainParams, devnet } from '../core/ledger/params.ts';
import { signTx, type Tx, type TxBody } from '../core/ledger/tx.ts';
import { MemoryStore } from '../core/store/kv.ts';
import { readIdentityFile, writeIdentityFile } from '../host-node/data-dir.ts';
import { LevelStore } from '../host-node/leveldb-store.ts';
import { getJson, type MeshProcess, startNode, stopAll, stopNode, tcpAddress, tempDataDir, waitFor } from './mesh-process.ts';

after(stopAll);

const INTERVAL_MS = 250;
const PARAMS: ChainParams = devnet(INTERVAL_MS);
const BOND = 100n * CREDIT;
const keyOf = (n: number): SigningKey => SigningKey.fromSeed(new Uint8Array(32).fill(n));
const PAYER = keyOf(41);
const TWIN = keyOf(42);

interface Status {
  node_id: string;
  height: number;
  bond: string;
  locked_bond: string;
  weight: string;
  burned_total: string;
  production: { state: string; reason: string | null };
}

const status = (n: MeshProcess): Promise<Status> => getJson<Status>(n, '/status');

/** The prefix: PAYER mines, pays TWIN for hosting a job (work earned), and TWIN bonds BOND. */
async function bondedPrefix(): Promise<Block[]> {
  const chain = await Chain.open({ store: new MemoryStore(), params: PARAMS });
  const sign = (k: SigningKey, body: Record<string, unknown>): Promise<Tx> => signTx({ sender: k.publicKey, ...body } as TxBody, k, PARAMS.network);
  const mine = async (txs: Tx[]): Promise<void> => {
    const block = await buildBlock(chain, { select: () => txs }, PAYER, nextSlot(chain, PAYER.publicKey));
    await chain.addBlock(block);
  };
  await mine([]);
  const bid = await sign(PAYER, {
    kind: 'JobBid',
    nonce: 1,
    spec_hash: new Uint8Array(32),
    bid: 200n * CREDIT,
    duration_secs: 30,
    cpu_cores: 1,
    mem_mb: 64,
    billing: 1,
    host: TWIN.publicKey,
  });
  await mine([bid]);
  await mine([await sign(TWIN, { kind: 'Heartbeat', nonce: 1, job_id: bid.id, cell: PAYER.publicKey, epoch: 1 })]);
  await mine([await sign(TWIN, { kind: 'HostBond', nonce: 2, amount: BOND })]);
  assert.equal(chain.state.weights().length, 1, 'TWIN carries weight');
  return chain.blocksFrom(1, 500);
}

/** A data directory holding the prefix (and `key` as the node's identity, if given). */
async function dataDir(prefix: readonly Block[], key?: SigningKey): Promise<string> {
  const dir = await tempDataDir();
  const store = await LevelStore.open(join(dir, 'chain', PARAMS.network));
  const chain = await Chain.open({ store, params: PARAMS });
  await chain.addBranch(prefix);
  await store.close();
  if (key !== undefined) await writeIdentityFile(join(dir, 'identity.json'), key);
  return dir;
}

test('two machines with one key mine on two halves of a devnet; once joined, the bond is burned and both stop', async () => {
  const prefix = await bondedPrefix();
  const burnedBefore = 2n * CREDIT; // the heartbeat's 1 % burn in the prefix
  const node = (dir: string, bootstrap: string[] = []): Promise<MeshProcess> =>
    startNode({ dataDir: dir, mine: true, blockIntervalMs: INTERVAL_MS, bootstrap });
  const a = await node(await dataDir(prefix, TWIN));
  const x1 = await node(await dataDir(prefix), [tcpAddress(a)]);
  const b = await node(await dataDir(prefix, TWIN));
  const x2Dir = await dataDir(prefix);
  let x2 = await node(x2Dir, [tcpAddress(b)]);
  assert.equal(a.nodeId, b.nodeId, 'one key on two machines');

  // Both halves grow apart, each with its own machine of the key signing.
  const apart = prefix.length + 8;
  await waitFor('both halves grow', async () => (await status(a)).height >= apart && (await status(b)).height >= apart, 60_000);
  assert.equal((await status(a)).production.state, 'on');

  // The halves join: x2 comes back connected to x1 as well.
  await stopNode(x2);
  x2 = await node(x2Dir, [tcpAddress(x1), tcpAddress(b)]);
  const slashed = await waitFor(
    'the bond burned on both halves',
    async () => {
      const all = await Promise.all([a, b, x1, x2].map(status));
      const twins = all.slice(0, 2);
      return all.every((s) => BigInt(s.burned_total) === burnedBefore + BOND) && twins.every((s) => s.bond === '0' && s.locked_bond === '0') ? all : undefined;
    },
    90_000,
    250,
  );
  for (const s of slashed.slice(0, 2)) assert.equal(s.weight, '0');
  // Both machines of the key stopped producing, and say why in /status and in their log.
  for (const twin of [a, b]) {
    const s = await waitFor('the twin halts', async () => {
      const st = await status(twin);
      return st.production.state === 'halted' ? st : undefined;
    });
    assert.match(s.production.reason ?? '', /another machine is producing with this key/);
    assert.match(twin.log(), /producer: STOPPED\./);
  }
  // The chain goes on without them.
  const height = (await status(x1)).height;
  await waitFor('the chain grows', async () => (await status(x1)).height >= height + 3, 30_000);
});

test('a node restarted below a height it signed signs nothing there, and signs again above it', async () => {
  const m0 = await startNode({ mine: true, blockIntervalMs: INTERVAL_MS });
  await waitFor('a few blocks', async () => (await status(m0)).height >= 6);
  assert.equal(await stopNode(m0), 0);
  const dir = m0.dataDir;
  const key = fromHex(m0.nodeId, 32);
  const signedStore = await LevelStore.open(join(dir, 'signed', PARAMS.network));
  const recorded = (await new SlashingProtection(signedStore, PARAMS.network).last(key))!;
  await signedStore.close();
  // Its chain loses its last two blocks (a restored backup, say): the record does not.
  const chainPath = join(dir, 'chain', PARAMS.network);
  const old = await LevelStore.open(chainPath);
  const blocks = await (await Chain.open({ store: old, params: PARAMS })).blocksFrom(1, recorded.height - 2);
  await old.close();
  await rm(chainPath, { recursive: true });
  const store = await LevelStore.open(chainPath);
  await (await Chain.open({ store, params: PARAMS })).addBranch(blocks);
  await store.close();

  const m = await startNode({ dataDir: dir, mine: true, blockIntervalMs: INTERVAL_MS });
  await waitFor('it refuses the height', async () => m.log().includes(`signs nothing at height ${recorded.height - 1} (slashing protection)`));
  assert.equal((await status(m)).height, recorded.height - 2, 'alone, it produced nothing');
  // Another producer fills the heights it signed before; then it signs again above them.
  const n = await startNode({ mine: true, blockIntervalMs: INTERVAL_MS, bootstrap: [tcpAddress(m)] });
  await waitFor('the chain passes the recorded height', async () => (await status(m)).height > recorded.height, 60_000);
  await stopNode(n);
  const alone = (await status(m)).height;
  await waitFor('alone again, it signs above', async () => (await status(m)).height >= alone + 2, 30_000);
  assert.equal(await stopNode(m), 0);
  const reopened = await LevelStore.open(chainPath);
  const chain = await Chain.open({ store: reopened, params: PARAMS });
  for (let height = recorded.height - 1; height <= recorded.height; height++) {
    assert.notEqual(toHex((await chain.blockAt(height))!.header.producer), m.nodeId, `block ${height} is not signed by m`);
  }
  await reopened.close();
  assert.doesNotMatch(m.log(), /STOPPED/, 'its own old blocks are no doppelganger');
});

test('a second machine started with a key already at work stops before it signs anything', async () => {
  const first = await startNode({ mine: true, blockIntervalMs: INTERVAL_MS });
  // One peer id on two machines: no node connects to both (libp2p takes them for one peer).
  const relay = await startNode({ blockIntervalMs: INTERVAL_MS, bootstrap: [tcpAddress(first)] });
  const far = await startNode({ blockIntervalMs: INTERVAL_MS, bootstrap: [tcpAddress(relay)] });
  await waitFor('a few blocks', async () => (await status(far)).height >= 3);
  const dir = await tempDataDir();
  await writeIdentityFile(join(dir, 'identity.json'), await readIdentityFile(join(first.dataDir, 'identity.json')));
  const second = await startNode({ dataDir: dir, mine: true, blockIntervalMs: INTERVAL_MS, bootstrap: [tcpAddress(far)] });
  const halted = await waitFor('the second machine halts', async () => {
    const s = await status(second);
    return s.production.state === 'halted' ? s : undefined;
  });
  assert.match(halted.production.reason ?? '', /this node did not make it/);
  assert.equal((await status(first)).production.state, 'on', 'the first goes on: it never saw a block it did not make');
  const height = (await status(relay)).height;
  await waitFor('the chain grows', async () => (await status(relay)).height >= height + 3);
  assert.equal(await stopNode(second), 0);
  const record = await LevelStore.open(join(dir, 'signed', PARAMS.network));
  assert.equal(await new SlashingProtection(record, PARAMS.network).last(fromHex(second.nodeId, 32)), null, 'it signed nothing');
  await record.close();
});
