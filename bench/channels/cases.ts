/**
 * The channels benchmark's measurements: receipts per second on the core path the routes use,
 * next to raw Ed25519 in the same run. MeshNodes over the memory network (a payer and a host, each
 * with its channel book in a LevelDB opened as `mesh node` opens it: synced at each batch, and a
 * second host whose store is not synced, to show what the fsync costs) share a chain on which the
 * payer opened channels to both hosts. Then, in interleaved rounds:
 *
 * - the payer signing receipts of one channel one after another (`ChannelPayer.sign`: the checks,
 *   the signature, the record of the highest, written every RECEIPT_WRITE_MS), next to the core's
 *   Ed25519 signing of receipt bytes alone (`SigningKey.sign`, WebCrypto, the node's backend) and
 *   node:crypto's;
 * - the host taking receipts of one channel one after another (`ChannelHost.accept`: the chain
 *   checks, the signature against the channel's payer, the best receipt written before it
 *   answers), next to the core's Ed25519 verification alone, node:crypto's, and a synced LevelDB
 *   write of one record alone;
 * - the host taking receipts of 64 channels at once (as many payers paying together: their writes
 *   share batches), next to 64 verifications at once.
 *
 * Each figure is the median per receipt over the samples; delivery over the network is not timed
 * (the route awaits it, but that is the network's time, not the channel's).
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Chain } from '../../core/chain/chain.ts';
import { mine, openChain } from '../../core/chain/testnet.test-util.ts';
import { ED25519_PKCS8_PREFIX, type SigningKey, verify } from '../../core/crypto/ed25519.ts';
import { CREDIT } from '../../core/encoding/amount.ts';
import { concatBytes } from '../../core/encoding/bytes.ts';
import { fromHex } from '../../core/encoding/hex.ts';
import { keyOf } from '../../core/ledger/fixtures.test-util.ts';
import { channelReceiptBytes } from '../../core/ledger/tx.ts';
import { MemoryBus } from '../../core/net/memory.test-util.ts';
import { capacity, type FullNode } from '../../core/node/node.test-util.ts';
import { MeshNode } from '../../core/node/node.ts';
import { fullNodeServices } from '../../core/node/services.ts';
import type { KeyValueStore } from '../../core/store/kv.ts';
import { systemClock } from '../../core/time/clock.ts';
import { LevelStore } from '../../host-node/leveldb-store.ts';
import { type Measurement, median } from '../lib/timing.ts';

/** Channels the host takes receipts of at once. */
export const CONCURRENT = 64;

export const RAW_SIGN = 'Ed25519 sign alone (core, WebCrypto)';
export const PAYER_SIGN = 'payer: sign a receipt (ChannelPayer.sign)';
export const RAW_VERIFY = 'Ed25519 verify alone (core, WebCrypto)';
export const HOST_ACCEPT = 'host: verify and store a receipt (ChannelHost.accept)';
export const RAW_VERIFY_MANY = `Ed25519 verify alone, ${CONCURRENT} at once`;
export const HOST_ACCEPT_MANY = `host: verify and store, ${CONCURRENT} channels at once`;
/** Added to the host's names for the host whose store is not synced. */
export const UNSYNCED = ', store not synced';

/** One row: a measurement and what it is compared with. */
export interface Row extends Measurement {
  /** The name of the row this one is a ratio of (its rate ÷ that rate), or null for a baseline. */
  readonly versus: string | null;
  /** This row's rate ÷ the baseline's (1 for a baseline). */
  readonly share: number;
}

export interface ChannelsCase {
  readonly samples: number;
  readonly opsPerSample: number;
  readonly rows: readonly Row[];
  /** The LevelDB writes the host's store made while the concurrent case ran, per receipt. */
  readonly writesPerReceipt: number | null;
}

/** A contender: `run(n)` does n operations (awaiting each, or n at once, as it says). */
interface Contender {
  readonly name: string;
  readonly versus: string | null;
  readonly note?: string;
  /** Operations per sample (a multiple of CONCURRENT for the concurrent ones). */
  readonly ops: number;
  readonly run: (n: number) => Promise<void>;
}

/** A pre-signed receipt of one channel. */
interface Signed {
  readonly channelId: Uint8Array;
  readonly cumulative: bigint;
  readonly message: Uint8Array;
  readonly signature: Uint8Array;
}

const P = keyOf(1);
/** The host the goals are about: its channel book synced at every batch, as `mesh node` opens it. */
const H = keyOf(2);
/** A second host whose store is not synced: what the fsync costs. */
const G = keyOf(3);

/** node:crypto's key objects of `key` (from its seed). */
function nodeKeys(key: SigningKey): { privateKey: KeyObject; publicKey: KeyObject } {
  const privateKey = createPrivateKey({ key: Buffer.from(concatBytes(ED25519_PKCS8_PREFIX, key.exportSeed())), format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: createPublicKey(privateKey) };
}

/** A host node, its channels from the payer (one, then CONCURRENT more) and the batches its store wrote. */
interface Host {
  readonly key: SigningKey;
  readonly node: FullNode;
  readonly channels: Uint8Array[];
  readonly writes: () => number;
}

/** The nodes and their channels; `close` stops them and removes their stores. */
interface Setup {
  readonly payer: FullNode;
  readonly synced: Host;
  readonly unsynced: Host;
  readonly network: string;
  readonly probeStore: LevelStore;
  readonly close: () => Promise<void>;
}

/** A LevelDB store that counts its batches. */
function counting(store: LevelStore): { store: KeyValueStore; writes: () => number } {
  let writes = 0;
  return {
    store: {
      get: (key) => store.get(key),
      entries: (range) => store.entries(range),
      close: () => store.close(),
      batch: (ops) => {
        writes++;
        return store.batch(ops);
      },
      stage: () => {
        const staged = store.stage();
        return {
          add: (ops) => staged.add(ops),
          discard: () => staged.discard(),
          write: () => {
            writes++;
            return staged.write();
          },
        };
      },
    },
    writes: () => writes,
  };
}

async function setUp(log: (line: string) => void): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-channels-bench-'));
  const stores = await Promise.all([
    LevelStore.open(join(dir, 'payer')),
    LevelStore.open(join(dir, 'host')),
    LevelStore.open(join(dir, 'host-unsynced'), { sync: false }),
    LevelStore.open(join(dir, 'probe')),
  ]);
  const [payerStore, hostStore, unsyncedStore, probeStore] = stores;
  const chain = await openChain();
  const chains = [await openChain(), await openChain()];
  const follow = async (count: number, source: FullNode | null): Promise<void> => {
    for (const block of await mine(chain, P, count, source?.mempool ?? null)) for (const c of chains) await c.addBlock(block);
  };
  await follow(3, null);
  const bus = new MemoryBus();
  const node = (key: SigningKey, own: Chain, store: KeyValueStore): Promise<FullNode> =>
    MeshNode.create({
      chain: own,
      network: bus.join(key.publicKey),
      key,
      clock: systemClock,
      services: fullNodeServices({ mine: false, capacity, channels: { store } }),
    });
  const payer = await node(P, chain, payerStore);
  const hosts = await Promise.all(
    [
      { key: H, ...counting(hostStore) },
      { key: G, ...counting(unsyncedStore) },
    ].map(async ({ key, store, writes }, i): Promise<Host> => ({ key, node: await node(key, chains[i]!, store), channels: [], writes })),
  );
  const close = async (): Promise<void> => {
    for (const n of [payer, ...hosts.map((h) => h.node)]) await n.stop();
    await Promise.all(stores.map((s) => s.close()));
    await rm(dir, { recursive: true, force: true });
  };
  let opened = 0;
  try {
    for (const n of [payer, ...hosts.map((h) => h.node)]) await n.start();
    for (const host of hosts) {
      for (let i = 0; i <= CONCURRENT; i++) {
        // The pool takes 64 transactions of one sender: the opens go into blocks of fewer.
        if (++opened % 60 === 0) await follow(1, payer);
        const { channel_id } = await payer.services.channels.openChannel({ host: host.key.publicKey, capacity: 10n * CREDIT, expiryHeight: null });
        host.channels.push(fromHex(channel_id, 32));
      }
    }
    await follow(1, payer);
    for (const host of hosts)
      for (const id of host.channels) if (host.node.services.channels.getChannel(id)?.status !== 'open') throw new Error('a channel did not open on its host');
  } catch (error) {
    await close();
    throw error;
  }
  log(`  ${opened} channels open from the payer to two hosts; the channel books in LevelDB under ${dir}`);
  return { payer, synced: hosts[0]!, unsynced: hosts[1]!, network: chain.params.network, probeStore, close };
}

/** `count` receipts of `channelId` to `host` for cumulative 1 on, signed by the payer's key. */
async function presign(network: string, channelId: Uint8Array, host: SigningKey, count: number): Promise<Signed[]> {
  const out: Signed[] = [];
  for (let i = 1; i <= count; i++) {
    const cumulative = BigInt(i);
    const message = channelReceiptBytes(network, channelId, host.publicKey, cumulative);
    out.push({ channelId, cumulative, message, signature: await P.sign(message) });
  }
  return out;
}

/** Runs the contenders in interleaved rounds: a warm-up sample each, then `samples` samples each. */
async function rounds(contenders: readonly Contender[], samples: number): Promise<Measurement[]> {
  const times = contenders.map(() => [] as number[]);
  for (const c of contenders) await c.run(c.ops);
  for (let round = 0; round < samples; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const i = (round + k) % contenders.length;
      const c = contenders[i]!;
      const start = performance.now();
      await c.run(c.ops);
      times[i]!.push(((performance.now() - start) * 1e6) / c.ops);
    }
  }
  return contenders.map((c, i) => {
    const medianNs = median(times[i]!);
    return {
      name: c.name,
      role: c.versus === null ? 'baseline' : 'core',
      medianNs,
      opsPerSec: 1e9 / medianNs,
      samplesNs: times[i]!,
      iterations: c.ops,
      ...(c.note && { note: c.note }),
    };
  });
}

/** The host's two cases, one channel at a time and CONCURRENT at once, over receipts signed ahead. */
async function hostCases(host: Host, network: string, sizes: { total: number; perChannel: number; opsPerSample: number; manyOps: number }, suffix: string) {
  const [one, ...many] = host.channels as [Uint8Array, ...Uint8Array[]];
  const sequential = await presign(network, one, host.key, sizes.total);
  const parallel = await Promise.all(many.map((id) => presign(network, id, host.key, sizes.perChannel)));
  const state = { accepted: 0, next: parallel.map(() => 0) };
  const accept = (r: Signed): Promise<unknown> => host.node.services.channels.host.accept(r.channelId, { cumulative: r.cumulative, payerSig: r.signature });
  const contenders: Contender[] = [
    {
      name: HOST_ACCEPT + suffix,
      versus: RAW_VERIFY,
      ops: sizes.opsPerSample,
      note: suffix === '' ? 'chain checks, signature, the best receipt written before the answer' : 'what the fsync costs',
      run: (n) => loop(n, () => accept(sequential[state.accepted++]!)),
    },
    {
      name: HOST_ACCEPT_MANY + suffix,
      versus: RAW_VERIFY_MANY,
      ops: sizes.manyOps,
      note: suffix === '' ? 'as many payers, each sending its next receipt once the last is acknowledged; their writes share batches' : '',
      run: (n) =>
        workers(n, (slot) => {
          const r = parallel[slot]![state.next[slot]!++];
          if (r === undefined) throw new Error(`channel ${slot} ran out of receipts signed ahead`);
          return accept(r);
        }),
    },
  ];
  const check = (): void => {
    // Every receipt the host took was better than the one before: each is held.
    const held = host.node.services.channels.getChannel(one)!.cumulative;
    if (held !== String(state.accepted)) throw new Error(`the host holds ${held}, not the last of ${state.accepted} receipts`);
  };
  return { contenders, sequential, parallel, state, check };
}

/** Measures every contender; `opsPerSample` receipts one at a time per sample (the concurrent cases take 8 × 64). */
export async function measureChannels(options: { samples: number; opsPerSample: number; log: (line: string) => void }): Promise<ChannelsCase> {
  const { samples, opsPerSample, log } = options;
  const setup = await setUp(log);
  try {
    const { payer, network } = setup;
    const manyOps = 8 * CONCURRENT;
    // Workers go at their own pace: each channel gets twice its share.
    const sizes = { total: opsPerSample * (samples + 1), perChannel: 2 * (manyOps / CONCURRENT) * (samples + 1) + 16, opsPerSample, manyOps };
    log(`  signing ${2 * (sizes.total + CONCURRENT * sizes.perChannel)} receipts ahead for the hosts' cases`);
    const synced = await hostCases(setup.synced, network, sizes, '');
    const unsynced = await hostCases(setup.unsynced, network, sizes, UNSYNCED);
    const { sequential, parallel } = synced;
    const raw = nodeKeys(P);
    const messages = sequential.map((r) => r.message);
    const one = setup.synced.channels[0]!;
    const at = { signed: 0n, rawSigned: 0, verified: 0, nodeVerified: 0, written: 0 };
    const record = new Uint8Array(600).fill(7);
    const nth = (list: readonly Signed[], k: number): Signed => list[k % list.length]!;
    const contenders: Contender[] = [
      { name: RAW_SIGN, versus: null, ops: opsPerSample, run: (n) => loop(n, () => P.sign(messages[at.rawSigned++ % messages.length]!)) },
      {
        name: 'Ed25519 sign alone (node:crypto)',
        versus: RAW_SIGN,
        ops: opsPerSample,
        note: "for scale: not the node's backend",
        run: (n) => loop(n, async () => nodeSign(null, messages[at.rawSigned++ % messages.length]!, raw.privateKey)),
      },
      {
        name: PAYER_SIGN,
        versus: RAW_SIGN,
        ops: opsPerSample,
        note: 'checks, signature, the highest recorded (written every 100 ms)',
        run: (n) => loop(n, () => payer.services.channels.payer.sign(one, H.publicKey, ++at.signed)),
      },
      {
        name: RAW_VERIFY,
        versus: null,
        ops: opsPerSample,
        run: (n) =>
          loop(n, async () => {
            const r = nth(sequential, at.verified++);
            assertTrue(await verify(P.publicKey, r.message, r.signature));
          }),
      },
      {
        name: 'Ed25519 verify alone (node:crypto)',
        versus: RAW_VERIFY,
        ops: opsPerSample,
        note: "for scale: not the node's backend",
        run: (n) =>
          loop(n, async () => {
            const r = nth(sequential, at.nodeVerified++);
            assertTrue(nodeVerify(null, r.message, raw.publicKey, r.signature));
          }),
      },
      {
        name: 'LevelDB: a synced write of one record alone',
        versus: RAW_VERIFY,
        ops: opsPerSample,
        note: 'what each stored receipt waits for, one at a time',
        run: (n) => loop(n, () => setup.probeStore.batch([{ type: 'put', key: Uint8Array.of(0x43, at.written++ % 256), value: record }])),
      },
      synced.contenders[0]!,
      unsynced.contenders[0]!,
      {
        name: RAW_VERIFY_MANY,
        versus: null,
        ops: manyOps,
        run: (n) =>
          workers(n, async (slot, k) => {
            const r = nth(parallel[slot]!, k);
            assertTrue(await verify(P.publicKey, r.message, r.signature));
          }),
      },
      synced.contenders[1]!,
      unsynced.contenders[1]!,
    ];
    const writesBefore = setup.synced.writes();
    const measured = await rounds(contenders, samples);
    synced.check();
    unsynced.check();
    const rows = measured.map((m, i): Row => {
      const versus = contenders[i]!.versus;
      const base = versus === null ? m : measured.find((x) => x.name === versus)!;
      return { ...m, versus, share: m.opsPerSec / base.opsPerSec };
    });
    // The synced host's batches over the run, of which its one-at-a-time case made one per receipt.
    const concurrentReceipts = synced.state.next.reduce((a, k) => a + k, 0);
    const concurrentWrites = setup.synced.writes() - writesBefore - synced.state.accepted;
    return { samples, opsPerSample, rows, writesPerReceipt: concurrentReceipts > 0 ? concurrentWrites / concurrentReceipts : null };
  } finally {
    await setup.close();
  }
}

async function loop(n: number, op: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < n; i++) await op();
}

/**
 * `n` operations by CONCURRENT workers, each starting its next as soon as its last is done:
 * `op(slot, k)` is worker `slot`'s k-th operation of this call.
 */
async function workers(n: number, op: (slot: number, k: number) => Promise<unknown>): Promise<void> {
  let started = 0;
  await Promise.all(
    Array.from({ length: CONCURRENT }, async (_, slot) => {
      for (let k = 0; started < n; k++) {
        started++;
        await op(slot, k);
      }
    }),
  );
}

function assertTrue(ok: boolean): void {
  if (!ok) throw new Error('a signature did not verify');
}

/** The rate of `name` among `rows`. */
export function rowOf(rows: readonly Row[], name: string): Row | undefined {
  return rows.find((r) => r.name === name);
}
