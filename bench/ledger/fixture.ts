/**
 * The ledger benchmark's workloads, built deterministically (same seed, same bytes every run):
 *
 * - a full block of MAX_TXS_PER_BLOCK valid transactions of all sixteen kinds, on top of a state of
 *   ten thousand accounts in which two thousand funded participants already hold the jobs,
 *   channels, bonds and evidence the block's settlements, heartbeats, closes, expiries, unbonds
 *   and slashes refer to;
 * - large states of plain accounts, for the cost of a state root against the state's size.
 *
 * Web-standard only, like the core it exercises.
 */
import { type SignedMessage, SigningKey } from '../../core/crypto/ed25519.ts';
import { coreSha256, type Sha256Hasher, sha256 } from '../../core/crypto/sha256.ts';
import { CREDIT } from '../../core/encoding/amount.ts';
import { encode } from '../../core/encoding/codec.ts';
import { applyTx, signedMessages } from '../../core/ledger/apply.ts';
import { type Block, signBlock } from '../../core/ledger/block.ts';
import { blockSigningBytes, HEADER_VERSION, type Header, type SignedHeader } from '../../core/ledger/header.ts';
import { type ChainParams, EXPIRY_BLOCKS, emissionAt, MAINNET, MAX_TXS_PER_BLOCK } from '../../core/ledger/params.ts';
import { advanceSeed, scheduleAfter } from '../../core/ledger/producer.ts';
import { type Account, accountCodec, LedgerState, TABLE } from '../../core/ledger/state.ts';
import { BILLING_HEARTBEAT, BILLING_SETTLE, channelReceiptBytes, settlementBytes, signTx, type Tx, type TxBody, type TxKind } from '../../core/ledger/tx.ts';
import { headerMessage, type ParentInfo } from '../../core/ledger/validate.ts';
import { seededRandom } from '../lib/random.ts';

// An integer finaliser (murmur3 fmix32): spreads consecutive inputs over all 32 bits.
function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/**
 * The 32-byte id of filler account `i`: uniformly spread like a public key, recomputable from `i`
 * alone (a state of a million accounts need not keep a million ids around to pick some).
 */
export function fillerId(i: number): Uint8Array {
  const out = new Uint8Array(32);
  const view = new DataView(out.buffer);
  for (let w = 0; w < 8; w++) view.setUint32(w * 4, mix32(mix32(i + 0x9e3779b9) + w * 0x27d4eb2f));
  return out;
}

// Five bytes naming number `i` for purpose `tag`: seeds for keys and ids.
function numberBytes(i: number, tag: number): Uint8Array {
  const out = new Uint8Array(5);
  new DataView(out.buffer).setUint32(0, i);
  out[4] = tag;
  return out;
}

/** The store key of an account (table prefix ‖ id), as LedgerState lays it out. */
export function accountKey(id: Uint8Array): Uint8Array {
  const key = new Uint8Array(33);
  key[0] = TABLE.account;
  key.set(id, 1);
  return key;
}

// An account nobody has touched, as the state reports it.
const BLANK: Account = new LedgerState().account(new Uint8Array(32));

function account(balance: bigint, extra: Partial<Account> = {}): Account {
  return { ...BLANK, balance, ...extra };
}

/** The encoded account entry of filler `i`, with a balance that varies with `version`. */
export function fillerEntry(i: number, version = 0): [Uint8Array, Uint8Array] {
  const id = fillerId(i);
  return [accountKey(id), encode(accountCodec, account(BigInt(1 + (i % 1000) + version) * CREDIT))];
}

/** A state of `size` plain accounts, entered without a journal (as loaded from storage), its root hashed by `sha`. */
export function accountsState(size: number, sha: Sha256Hasher = coreSha256): LedgerState {
  function* entries(): Generator<[Uint8Array, Uint8Array]> {
    for (let i = 0; i < size; i++) yield fillerEntry(i);
  }
  return LedgerState.fromEntries(entries(), sha);
}

/** How many of each kind the benchmark block holds (Transfers fill the rest up to the maximum). */
export const BLOCK_MIX: Readonly<Record<Exclude<TxKind, 'Transfer' | 'UptimeReward'>, number>> = {
  JobBid: 120,
  JobSettle: 120,
  JobExpire: 16,
  TrustGrant: 24,
  Heartbeat: 120,
  ChannelOpen: 60,
  ChannelClose: 60,
  ChannelExpire: 16,
  NameClaim: 40,
  RevokeCapability: 16,
  HostBond: 32,
  HostUnbond: 16,
  SlashEquivocation: 2,
  JobAccept: 16,
};

export interface BlockWorkloadOptions {
  /** Accounts in the state before the block, participants included (default 10,000). */
  readonly accounts?: number;
  /** Funded accounts with keys that send the block's transactions (default 2,000). */
  readonly participants?: number;
  readonly seed?: number;
  readonly params?: ChainParams;
  /** Called with a line of progress while the workload is built. */
  readonly log?: (text: string) => void;
}

/** A block ready to validate, and the state it applies to (with its trie up to date). */
export interface BlockWorkload {
  readonly params: ChainParams;
  readonly state: LedgerState;
  readonly parent: ParentInfo;
  readonly block: Block;
  /** Every signature the block carries, header first, exactly as applyBlock verifies them. */
  readonly messages: readonly SignedMessage[];
  /** Transactions per kind, in the block. */
  readonly kinds: Readonly<Partial<Record<TxKind, number>>>;
  /** Entries in the state before the block. */
  readonly stateEntries: number;
  /** Entries the block changes (its undo record's length). */
  readonly changedEntries: number;
}

// A transaction body before its sender and nonce are filled in (Omit applied to each kind).
type Unsigned = TxBody extends infer B ? (B extends TxBody ? Omit<B, 'nonce' | 'sender'> : never) : never;

interface Planned {
  readonly key: SigningKey;
  readonly body: Unsigned;
  // Co-signatures that depend on nothing the sender's nonce changes, made before the sender signs.
  readonly cosign?: () => Promise<Partial<TxBody>>;
}

const HEIGHT = 5_000;
const FUNDS = 1_000_000n * CREDIT;

/**
 * Builds the full-block workload: the state at height HEIGHT − 1 and a signed block at HEIGHT that
 * applies to it. Every transaction goes through the state machine while the block is built, so a
 * workload that broke a rule would throw here rather than be measured (the tests also run the
 * block through applyBlock).
 */
export async function blockWorkload(options: BlockWorkloadOptions = {}): Promise<BlockWorkload> {
  const params = options.params ?? MAINNET;
  const network = params.network;
  const random = seededRandom(options.seed ?? 1);
  const log = options.log ?? (() => {});
  const participantCount = options.participants ?? 2_000;
  const fillerCount = Math.max(0, (options.accounts ?? 10_000) - participantCount);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const amount = (max: number): bigint => BigInt(1 + Math.floor(random() * max)) * CREDIT;

  log(`  keys for ${participantCount} participants, ${fillerCount} filler accounts`);
  const keys = Array.from({ length: participantCount }, (_, i) => SigningKey.fromSeed(sha256(numberBytes(i, 0x6b))));
  // Roles: the first half pay, the second half host; one host produces the block.
  const payers = keys.slice(0, participantCount >> 1);
  const hosts = keys.slice(participantCount >> 1);
  const producer = hosts[0]!;
  const weighted = hosts.slice(1, 21);
  const offenders = hosts.slice(21, 21 + BLOCK_MIX.SlashEquivocation);
  const workers = hosts.slice(21 + BLOCK_MIX.SlashEquivocation);

  const state = new LedgerState();
  let emitted = 0n;
  const fund = (id: Uint8Array, a: Account): void => {
    state.setAccount(id, a);
    emitted += a.balance;
  };
  for (let i = 0; i < fillerCount; i++) fund(fillerId(i), account(BigInt(1 + (i % 1000)) * CREDIT));
  // Weight (min of bond and earned work) for the producer and twenty-odd others: a ranked schedule.
  const bonded = new Set([producer, ...weighted, ...offenders]);
  for (const key of keys) {
    const work = key === producer ? 50_000n * CREDIT : 5_000n * CREDIT;
    fund(key.publicKey, account(FUNDS, bonded.has(key) ? { bond: 10_000n * CREDIT, work_earned: work } : {}));
  }
  state.setSupply({ emitted, burned: 0n });

  // The history the block builds on, applied through the state machine at earlier heights.
  const submit = async (key: SigningKey, body: Unsigned, height: number): Promise<Tx> => {
    const nonce = state.account(key.publicKey).nonce + 1;
    const tx = await signTx({ ...body, sender: key.publicKey, nonce } as TxBody, key, network);
    applyTx(state, tx, { network, height, producer: producer.publicKey, nameBlocks: params.nameBlocks });
    return tx;
  };
  const jobBid = (host: SigningKey | null, billing: number): Unsigned => ({
    kind: 'JobBid',
    spec_hash: sha256(Uint8Array.of(Math.floor(random() * 256))),
    bid: 1_200n * CREDIT,
    duration_secs: 3_600,
    cpu_cores: 1 + Math.floor(random() * 8),
    mem_mb: 512,
    billing,
    host: host?.publicKey ?? null,
  });
  const channelOpen = (host: SigningKey, expiry: number): Unsigned & { capacity: bigint } => ({
    kind: 'ChannelOpen',
    host: host.publicKey,
    capacity: amount(500),
    expiry_height: expiry,
  });

  log('  history: bids, channels and bonds at earlier heights');
  const expiring: { payer: SigningKey; id: Uint8Array }[] = [];
  for (let i = 0; i < BLOCK_MIX.JobExpire; i++) {
    const payer = pick(payers);
    expiring.push({ payer, id: (await submit(payer, jobBid(null, BILLING_SETTLE), HEIGHT - EXPIRY_BLOCKS - 100)).id });
  }
  const lapsed: { payer: SigningKey; id: Uint8Array }[] = [];
  for (let i = 0; i < BLOCK_MIX.ChannelExpire; i++) {
    const payer = pick(payers);
    lapsed.push({ payer, id: (await submit(payer, channelOpen(pick(workers), HEIGHT - 10), HEIGHT - 500)).id });
  }
  const unbonders = workers.slice(0, BLOCK_MIX.HostUnbond);
  for (const host of unbonders) await submit(host, { kind: 'HostBond', amount: 2_000n * CREDIT }, HEIGHT - 100);
  const settling: { payer: SigningKey; host: SigningKey; id: Uint8Array }[] = [];
  for (let i = 0; i < BLOCK_MIX.JobSettle; i++) {
    const payer = pick(payers);
    // Some bids name their host, others are open to any.
    const host = pick(workers);
    const directed = random() < 0.5;
    settling.push({ payer, host, id: (await submit(payer, jobBid(directed ? host : null, BILLING_SETTLE), HEIGHT - 50)).id });
  }
  const accepting: SigningKey[] = [];
  for (let i = 0; i < BLOCK_MIX.JobAccept; i++) accepting.push(pick(payers));
  const open: Uint8Array[] = [];
  for (const payer of accepting) open.push((await submit(payer, jobBid(null, BILLING_SETTLE), HEIGHT - 5)).id);
  // Heartbeat cells: one job per payer, so each (cell, host) pair starts its epochs afresh.
  const cells: { payer: SigningKey; host: SigningKey; id: Uint8Array }[] = [];
  for (let i = 0; i < BLOCK_MIX.Heartbeat; i++) {
    const payer = payers[i % payers.length]!;
    const host = pick(workers);
    cells.push({ payer, host, id: (await submit(payer, jobBid(host, BILLING_HEARTBEAT), HEIGHT - 50)).id });
  }
  const channels: { payer: SigningKey; host: SigningKey; id: Uint8Array; capacity: bigint }[] = [];
  for (let i = 0; i < BLOCK_MIX.ChannelClose; i++) {
    const payer = pick(payers);
    const host = pick(workers);
    const open = channelOpen(host, HEIGHT + 1_000);
    channels.push({ payer, host, id: (await submit(payer, open, HEIGHT - 50)).id, capacity: open.capacity });
  }
  const parent: ParentInfo = {
    height: HEIGHT - 1,
    hash: sha256(Uint8Array.of(1, 2, 3)),
    timestampMs: params.genesisTimestampMs + (HEIGHT - 1) * params.blockIntervalMs,
  };

  // Two signed headers by one producer at one height, for each offender.
  const evidence = async (offender: SigningKey): Promise<[SignedHeader, SignedHeader]> => {
    const signed = async (salt: number): Promise<SignedHeader> => {
      const header: Header = {
        version: HEADER_VERSION,
        height: HEIGHT - 3,
        prev_hash: sha256(Uint8Array.of(9)),
        timestamp_ms: parent.timestampMs - 2 * params.blockIntervalMs,
        producer: offender.publicKey,
        tx_count: 0,
        tx_root: new Uint8Array(32),
        state_root: sha256(Uint8Array.of(salt)),
      };
      return { header, signature: await offender.sign(blockSigningBytes(network, header)) };
    };
    return [await signed(1), await signed(2)];
  };

  log('  the block: planning every kind');
  const plans: Planned[] = [];
  const add = (key: SigningKey, body: Unsigned, cosign?: Planned['cosign']): void => {
    plans.push({ key, body, ...(cosign ? { cosign } : {}) });
  };
  for (let i = 0; i < BLOCK_MIX.JobBid; i++) {
    const billing = random() < 0.5 ? BILLING_SETTLE : BILLING_HEARTBEAT;
    add(pick(payers), jobBid(billing === BILLING_HEARTBEAT ? pick(workers) : null, billing));
  }
  for (const job of settling) {
    const cost = amount(1_200);
    const settle = { kind: 'JobSettle', job_id: job.id, payer: job.payer.publicKey, cost, payer_sig: new Uint8Array(64) } as const;
    add(job.host, settle, async () => ({
      payer_sig: await job.payer.sign(settlementBytes(network, job.id, job.host.publicKey, cost)),
    }));
  }
  for (const job of expiring) add(job.payer, { kind: 'JobExpire', job_id: job.id });
  for (const id of open) add(pick(workers), { kind: 'JobAccept', job_id: id });
  for (let i = 0; i < BLOCK_MIX.TrustGrant; i++) {
    add(payers[payers.length - 1 - i]!, { kind: 'TrustGrant', subject: pick(workers).publicKey, trusted: true });
  }
  for (const cell of cells) add(cell.host, { kind: 'Heartbeat', job_id: cell.id, cell: cell.payer.publicKey, epoch: 1 });
  for (let i = 0; i < BLOCK_MIX.ChannelOpen; i++) add(pick(payers), channelOpen(pick(workers), HEIGHT + 2_000));
  for (const channel of channels) {
    const cumulative = channel.capacity / 2n;
    const receipt = channelReceiptBytes(network, channel.id, channel.host.publicKey, cumulative);
    const close = { kind: 'ChannelClose', channel_id: channel.id, payer: channel.payer.publicKey, cumulative } as const;
    add(channel.host, { ...close, payer_sig: new Uint8Array(64) }, async () => ({ payer_sig: await channel.payer.sign(receipt) }));
  }
  for (const channel of lapsed) add(channel.payer, { kind: 'ChannelExpire', channel_id: channel.id });
  for (let i = 0; i < BLOCK_MIX.NameClaim; i++) add(pick(keys), { kind: 'NameClaim', name: `bench-${i}-${Math.floor(random() * 1e6)}` });
  for (let i = 0; i < BLOCK_MIX.RevokeCapability; i++) {
    add(pick(keys), { kind: 'RevokeCapability', token_id: sha256(Uint8Array.of(i, 7)) });
  }
  for (let i = 0; i < BLOCK_MIX.HostBond; i++) add(pick(workers), { kind: 'HostBond', amount: amount(5_000) });
  for (const host of unbonders) add(host, { kind: 'HostUnbond', amount: 1_000n * CREDIT });
  for (const offender of offenders) {
    const [a, b] = await evidence(offender);
    add(pick(payers), { kind: 'SlashEquivocation', a, b });
  }
  const transfers = MAX_TXS_PER_BLOCK - 1 - plans.length;
  for (let i = 0; i < transfers; i++) {
    // Most go to another participant; some to the silent majority of accounts, some to new ones.
    const r = random();
    const to = r < 0.6 ? pick(keys).publicKey : r < 0.9 && fillerCount > 0 ? fillerId(Math.floor(random() * fillerCount)) : sha256(numberBytes(i, 0x74));
    add(pick(keys), { kind: 'Transfer', to, amount: amount(1_000) });
  }

  // Shuffle (Fisher–Yates), then number each sender's transactions in block order and sign.
  for (let i = plans.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [plans[i], plans[j]] = [plans[j]!, plans[i]!];
  }
  log(`  signing ${plans.length + 1} transactions`);
  const nonces = new Map<SigningKey, number>();
  const txs: Tx[] = [];
  const reward = await signTx(
    { kind: 'UptimeReward', sender: producer.publicKey, nonce: HEIGHT, amount: emissionAt(HEIGHT, state.supply().emitted) },
    producer,
    network,
  );
  txs.push(reward);
  for (const plan of plans) {
    const nonce = (nonces.get(plan.key) ?? state.account(plan.key.publicKey).nonce) + 1;
    nonces.set(plan.key, nonce);
    const cosigned = plan.cosign ? await plan.cosign() : {};
    const body = { ...plan.body, ...cosigned, sender: plan.key.publicKey, nonce } as TxBody;
    txs.push(await signTx(body, plan.key, network));
  }

  // The trie must be current before the block, as it is on a node that applied the parent.
  state.commit(0);
  state.stateRoot();
  const stateEntries = state.size;
  const schedule = scheduleAfter(state, parent, params.blockIntervalMs);
  const ctx = { network, height: HEIGHT, producer: producer.publicKey, nameBlocks: params.nameBlocks };
  const mark = state.mark();
  for (const tx of txs) applyTx(state, tx, ctx);
  advanceSeed(state, producer.publicKey);
  const stateRoot = state.stateRoot();
  const changedEntries = state.changesSince(mark).length;
  state.revert(mark);
  state.stateRoot();

  const block = await signBlock(
    network,
    {
      height: HEIGHT,
      prev_hash: parent.hash,
      timestamp_ms: schedule.earliest(producer.publicKey),
      producer: producer.publicKey,
      state_root: stateRoot,
    },
    txs,
    producer,
  );
  const messages: SignedMessage[] = [headerMessage(block, params)];
  for (const tx of block.txs) messages.push(...signedMessages(tx, network));
  const kinds: Partial<Record<TxKind, number>> = {};
  for (const tx of block.txs) kinds[tx.body.kind] = (kinds[tx.body.kind] ?? 0) + 1;
  return { params, state, parent, block, messages, kinds, stateEntries, changedEntries };
}
