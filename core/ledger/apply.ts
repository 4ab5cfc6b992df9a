/**
 * The ledger state machine: every rule of node-api.md "Ledger rules", the job and channel tables,
 * names, bonds, slashing and emission (docs/ledger.md states each rule with its error code).
 *
 * `applyTx` is synchronous and assumes the transaction's signatures (the sender's, and a payer's
 * co-signature or evidence headers where the kind carries them) were verified beforehand, in one
 * batch with the rest of the block (`signedMessages`). On a broken rule it throws LedgerRuleError
 * before writing anything, so a rejected transaction leaves the state untouched.
 */

import type { SignedMessage } from '../crypto/ed25519.ts';
import { formatCredits } from '../encoding/amount.ts';
import { type ByteArena, bytesEqual } from '../encoding/bytes.ts';
import { encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { type ErrorTable, RuledError } from '../errors.ts';
import { blockSigningBytes, headerCodec } from './header.ts';
import {
  burnOf,
  EVIDENCE_MAX_AGE_BLOCKS,
  EXPIRY_BLOCKS,
  emissionAt,
  HEARTBEAT_INTERVAL_SECS,
  NAME_COST,
  NAME_MAX_LENGTH,
  UNACCEPTED_EXPIRY_BLOCKS,
  UNBOND_DELAY_BLOCKS,
} from './params.ts';
import { type Account, freeBalance, type Job, type LedgerState, lockedBond } from './state.ts';
import { BILLING_HEARTBEAT, BILLING_SETTLE, channelReceiptBytes, settlementBytes, type Tx, type TxKind, type TxOf, txSigningBytes } from './tx.ts';

// A transaction that breaks a rule is not its relay's fault: it is signed, and may apply to another
// tip (or no longer does here). The API answers it as a refusal naming the rule.
const REFUSED = { verdict: 'ignore', status: 400, problem: 'ledger-rule' } as const;

/** Every rule a LedgerRuleError names (docs/ledger.md), with its gossip verdict and the API's answer. */
export const LEDGER_RULES = {
  'insufficient-free-balance': { verdict: 'ignore', status: 402, problem: 'insufficient-balance' },
  'already-accepted': REFUSED,
  'already-revoked': REFUSED,
  'already-slashed': REFUSED,
  'bad-billing': REFUSED,
  'bad-name': REFUSED,
  'bid-zero': REFUSED,
  'bond-zero': REFUSED,
  'capacity-zero': REFUSED,
  'cell-cannot-cover': REFUSED,
  'cell-is-host': REFUSED,
  'channel-expired': REFUSED,
  'cost-exceeds-bid': REFUSED,
  'cpu-zero': REFUSED,
  'cumulative-exceeds-capacity': REFUSED,
  'duration-zero': REFUSED,
  'epoch-not-increasing': REFUSED,
  'evidence-from-future': REFUSED,
  'evidence-heights-differ': REFUSED,
  'evidence-producers-differ': REFUSED,
  'evidence-same-block': REFUSED,
  'evidence-too-old': REFUSED,
  'expiry-passed': REFUSED,
  'heartbeat-needs-host': REFUSED,
  'heartbeat-too-soon': REFUSED,
  'heartbeat-zero': REFUSED,
  'host-is-payer': REFUSED,
  'mem-zero': REFUSED,
  'name-taken': REFUSED,
  'nonce-gap': REFUSED,
  'nonce-used': REFUSED,
  'not-expired': REFUSED,
  'not-heartbeat-billed': REFUSED,
  'not-host': REFUSED,
  'not-payer': REFUSED,
  'reward-amount': REFUSED,
  'reward-height': REFUSED,
  'reward-not-producer': REFUSED,
  'transfer-zero': REFUSED,
  'trust-self': REFUSED,
  'trust-unchanged': REFUSED,
  // Short of bond rather than of funds: the unbond conflicts with the account's state (409).
  'unbond-exceeds-bond': { verdict: 'ignore', status: 409, problem: 'bond-conflict' },
  'unbond-zero': REFUSED,
  'unknown-channel': REFUSED,
  'unknown-job': REFUSED,
  'wrong-cell': REFUSED,
  'wrong-host': REFUSED,
  'wrong-payer': REFUSED,
} as const satisfies ErrorTable;

export type LedgerRuleCode = keyof typeof LEDGER_RULES;

/** A transaction breaks a ledger rule; `code` names the rule (docs/ledger.md). */
export class LedgerRuleError extends RuledError<typeof LEDGER_RULES> {
  constructor(code: LedgerRuleCode, message: string) {
    super(LEDGER_RULES, code, message);
  }
}

/** Where a transaction is applied: the block's height and producer, and the network. */
export interface ApplyContext {
  readonly network: string;
  readonly height: number;
  readonly producer: Uint8Array;
  /** Blocks a name claim lasts: the chain's `nameBlocks` (NAME_BLOCKS but on a test devnet). */
  readonly nameBlocks: number;
}

export type Direction = 'in' | 'out' | 'self';
export type Interaction = 'job-hosted' | 'job-paid' | 'heartbeat-hosted' | 'heartbeat-paid' | 'expiry';

/** What one transaction meant to one node, for the read models. */
export interface Involvement {
  readonly node: Uint8Array;
  readonly direction: Direction;
  readonly counterparty: Uint8Array | null;
  /** Credits earned by work (post-burn) and spent on work (gross), for /history. */
  readonly earned: bigint;
  readonly spent: bigint;
  readonly interaction: Interaction | null;
}

/** The outcome of an applied transaction. */
export interface TxEffect {
  readonly kind: TxKind;
  /** The amount the itemized list and streams report ('0' for amount-less kinds). */
  readonly amount: bigint;
  readonly burned: bigint;
  readonly involved: readonly Involvement[];
}

function fail(code: LedgerRuleCode, message: string): never {
  throw new LedgerRuleError(code, message);
}

function short(id: Uint8Array): string {
  return toHex(id).slice(0, 16);
}

/**
 * Every signature a transaction carries, as messages to verify: the sender's, plus the payer's
 * co-signature (JobSettle, ChannelClose) or both evidence headers (SlashEquivocation). The messages
 * come from `arena`, if given.
 */
export function signedMessages(tx: Tx, network: string, arena?: ByteArena): SignedMessage[] {
  const b = tx.body;
  const out: SignedMessage[] = [{ publicKey: b.sender, message: txSigningBytes(network, tx.bodyBytes, arena), signature: tx.signature }];
  if (b.kind === 'JobSettle') {
    out.push({ publicKey: b.payer, message: settlementBytes(network, b.job_id, b.sender, b.cost, arena), signature: b.payer_sig });
  } else if (b.kind === 'ChannelClose') {
    out.push({
      publicKey: b.payer,
      message: channelReceiptBytes(network, b.channel_id, b.sender, b.cumulative, arena),
      signature: b.payer_sig,
    });
  } else if (b.kind === 'SlashEquivocation') {
    for (const h of [b.a, b.b]) {
      out.push({
        publicKey: h.header.producer,
        message: blockSigningBytes(network, h.header),
        signature: h.signature,
      });
    }
  }
  return out;
}

function positive(amount: bigint, what: 'transfer' | 'bid' | 'capacity' | 'bond' | 'unbond'): void {
  if (amount === 0n) fail(`${what}-zero`, `${what} must be above 0`);
}

function requireFree(account: Account, amount: bigint, height: number, what: string): void {
  const free = freeBalance(account, height);
  if (free < amount) {
    fail('insufficient-free-balance', `${what} of ${formatCredits(amount)} credits exceeds the free balance of ${formatCredits(free)} credits`);
  }
}

// Pays `gross` from `payer` to `host` less the burn; returns the burn.
function payWithBurn(
  state: LedgerState,
  payer: Uint8Array,
  payerAccount: Account,
  host: Uint8Array,
  gross: bigint,
  unlock: { bids?: bigint; channels?: bigint },
): bigint {
  const burn = burnOf(gross);
  state.setAccount(payer, {
    ...payerAccount,
    balance: payerAccount.balance - gross,
    locked_bids: payerAccount.locked_bids - (unlock.bids ?? 0n),
    locked_channels: payerAccount.locked_channels - (unlock.channels ?? 0n),
  });
  // Read after the payer's write: payer and host may be the same account only where rules allow.
  const hostAccount = state.account(host);
  state.setAccount(host, {
    ...hostAccount,
    balance: hostAccount.balance + gross - burn,
    work_earned: hostAccount.work_earned + gross - burn,
  });
  if (burn > 0n) {
    const supply = state.supply();
    state.setSupply({ ...supply, burned: supply.burned + burn });
  }
  return burn;
}

/**
 * The first height at which the payer may expire `job`: UNACCEPTED_EXPIRY_BLOCKS after the bid while
 * no host accepted it, else EXPIRY_BLOCKS after its acceptance or last heartbeat.
 */
export function expiryHeight(job: Job): number {
  return job.accepted ? Math.max(job.bid_height, job.active_height) + EXPIRY_BLOCKS : job.bid_height + UNACCEPTED_EXPIRY_BLOCKS;
}

const NAME_PATTERN = /^[a-z0-9-]+$/;

function one(node: Uint8Array, direction: Direction, counterparty: Uint8Array | null = null): Involvement {
  return { node, direction, counterparty, earned: 0n, spent: 0n, interaction: null };
}

// A payment for work: the host earns it less the burn, the payer spends it gross.
function paid(host: Uint8Array, payer: Uint8Array, gross: bigint, burn: bigint, roles: readonly [Interaction, Interaction] | null): Involvement[] {
  return [
    { node: host, direction: 'in', counterparty: payer, earned: gross - burn, spent: 0n, interaction: roles?.[0] ?? null },
    { node: payer, direction: 'out', counterparty: host, earned: 0n, spent: gross, interaction: roles?.[1] ?? null },
  ];
}

function pair(from: Uint8Array, to: Uint8Array): Involvement[] {
  if (bytesEqual(from, to)) return [one(from, 'self', to)];
  return [one(from, 'out', to), one(to, 'in', from)];
}

/**
 * Applies `tx` to `state` at `ctx`. Throws LedgerRuleError (state untouched) when a rule is broken.
 */
export function applyTx(state: LedgerState, tx: Tx, ctx: ApplyContext): TxEffect {
  const b = tx.body;
  const sender = state.account(b.sender);
  if (b.kind === 'UptimeReward') return applyReward(state, b, sender, ctx);
  if (b.nonce !== sender.nonce + 1) {
    fail(b.nonce <= sender.nonce ? 'nonce-used' : 'nonce-gap', `nonce ${b.nonce} of ${short(b.sender)}… is not the next one (${sender.nonce + 1})`);
  }
  const mark = state.mark();
  try {
    // Every kind but the reward advances the sender's nonce first; its own writes build on that.
    state.setAccount(b.sender, { ...sender, nonce: b.nonce });
    return (APPLY[b.kind] as Appliers['Transfer'])(state, b as never, ctx, tx.id);
  } catch (error) {
    state.revert(mark);
    throw error;
  }
}

function applyReward(state: LedgerState, b: TxOf<'UptimeReward'>, sender: Account, ctx: ApplyContext): TxEffect {
  if (!bytesEqual(b.sender, ctx.producer)) fail('reward-not-producer', 'the UptimeReward must go to the block producer');
  if (b.nonce !== ctx.height) fail('reward-height', `the UptimeReward nonce ${b.nonce} must be the block height ${ctx.height}`);
  const supply = state.supply();
  const due = emissionAt(ctx.height, supply.emitted);
  if (b.amount !== due)
    fail('reward-amount', `the UptimeReward at height ${ctx.height} is ${formatCredits(due)} credits, not ${formatCredits(b.amount)} credits`);
  state.setAccount(b.sender, { ...sender, balance: sender.balance + due });
  state.setSupply({ ...supply, emitted: supply.emitted + due });
  return { kind: 'UptimeReward', amount: due, burned: 0n, involved: [one(b.sender, 'in')] };
}

// `id` is the transaction's id: a JobBid's id names the job, a ChannelOpen's the channel.
type Appliers = {
  [K in Exclude<TxKind, 'UptimeReward'>]: (s: LedgerState, b: TxOf<K>, c: ApplyContext, id: Uint8Array) => TxEffect;
};

const APPLY: Appliers = {
  Transfer(state, b, ctx) {
    positive(b.amount, 'transfer');
    const from = state.account(b.sender);
    requireFree(from, b.amount, ctx.height, 'transfer');
    state.setAccount(b.sender, { ...from, balance: from.balance - b.amount });
    const to = state.account(b.to);
    state.setAccount(b.to, { ...to, balance: to.balance + b.amount });
    return { kind: 'Transfer', amount: b.amount, burned: 0n, involved: pair(b.sender, b.to) };
  },

  JobBid(state, b, ctx, id) {
    positive(b.bid, 'bid');
    if (b.duration_secs === 0) fail('duration-zero', 'duration_secs must be at least 1');
    if (b.cpu_cores === 0) fail('cpu-zero', 'cpu_cores must be at least 1');
    if (b.mem_mb === 0) fail('mem-zero', 'mem_mb must be at least 1');
    if (b.billing !== BILLING_SETTLE && b.billing !== BILLING_HEARTBEAT) {
      fail('bad-billing', `billing ${b.billing} is neither settle (0) nor heartbeat (1)`);
    }
    if (b.host !== null && bytesEqual(b.host, b.sender)) fail('host-is-payer', 'a job cannot be directed at its payer');
    // A heartbeat debits the cell on the host's signature alone, so only a host the payer chose may
    // send them; an open heartbeat bid would be anyone's to drain.
    if (b.billing === BILLING_HEARTBEAT && b.host === null) {
      fail('heartbeat-needs-host', 'a heartbeat-billed job must name the host that may bill it');
    }
    const payer = state.account(b.sender);
    requireFree(payer, b.bid, ctx.height, 'bid');
    state.setAccount(b.sender, { ...payer, locked_bids: payer.locked_bids + b.bid });
    const intervals = BigInt(Math.max(1, Math.floor(b.duration_secs / HEARTBEAT_INTERVAL_SECS)));
    state.setJob(id, {
      payer: b.sender,
      host: b.host,
      bid: b.bid,
      locked: b.bid,
      rate: b.bid / intervals,
      billing: b.billing,
      bid_height: ctx.height,
      active_height: ctx.height,
      accepted: false,
    });
    return { kind: 'JobBid', amount: b.bid, burned: 0n, involved: [one(b.sender, 'self', b.host)] };
  },

  JobSettle(state, b) {
    const job = state.job(b.job_id);
    if (job === undefined) fail('unknown-job', `no open job ${short(b.job_id)}…`);
    if (!bytesEqual(job.payer, b.payer)) fail('wrong-payer', "the co-signing payer is not the job's payer");
    if (bytesEqual(b.sender, job.payer)) fail('host-is-payer', 'the payer cannot settle its own job as host');
    if (job.host !== null && !bytesEqual(job.host, b.sender)) fail('wrong-host', 'the job is placed with another host');
    if (b.cost > job.locked) fail('cost-exceeds-bid', `cost ${formatCredits(b.cost)} credits exceeds the locked bid of ${formatCredits(job.locked)} credits`);
    const payer = state.account(job.payer);
    const burn = payWithBurn(state, job.payer, payer, b.sender, b.cost, { bids: job.locked });
    state.setJob(b.job_id, undefined);
    return {
      kind: 'JobSettle',
      amount: b.cost,
      burned: burn,
      involved: paid(b.sender, job.payer, b.cost, burn, ['job-hosted', 'job-paid']),
    };
  },

  JobExpire(state, b, ctx) {
    const job = state.job(b.job_id);
    if (job === undefined) fail('unknown-job', `no open job ${short(b.job_id)}…`);
    if (!bytesEqual(job.payer, b.sender)) fail('not-payer', 'only the payer may expire its bid');
    const at = expiryHeight(job);
    if (ctx.height < at) fail('not-expired', `the bid may be expired at height ${at}, not ${ctx.height}`);
    const payer = state.account(b.sender);
    state.setAccount(b.sender, { ...payer, locked_bids: payer.locked_bids - job.locked });
    state.setJob(b.job_id, undefined);
    return {
      kind: 'JobExpire',
      amount: job.locked,
      burned: 0n,
      involved: [{ ...one(b.sender, 'self', job.host), interaction: 'expiry' }],
    };
  },

  JobAccept(state, b, ctx) {
    const job = state.job(b.job_id);
    if (job === undefined) fail('unknown-job', `no open job ${short(b.job_id)}…`);
    if (bytesEqual(b.sender, job.payer)) fail('host-is-payer', 'the payer cannot accept its own job as host');
    if (job.accepted) fail('already-accepted', `the job is accepted by ${short(job.host!)}…`);
    if (job.host !== null && !bytesEqual(job.host, b.sender)) fail('wrong-host', 'the bid names another host');
    // From here only this host may settle it, and the bid stays locked EXPIRY_BLOCKS from now.
    state.setJob(b.job_id, { ...job, host: b.sender, accepted: true, active_height: ctx.height });
    return { kind: 'JobAccept', amount: 0n, burned: 0n, involved: pair(b.sender, job.payer) };
  },

  TrustGrant(state, b, ctx) {
    if (bytesEqual(b.subject, b.sender)) fail('trust-self', 'a node cannot grant trust to itself');
    const current = state.trust(b.sender, b.subject);
    if ((current !== undefined) === b.trusted) {
      fail('trust-unchanged', b.trusted ? 'trust is already granted' : 'no trust to withdraw');
    }
    state.setTrust(b.sender, b.subject, b.trusted ? ctx.height : undefined);
    return { kind: 'TrustGrant', amount: 0n, burned: 0n, involved: pair(b.sender, b.subject) };
  },

  Heartbeat(state, b, ctx) {
    if (bytesEqual(b.cell, b.sender)) fail('cell-is-host', "a heartbeat's cell must differ from its host");
    const job = state.job(b.job_id);
    if (job === undefined) fail('unknown-job', `no open job ${short(b.job_id)}…`);
    if (job.billing !== BILLING_HEARTBEAT) fail('not-heartbeat-billed', 'the job is billed by settlement, not heartbeats');
    if (!bytesEqual(job.payer, b.cell)) fail('wrong-cell', "the heartbeat's cell is not the job's payer");
    if (job.host === null || !bytesEqual(job.host, b.sender)) fail('wrong-host', 'the job is placed with another host');
    // At most one heartbeat per job per block (and none in the bid's own block): a host cannot
    // drain a bid faster than the chain moves.
    if (ctx.height <= job.active_height) {
      fail('heartbeat-too-soon', `job already billed at height ${job.active_height}; one heartbeat per block`);
    }
    const last = state.epoch(b.cell, b.sender);
    if (last !== undefined && b.epoch <= last) {
      fail('epoch-not-increasing', `epoch ${b.epoch} is not above the last one (${last}) for this cell and host`);
    }
    const amount = job.rate;
    if (amount === 0n) fail('heartbeat-zero', "the job's rate per heartbeat is 0");
    // The bid's lock is what the payer authorised: no host can bill beyond it.
    if (job.locked < amount)
      fail('cell-cannot-cover', `the cell's remaining bid ${formatCredits(job.locked)} credits cannot cover ${formatCredits(amount)} credits`);
    const cell = state.account(b.cell);
    if (cell.balance < amount)
      fail('cell-cannot-cover', `the cell's balance ${formatCredits(cell.balance)} credits cannot cover ${formatCredits(amount)} credits`);
    state.setEpoch(b.cell, b.sender, b.epoch);
    const burn = payWithBurn(state, b.cell, cell, b.sender, amount, { bids: amount });
    const locked = job.locked - amount;
    // A heartbeat from the named host is its acceptance too: it runs the job.
    state.setJob(b.job_id, locked === 0n ? undefined : { ...job, locked, active_height: ctx.height, accepted: true });
    return {
      kind: 'Heartbeat',
      amount,
      burned: burn,
      involved: paid(b.sender, b.cell, amount, burn, ['heartbeat-hosted', 'heartbeat-paid']),
    };
  },

  ChannelOpen(state, b, ctx, id) {
    positive(b.capacity, 'capacity');
    if (bytesEqual(b.host, b.sender)) fail('host-is-payer', 'a channel needs two parties');
    if (b.expiry_height <= ctx.height) fail('expiry-passed', `expiry height ${b.expiry_height} is not above ${ctx.height}`);
    const payer = state.account(b.sender);
    requireFree(payer, b.capacity, ctx.height, 'capacity');
    state.setAccount(b.sender, { ...payer, locked_channels: payer.locked_channels + b.capacity });
    state.setChannel(id, {
      payer: b.sender,
      host: b.host,
      capacity: b.capacity,
      expiry_height: b.expiry_height,
      open_height: ctx.height,
    });
    return { kind: 'ChannelOpen', amount: b.capacity, burned: 0n, involved: [one(b.sender, 'self', b.host)] };
  },

  ChannelClose(state, b, ctx) {
    const channel = state.channel(b.channel_id);
    if (channel === undefined) fail('unknown-channel', `no open channel ${short(b.channel_id)}…`);
    if (!bytesEqual(channel.host, b.sender)) fail('not-host', "only the channel's host may close it");
    // Close up to the expiry height, expire after it: the two never race for the same height.
    if (ctx.height > channel.expiry_height) {
      fail('channel-expired', `the channel expired at height ${channel.expiry_height}; only its payer may reclaim it now`);
    }
    if (!bytesEqual(channel.payer, b.payer)) fail('wrong-payer', "the receipt is not signed by the channel's payer");
    if (b.cumulative > channel.capacity) {
      fail(
        'cumulative-exceeds-capacity',
        `cumulative ${formatCredits(b.cumulative)} credits exceeds the capacity of ${formatCredits(channel.capacity)} credits`,
      );
    }
    const payer = state.account(channel.payer);
    const burn = payWithBurn(state, channel.payer, payer, b.sender, b.cumulative, { channels: channel.capacity });
    state.setChannel(b.channel_id, undefined);
    return {
      kind: 'ChannelClose',
      amount: b.cumulative,
      burned: burn,
      involved: paid(b.sender, channel.payer, b.cumulative, burn, null),
    };
  },

  ChannelExpire(state, b, ctx) {
    const channel = state.channel(b.channel_id);
    if (channel === undefined) fail('unknown-channel', `no open channel ${short(b.channel_id)}…`);
    if (!bytesEqual(channel.payer, b.sender)) fail('not-payer', "only the channel's payer may expire it");
    if (ctx.height <= channel.expiry_height) {
      fail('not-expired', `the channel may be expired after height ${channel.expiry_height}, not at ${ctx.height}`);
    }
    const payer = state.account(b.sender);
    state.setAccount(b.sender, { ...payer, locked_channels: payer.locked_channels - channel.capacity });
    state.setChannel(b.channel_id, undefined);
    return { kind: 'ChannelExpire', amount: channel.capacity, burned: 0n, involved: [one(b.sender, 'self', channel.host)] };
  },

  NameClaim(state, b, ctx) {
    if (b.name.length === 0 || b.name.length > NAME_MAX_LENGTH || !NAME_PATTERN.test(b.name)) {
      fail('bad-name', `name ${JSON.stringify(b.name)} must be 1–${NAME_MAX_LENGTH} characters of a-z, 0-9 and hyphen`);
    }
    const current = state.name(b.name);
    const live = current !== undefined && current.expires > ctx.height;
    if (live && !bytesEqual(current.owner, b.sender)) fail('name-taken', `name ${b.name} is held until height ${current.expires}`);
    const account = state.account(b.sender);
    requireFree(account, NAME_COST, ctx.height, 'name claim');
    state.setAccount(b.sender, { ...account, balance: account.balance - NAME_COST });
    const supply = state.supply();
    state.setSupply({ ...supply, burned: supply.burned + NAME_COST });
    // A renewal extends from the current expiry, so renewing early never shortens a claim.
    state.setName(b.name, { owner: b.sender, expires: (live ? current.expires : ctx.height) + ctx.nameBlocks });
    return { kind: 'NameClaim', amount: NAME_COST, burned: NAME_COST, involved: [one(b.sender, 'self')] };
  },

  RevokeCapability(state, b, ctx) {
    if (state.revoked(b.sender, b.token_id) !== undefined) fail('already-revoked', 'the capability is already revoked');
    state.setRevoked(b.sender, b.token_id, ctx.height);
    return { kind: 'RevokeCapability', amount: 0n, burned: 0n, involved: [one(b.sender, 'self')] };
  },

  HostBond(state, b, ctx) {
    positive(b.amount, 'bond');
    const account = state.account(b.sender);
    requireFree(account, b.amount, ctx.height, 'bond');
    state.setAccount(b.sender, { ...account, bond: account.bond + b.amount });
    return { kind: 'HostBond', amount: b.amount, burned: 0n, involved: [one(b.sender, 'self')] };
  },

  HostUnbond(state, b, ctx) {
    positive(b.amount, 'unbond');
    const account = state.account(b.sender);
    if (b.amount > account.bond)
      fail('unbond-exceeds-bond', `unbond of ${formatCredits(b.amount)} credits exceeds the bond of ${formatCredits(account.bond)} credits`);
    // Still-locked unbonding adds up; a released one is already free and is forgotten.
    const pending = account.unbond_release > ctx.height ? account.unbonding : 0n;
    state.setAccount(b.sender, {
      ...account,
      bond: account.bond - b.amount,
      unbonding: pending + b.amount,
      unbond_release: ctx.height + UNBOND_DELAY_BLOCKS,
    });
    return { kind: 'HostUnbond', amount: b.amount, burned: 0n, involved: [one(b.sender, 'self')] };
  },

  SlashEquivocation(state, b, ctx) {
    const x = b.a.header;
    const y = b.b.header;
    if (!bytesEqual(x.producer, y.producer)) fail('evidence-producers-differ', 'the two headers have different producers');
    if (x.height !== y.height) fail('evidence-heights-differ', 'the two headers are at different heights');
    if (bytesEqual(encode(headerCodec, x), encode(headerCodec, y))) fail('evidence-same-block', 'the two headers are the same block');
    if (x.height > ctx.height) fail('evidence-from-future', `evidence at height ${x.height} is above the chain`);
    if (ctx.height - x.height > EVIDENCE_MAX_AGE_BLOCKS) {
      fail('evidence-too-old', `evidence at height ${x.height} is older than ${EVIDENCE_MAX_AGE_BLOCKS} blocks`);
    }
    if (state.slashed(x.producer, x.height) !== undefined) fail('already-slashed', 'this equivocation was already punished');
    const offender = state.account(x.producer);
    const slashed = lockedBond(offender, ctx.height);
    state.setAccount(x.producer, {
      ...offender,
      balance: offender.balance - slashed,
      bond: 0n,
      unbonding: 0n,
      unbond_release: 0,
    });
    state.setSlashed(x.producer, x.height, ctx.height);
    if (slashed > 0n) {
      const supply = state.supply();
      state.setSupply({ ...supply, burned: supply.burned + slashed });
    }
    return {
      kind: 'SlashEquivocation',
      amount: slashed,
      burned: slashed,
      involved: bytesEqual(b.sender, x.producer) ? [one(b.sender, 'self')] : [one(x.producer, 'out', b.sender), one(b.sender, 'self', x.producer)],
    };
  },
};
