// Property tests of the state machine: random blocks of valid and invalid transactions from a few
// accounts. After every block: supply conservation, the /status invariant (free balance never
// negative), and that undoing the block and applying it again gives the identical state root; after
// every job transaction, the bid rules a host relies on (World's #checkBidRules).
import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../../test/harness.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { sha256 } from '../crypto/sha256.ts';
import { CREDIT } from '../encoding/amount.ts';
import { toHex } from '../encoding/hex.ts';
import { type ApplyContext, applyTx, LedgerRuleError } from './apply.ts';
import { ALICE, assertInvariants, BOB, CAROL, DAVE, type Fields, NETWORK, rewardTx, sign } from './fixtures.test-util.ts';
import { EMPTY_ROOT } from './merkle.ts';
import { EXPIRY_BLOCKS, NAME_BLOCKS, UNACCEPTED_EXPIRY_BLOCKS } from './params.ts';
import { type Change, LedgerState } from './state.ts';
import { BILLING_HEARTBEAT, BILLING_SETTLE, channelReceiptBytes, settlementBytes, type Tx, type TxKind } from './tx.ts';

const KEYS = [ALICE, BOB, CAROL, DAVE];
const BY_ID = new Map(KEYS.map((k) => [toHex(k.publicKey), k]));
const NAMES = ['mesh', 'node-1', 'x'];

/** One transaction to attempt, in terms of the accounts and the jobs and channels opened so far. */
interface Op {
  readonly kind: Exclude<TxKind, 'UptimeReward' | 'TrustGrant' | 'RevokeCapability' | 'SlashEquivocation'>;
  readonly from: number;
  readonly to: number;
  readonly amount: bigint;
  /** Which earlier job or channel the op refers to (modulo how many there are). */
  readonly pick: number;
  readonly small: number;
  readonly flag: boolean;
  /** Added to the correct nonce: mostly 0, sometimes a used or skipped one. */
  readonly nonceSkew: number;
}

interface BlockPlan {
  readonly producer: number;
  readonly gap: number;
  readonly ops: readonly Op[];
}

const amountArb = fc.oneof(
  { weight: 1, arbitrary: fc.constant(0n) },
  { weight: 6, arbitrary: fc.bigInt(1n, 2_000n).map((n) => (n * CREDIT) / 4n) },
  { weight: 2, arbitrary: fc.bigInt(1n, 5_000n) },
);

const OP_KINDS: readonly Op['kind'][] = [
  'Transfer',
  'JobBid',
  'JobSettle',
  'JobExpire',
  'JobAccept',
  'Heartbeat',
  'ChannelOpen',
  'ChannelClose',
  'ChannelExpire',
  'NameClaim',
  'HostBond',
  'HostUnbond',
];

const opArb: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom(...OP_KINDS),
  from: fc.nat(KEYS.length - 1),
  to: fc.nat(KEYS.length - 1),
  amount: amountArb,
  pick: fc.nat(50),
  small: fc.nat(3),
  flag: fc.boolean(),
  nonceSkew: fc.oneof({ weight: 12, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(-1, 1) }),
});

const blockArb: fc.Arbitrary<BlockPlan> = fc.record({
  producer: fc.nat(KEYS.length - 1),
  // Mostly consecutive heights, sometimes a jump past the bid, channel and unbonding delays.
  // Exactly the expiry delay now and then: bids and channels become expirable right at their boundary.
  gap: fc.oneof(
    { weight: 3, arbitrary: fc.constant(1) },
    { weight: 1, arbitrary: fc.integer({ min: 2, max: 3_000 }) },
    { weight: 1, arbitrary: fc.constant(EXPIRY_BLOCKS) },
    { weight: 1, arbitrary: fc.constant(UNACCEPTED_EXPIRY_BLOCKS) },
  ),
  ops: fc.array(opArb, { maxLength: 10 }),
});

const RUNS = { numRuns: 200 };

/** A charge against `total`: half of it, all of it, one unit over it, or the random amount. */
function portion(total: bigint, op: Op): bigint {
  return [op.amount, total / 2n, total, total + 1n][op.small]!;
}

/** What the chain has said about one job: when it was bid, who accepted it and when, its last heartbeat. */
interface JobHistory {
  readonly payer: string;
  readonly bidHeight: number;
  acceptedBy: string | null;
  activeHeight: number;
}

/** What the run has opened so far, for ops that refer to a job or a channel. */
class World {
  readonly state = new LedgerState();
  readonly jobs: Uint8Array[] = [];
  readonly channels: Uint8Array[] = [];
  readonly #history = new Map<string, JobHistory>();
  height = 0;

  /**
   * The bid rules as a host and a payer rely on them, checked against the job's own history: once a
   * host accepted a bid, only it settles and the payer expires it no sooner than EXPIRY_BLOCKS after
   * the acceptance (or the last heartbeat); a bid no host accepted expires UNACCEPTED_EXPIRY_BLOCKS
   * after it was made.
   */
  #checkBidRules(tx: Tx, refused: string | null, open: boolean): void {
    const b = tx.body;
    if (b.kind === 'JobBid') {
      if (refused === null) this.#history.set(toHex(tx.id), { payer: toHex(b.sender), bidHeight: this.height, acceptedBy: null, activeHeight: this.height });
      return;
    }
    if (b.kind !== 'JobAccept' && b.kind !== 'JobExpire' && b.kind !== 'JobSettle' && b.kind !== 'Heartbeat') return;
    const job = this.#history.get(toHex(b.job_id));
    if (job === undefined || !open) return;
    const sender = toHex(b.sender);
    const at = job.acceptedBy === null ? job.bidHeight + UNACCEPTED_EXPIRY_BLOCKS : job.activeHeight + EXPIRY_BLOCKS;
    if (b.kind === 'JobExpire' && sender === job.payer) {
      assert.equal(refused === 'not-expired', this.height < at, `an expiry at ${this.height}, expirable from ${at}: ${refused}`);
    }
    if (b.kind === 'JobSettle' && refused === null && job.acceptedBy !== null) assert.equal(sender, job.acceptedBy, 'only the accepting host settles');
    if (b.kind === 'JobAccept' && job.acceptedBy !== null) assert.isNotNull(refused, 'a job is accepted once');
    if (refused !== null) return;
    if (b.kind === 'JobAccept' || b.kind === 'Heartbeat') {
      job.acceptedBy = sender;
      job.activeHeight = this.height;
    }
  }

  // Mostly one still open (so the rules past "unknown" are reached), sometimes any or none.
  #pick(ids: readonly Uint8Array[], open: (id: Uint8Array) => boolean, op: Op): Uint8Array {
    const live = op.small === 3 ? ids : ids.filter(open);
    return live.length === 0 ? sha256(Uint8Array.of(op.pick)) : live[op.pick % live.length]!;
  }

  #job(op: Op): Uint8Array {
    return this.#pick(this.jobs, (id) => this.state.job(id) !== undefined, op);
  }

  #channel(op: Op): Uint8Array {
    return this.#pick(this.channels, (id) => this.state.channel(id) !== undefined, op);
  }

  // The right party for an op on a job or channel when `op.flag` says so, else whoever `from` is.
  #party(id: Uint8Array | undefined, op: Op): SigningKey {
    return (op.flag && id && BY_ID.get(toHex(id))) || KEYS[op.from]!;
  }

  /** The sender and fields of `op` against the current state. */
  async plan(op: Op): Promise<[SigningKey, Fields]> {
    const from = KEYS[op.from]!;
    const other = KEYS[op.to]!;
    switch (op.kind) {
      case 'Transfer':
        return [from, { kind: 'Transfer', to: other.publicKey, amount: op.amount }];
      case 'JobBid':
        return [
          from,
          {
            kind: 'JobBid',
            spec_hash: sha256(Uint8Array.of(op.small)),
            bid: op.amount,
            duration_secs: [10, 90, 600, 3_600][op.small]!,
            cpu_cores: 1,
            mem_mb: 128,
            billing: op.flag ? BILLING_HEARTBEAT : BILLING_SETTLE,
            host: op.pick % 3 !== 1 ? other.publicKey : null,
          },
        ];
      case 'JobSettle':
      case 'Heartbeat': {
        const id = this.#job(op);
        const job = this.state.job(id);
        const payer = (job && BY_ID.get(toHex(job.payer))) ?? other;
        // The placed host, or anyone but the payer when the job is open to all.
        const host = job?.host ? this.#party(job.host, op) : payer === from ? other : from;
        if (op.kind === 'Heartbeat') {
          const last = this.state.epoch(payer.publicKey, host.publicKey) ?? 0;
          return [host, { kind: 'Heartbeat', job_id: id, cell: payer.publicKey, epoch: last + op.small }];
        }
        const cost = job ? portion(job.locked, op) : op.amount;
        const sig = await payer.sign(settlementBytes(NETWORK, id, host.publicKey, cost));
        return [host, { kind: 'JobSettle', job_id: id, payer: payer.publicKey, cost, payer_sig: sig }];
      }
      case 'JobExpire': {
        const id = this.#job(op);
        return [this.#party(this.state.job(id)?.payer, op), { kind: 'JobExpire', job_id: id }];
      }
      case 'JobAccept': {
        const id = this.#job(op);
        const job = this.state.job(id);
        // The named host when `flag` says so, else whoever `from` is (the payer or another host, sometimes).
        return [job?.host && op.flag ? this.#party(job.host, op) : from, { kind: 'JobAccept', job_id: id }];
      }
      case 'ChannelOpen':
        return [from, { kind: 'ChannelOpen', host: other.publicKey, capacity: op.amount, expiry_height: Math.max(0, this.height + op.pick - 5) }];
      case 'ChannelClose': {
        const id = this.#channel(op);
        const channel = this.state.channel(id);
        const host = this.#party(channel?.host, op);
        const payer = (channel && BY_ID.get(toHex(channel.payer))) ?? other;
        const cumulative = channel ? portion(channel.capacity, op) : op.amount;
        const sig = await payer.sign(channelReceiptBytes(NETWORK, id, host.publicKey, cumulative));
        return [host, { kind: 'ChannelClose', channel_id: id, payer: payer.publicKey, cumulative, payer_sig: sig }];
      }
      case 'ChannelExpire': {
        const id = this.#channel(op);
        return [this.#party(this.state.channel(id)?.payer, op), { kind: 'ChannelExpire', channel_id: id }];
      }
      case 'NameClaim':
        return [from, { kind: 'NameClaim', name: op.pick % 8 === 0 ? 'Bad_Name' : NAMES[op.small % NAMES.length]! }];
      case 'HostBond':
        return [from, { kind: 'HostBond', amount: op.amount }];
      case 'HostUnbond':
        return [from, { kind: 'HostUnbond', amount: op.amount }];
    }
  }

  /** Applies one planned block at the next height; returns the transactions that were accepted. */
  async block(plan: BlockPlan, onRefused: (code: string) => void): Promise<Tx[]> {
    this.height += plan.gap;
    const ctx: ApplyContext = { network: NETWORK, height: this.height, producer: KEYS[plan.producer]!.publicKey, nameBlocks: NAME_BLOCKS };
    const accepted: Tx[] = [];
    const attempt = (tx: Tx): void => {
      const root = toHex(this.state.stateRoot());
      const open = tx.body.kind !== 'UptimeReward' && 'job_id' in tx.body ? this.state.job(tx.body.job_id) !== undefined : false;
      try {
        applyTx(this.state, tx, ctx);
        this.#checkBidRules(tx, null, open);
        accepted.push(tx);
        if (tx.body.kind === 'JobBid') this.jobs.push(tx.id);
        if (tx.body.kind === 'ChannelOpen') this.channels.push(tx.id);
      } catch (error) {
        if (!(error instanceof LedgerRuleError)) throw error;
        onRefused(error.code);
        assert.equal(toHex(this.state.stateRoot()), root, `refused ${tx.body.kind} (${error.code}) changed the state`);
        if (error.code !== 'nonce-used' && error.code !== 'nonce-gap') this.#checkBidRules(tx, error.code, open);
      }
    };
    attempt(await rewardTx(this.state, KEYS[plan.producer]!, this.height));
    for (const op of plan.ops) {
      const [key, fields] = await this.plan(op);
      attempt(await sign(key, fields, this.state.account(key.publicKey).nonce + 1 + op.nonceSkew));
    }
    return accepted;
  }
}

function reapply(state: LedgerState, txs: readonly Tx[], height: number): void {
  const ctx: ApplyContext = { network: NETWORK, height, producer: txs[0]!.body.sender, nameBlocks: NAME_BLOCKS };
  for (const tx of txs) applyTx(state, tx, ctx);
}

test('ledger property: conservation, the /status invariant, the bid rules hosts rely on and exact undo hold after every block', async () => {
  const accepted = new Map<string, number>();
  const refused = new Map<string, number>();
  const count = (map: Map<string, number>, key: string): void => void map.set(key, (map.get(key) ?? 0) + 1);
  await fc.assert(
    fc.asyncProperty(fc.array(blockArb, { minLength: 1, maxLength: 8 }), async (plans) => {
      const world = new World();
      const undo: Change[][] = [];
      const roots: string[] = [toHex(world.state.stateRoot())];
      for (const plan of plans) {
        const mark = world.state.mark();
        const before = toHex(world.state.stateRoot());
        const txs = await world.block(plan, (code) => count(refused, code));
        for (const tx of txs) count(accepted, tx.body.kind);
        assertInvariants(world.state, world.height);
        const after = toHex(world.state.stateRoot());

        // Revert the block to its mark, then apply the same transactions again.
        world.state.revert(mark);
        assert.equal(toHex(world.state.stateRoot()), before, 'revert restores the parent root');
        reapply(world.state, txs, world.height);
        assert.equal(toHex(world.state.stateRoot()), after, 're-applying gives the identical root');
        undo.push(world.state.changesSince(mark));
        roots.push(after);
      }
      // Reorganise away from every block and back, through the undo records alone.
      for (let i = undo.length - 1; i >= 0; i--) {
        world.state.applyChanges(undo[i]!, 'undo');
        assert.equal(toHex(world.state.stateRoot()), roots[i]);
      }
      assert.equal(toHex(world.state.stateRoot()), toHex(EMPTY_ROOT));
      for (let i = 0; i < undo.length; i++) world.state.applyChanges(undo[i]!, 'redo');
      assert.equal(toHex(world.state.stateRoot()), roots[roots.length - 1]);
      assertInvariants(world.state, world.height);
    }),
    RUNS,
  );
  // The generator must reach every kind on the accepting side and many rules on the refusing
  // side, or the property proves little.
  assert.sameMembers([...accepted.keys()], ['UptimeReward', ...OP_KINDS], `accepted: ${[...accepted]}`);
  assert.isAtLeast(refused.size, 15, `refused: ${[...refused]}`);
});
