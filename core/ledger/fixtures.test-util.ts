/**
 * Shared fixtures of the ledger tests (not a test file: the name keeps it out of every test glob).
 * Deterministic keys, a ledger at a chosen height that signs, applies and funds, the checks every
 * state must pass (the /status invariant and supply conservation), and a builder of valid blocks.
 */
import { assert } from 'chai';
import { rejects, rejectsAsync } from '../../test/assert.ts';
import { SigningKey } from '../crypto/ed25519.ts';
import { sha256 } from '../crypto/sha256.ts';
import { CREDIT } from '../encoding/amount.ts';
import { decode, encode, u128, uint53 } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import type { MeshError } from '../errors.ts';
import { type ApplyContext, applyTx, LedgerRuleError, type TxEffect } from './apply.ts';
import { type Block, InvalidBlockError, signBlock } from './block.ts';
import { type ChainParams, devnet, emissionAt } from './params.ts';
import { advanceSeed, scheduleAfter } from './producer.ts';
import { type Account, accountCodec, channelCodec, freeBalance, jobCodec, LedgerState, lockedBond, TABLE, weightOf } from './state.ts';
import { signTx, type Tx, type TxBody, type TxKind, type TxOf } from './tx.ts';
import { type Applied, applyBlock, type ParentInfo } from './validate.ts';

/** A devnet with 100 ms blocks: every test signs for it. */
export const PARAMS: ChainParams = devnet(100);
export const NETWORK: string = PARAMS.network;

/** The parent of block 1. */
export const GENESIS: ParentInfo = Object.freeze({
  height: 0,
  hash: new Uint8Array(32),
  timestampMs: PARAMS.genesisTimestampMs,
});

/** The identity whose seed is 32 bytes of `n`. */
export function keyOf(n: number): SigningKey {
  return SigningKey.fromSeed(new Uint8Array(32).fill(n));
}

/** A few named identities. */
export const ALICE: SigningKey = keyOf(1);
export const BOB: SigningKey = keyOf(2);
export const CAROL: SigningKey = keyOf(3);
export const DAVE: SigningKey = keyOf(4);

/** `n` whole credits in base units. */
export function credits(n: number | bigint): bigint {
  return BigInt(n) * CREDIT;
}

/** A transaction body without the sender and nonce, which the signer fills in. */
export type Fields<K extends TxKind = TxKind> = K extends TxKind ? Omit<TxOf<K>, 'sender' | 'nonce'> : never;

/** Signs `fields` from `key` with an explicit nonce. */
export function sign(key: SigningKey, fields: Fields, nonce: number): Promise<Tx> {
  return signTx({ ...fields, sender: key.publicKey, nonce } as TxBody, key, NETWORK);
}

/** The UptimeReward due to `producer` at `height` on `state`. */
export function rewardTx(state: LedgerState, producer: SigningKey, height: number): Promise<Tx> {
  return sign(producer, { kind: 'UptimeReward', amount: emissionAt(height, state.supply().emitted) }, height);
}

/** Everything a state holds, comparable with deepEqual: its root and every entry, in hex. */
export function snapshot(state: LedgerState): { root: string; entries: string[] } {
  return { root: toHex(state.stateRoot()), entries: state.entries().map(([k, v]) => `${toHex(k)}=${toHex(v)}`) };
}

/** Runs `fn`, expecting it to throw, and asserts the state is exactly as it was before. */
export function assertUntouched(state: LedgerState, fn: () => void): void {
  const before = snapshot(state);
  fn();
  assert.deepEqual(snapshot(state), before, 'a rejected input left the state changed');
}

const add = (map: Map<string, bigint>, id: Uint8Array, amount: bigint): void => {
  const k = toHex(id);
  map.set(k, (map.get(k) ?? 0n) + amount);
};

/**
 * The checks every valid state passes at `height`: balances never negative; for each account
 * free + locked_channels + locked_bond + locked bids = balance (/status); its bid and channel locks
 * equal what its open jobs and channels hold; the weight table is min(bond, work_earned) of each
 * account; and the supply is conserved: the sum of all balances equals emitted − burned.
 */
export function assertInvariants(state: LedgerState, height: number): void {
  const accounts = new Map<string, Account>();
  const bids = new Map<string, bigint>();
  const channels = new Map<string, bigint>();
  const weights = new Map<string, bigint>();
  for (const [k, v] of state.entries()) {
    const id = k.subarray(1);
    if (k[0] === TABLE.account) accounts.set(toHex(id), decode(accountCodec, v));
    else if (k[0] === TABLE.job) {
      const job = decode(jobCodec, v);
      assert.isTrue(job.locked > 0n, 'an open job locks something');
      add(bids, job.payer, job.locked);
    } else if (k[0] === TABLE.channel) {
      const channel = decode(channelCodec, v);
      add(channels, channel.payer, channel.capacity);
    } else if (k[0] === TABLE.weight) weights.set(toHex(id), decode(u128, v));
  }
  let sum = 0n;
  for (const [id, a] of accounts) {
    sum += a.balance;
    assert.isTrue(a.balance >= 0n, `balance of ${id} is ${a.balance}`);
    const free = freeBalance(a, height);
    assert.equal(free + a.locked_channels + lockedBond(a, height) + a.locked_bids, a.balance, `status invariant of ${id}`);
    assert.equal(a.locked_bids, bids.get(id) ?? 0n, `bid locks of ${id}`);
    assert.equal(a.locked_channels, channels.get(id) ?? 0n, `channel locks of ${id}`);
    const weight = weightOf(a);
    assert.equal(weights.get(id) ?? 0n, weight, `weight of ${id}`);
    if (weight === 0n) assert.isFalse(weights.has(id), `no zero weight entry for ${id}`);
  }
  for (const id of weights.keys()) assert.isTrue(accounts.has(id), `weight without an account: ${id}`);
  assert.deepEqual(
    state.weights(),
    [...weights.entries()].sort((x, y) => (x[0] < y[0] ? -1 : 1)),
  );
  const supply = state.supply();
  assert.equal(sum, supply.emitted - supply.burned, 'sum of balances = emitted − burned');
}

/**
 * A ledger at a chosen height, outside any block: applies transactions one by one with the rules
 * of `applyTx` (signatures are the block's business), checking the invariants after each.
 */
export class TestLedger {
  readonly state: LedgerState;
  height: number;
  /** The producer of the block being built (receives rewards). */
  producer: Uint8Array = ALICE.publicKey;

  constructor(state: LedgerState = new LedgerState(), height = 1) {
    this.state = state;
    this.height = height;
  }

  get ctx(): ApplyContext {
    return { network: NETWORK, height: this.height, producer: this.producer, nameBlocks: PARAMS.nameBlocks };
  }

  /** Signs `fields` from `key` with its next nonce (or `nonce`). */
  tx(key: SigningKey, fields: Fields, nonce?: number): Promise<Tx> {
    return sign(key, fields, nonce ?? this.state.account(key.publicKey).nonce + 1);
  }

  /** Applies `tx` and checks the invariants. */
  apply(tx: Tx): TxEffect {
    const effect = applyTx(this.state, tx, this.ctx);
    assertInvariants(this.state, this.height);
    return effect;
  }

  /** Signs with the next nonce and applies. */
  async submit(key: SigningKey, fields: Fields): Promise<TxEffect> {
    return this.apply(await this.tx(key, fields));
  }

  /** Asserts that `tx` breaks rule `code` and leaves the state exactly as it was. */
  reject(tx: Tx, code: string): void {
    assertUntouched(this.state, () => rejects(() => applyTx(this.state, tx, this.ctx), LedgerRuleError, code));
  }

  /** Signs with the next nonce and expects rule `code` to reject it. */
  async refuse(key: SigningKey, fields: Fields, code: string): Promise<void> {
    this.reject(await this.tx(key, fields), code);
  }

  /** Mints to `key` the rewards of `blocks` successive heights (1,000 credits each in era 0). */
  async fund(key: SigningKey, blocks = 1): Promise<void> {
    for (let i = 0; i < blocks; i++) {
      this.producer = key.publicKey;
      this.apply(await rewardTx(this.state, key, this.height));
      this.height++;
    }
  }

  account(key: SigningKey | Uint8Array): Account {
    return this.state.account(key instanceof Uint8Array ? key : key.publicKey);
  }

  free(key: SigningKey): bigint {
    return freeBalance(this.account(key), this.height);
  }

  /** A stand-in parent for a block at this ledger's height (the state is what the block builds on). */
  parent(): ParentInfo {
    const height = this.height - 1;
    return {
      height,
      hash: sha256(encode(uint53, height)),
      timestampMs: PARAMS.genesisTimestampMs + height * PARAMS.blockIntervalMs,
    };
  }

  /** Applies `block` (built on `parent()`) with applyBlock, checks the invariants, moves to the next height. */
  async applyBlock(block: Block): Promise<Applied> {
    const applied = await applyBlock(this.state, block, this.parent(), PARAMS);
    assertInvariants(this.state, this.height);
    this.height++;
    return applied;
  }
}

/** Asserts that applyBlock refuses `block` with rule `code` and leaves `state` exactly as it was. */
export async function rejectBlock(state: LedgerState, block: Block, parent: ParentInfo, code: string, nowMs?: number): Promise<MeshError> {
  const before = snapshot(state);
  const error = await rejectsAsync(() => applyBlock(state, block, parent, PARAMS, nowMs), InvalidBlockError, code);
  assert.deepEqual(snapshot(state), before, 'a rejected block left the state changed');
  return error;
}

/** Where the next block after `block` builds. */
export function parentOf(block: Block): ParentInfo {
  return { height: block.header.height, hash: block.hash, timestampMs: block.header.timestamp_ms };
}

/** Options of `buildBlock`: a timestamp other than the producer's earliest, a state root to claim. */
export interface BuildOptions {
  readonly timestampMs?: number;
  readonly stateRoot?: Uint8Array;
}

/**
 * A signed block by `producer` over `txs` on `state` (the parent's state, left unchanged): its
 * state_root is computed on a scratch copy, its timestamp is the producer's earliest slot.
 */
export async function buildBlock(state: LedgerState, parent: ParentInfo, producer: SigningKey, txs: readonly Tx[], options: BuildOptions = {}): Promise<Block> {
  const height = parent.height + 1;
  let stateRoot = options.stateRoot;
  if (stateRoot === undefined) {
    const scratch = LedgerState.fromEntries(state.entries());
    const ctx = { network: NETWORK, height, producer: producer.publicKey, nameBlocks: PARAMS.nameBlocks };
    for (const tx of txs) applyTx(scratch, tx, ctx);
    advanceSeed(scratch, producer.publicKey);
    stateRoot = scratch.stateRoot();
  }
  const schedule = scheduleAfter(state, parent, PARAMS.blockIntervalMs);
  return signBlock(
    NETWORK,
    {
      height,
      prev_hash: parent.hash,
      timestamp_ms: options.timestampMs ?? schedule.earliest(producer.publicKey),
      producer: producer.publicKey,
      state_root: stateRoot,
    },
    txs,
    producer,
  );
}
