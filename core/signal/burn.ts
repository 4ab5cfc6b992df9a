/**
 * Which confirmed transactions burn whose credits: what a signal's burn proof may name.
 *
 * These are exactly the burns core/ledger/apply.ts performs when it applies the transaction, with
 * the account whose balance pays them. A transaction in a main-chain block was applied, so its burn
 * happened. SlashEquivocation also destroys credits, but as a penalty whose size depends on the
 * offender's bond at that block, not on the transaction: it backs no signal.
 */
import { burnOf, HEARTBEAT_INTERVAL_SECS, NAME_COST } from '../ledger/params.ts';
import type { Tx, TxOf } from '../ledger/tx.ts';

/** Who paid a transaction's burn and how much was destroyed. */
export interface Burn {
  readonly burner: Uint8Array;
  readonly burned: bigint;
}

/**
 * The burn of a confirmed transaction, or null when it burns nothing:
 * NameClaim → its sender burns NAME_COST; JobSettle → the payer burns burnOf(cost);
 * Heartbeat → the cell (the job's payer) burns burnOf(amount); ChannelClose → the payer burns
 * burnOf(cumulative). A burn that rounds down to 0 is no burn. Every other kind gives null.
 *
 * A Heartbeat carries no amount: it pays its job's rate, fixed by the job's bid (`heartbeatRate`).
 * Pass that rate as `jobRate` to name a Heartbeat's burn; without it a Heartbeat gives null.
 */
export function burnOfTx(tx: Tx, jobRate?: bigint): Burn | null {
  const b = tx.body;
  let burn: Burn | null;
  switch (b.kind) {
    case 'NameClaim':
      burn = { burner: b.sender, burned: NAME_COST };
      break;
    case 'JobSettle':
      burn = { burner: b.payer, burned: burnOf(b.cost) };
      break;
    case 'Heartbeat':
      burn = jobRate === undefined ? null : { burner: b.cell, burned: burnOf(jobRate) };
      break;
    case 'ChannelClose':
      burn = { burner: b.payer, burned: burnOf(b.cumulative) };
      break;
    default:
      burn = null;
  }
  return burn !== null && burn.burned > 0n ? burn : null;
}

/**
 * What each Heartbeat of a job pays: bid / max(1, ⌊duration_secs / 30⌋), integer division — the
 * rate core/ledger/apply.ts fixes when it applies the JobBid and never changes afterwards.
 */
export function heartbeatRate(bid: TxOf<'JobBid'>): bigint {
  const intervals = BigInt(Math.max(1, Math.floor(bid.duration_secs / HEARTBEAT_INTERVAL_SECS)));
  return bid.bid / intervals;
}
