/**
 * The ledger's constants (node-api.md §2 "Ledger constants", DESIGN.md §4) and the parameters that
 * tell one chain from another. Everything that decides validity is here, so two nodes built from
 * the same code agree on it.
 */
import { CREDIT } from '../encoding/amount.ts';

/** Credits that will ever exist. */
export const SUPPLY_CAP: bigint = 21_000_000_000n * CREDIT;
/** The UptimeReward of the first era. */
export const INITIAL_EMISSION: bigint = 1_000n * CREDIT;
/** Blocks per emission era; the reward halves at each era boundary. */
export const HALVING_BLOCKS = 210_000;
/** Blocks after which an unsettled bid a host accepted may be expired by its payer. */
export const EXPIRY_BLOCKS = 1_440;
/**
 * Blocks after which a bid no host accepted (JobAccept, or a heartbeat) may be expired: a host runs
 * a job only once its acceptance is in a block, so no host works for a bid released this early.
 */
export const UNACCEPTED_EXPIRY_BLOCKS = 10;
/** Transactions per block; a larger block is rejected before any signature check. */
export const MAX_TXS_PER_BLOCK = 1_024;
/** Settlement, heartbeat and channel-close burn, in basis points (1.00 %). */
export const SETTLEMENT_BURN_BPS = 100n;
/** Seconds a heartbeat pays for. */
export const HEARTBEAT_INTERVAL_SECS = 30;
/** Price of a name claim or renewal, burned. */
export const NAME_COST: bigint = 1_000n * CREDIT;
/** Blocks a name claim lasts; its holder may renew before it lapses. */
export const NAME_BLOCKS = 210_000;
/** Longest name, in characters of a-z, 0-9 and hyphen. */
export const NAME_MAX_LENGTH = 32;
/**
 * Blocks an unbonded amount stays locked (and slashable) before it is free: a producer cannot
 * withdraw its bond faster than evidence of its equivocation can reach the chain.
 */
export const UNBOND_DELAY_BLOCKS = 2_880;
/** Equivocation evidence older than this many blocks is refused (it equals the unbonding delay). */
export const EVIDENCE_MAX_AGE_BLOCKS = UNBOND_DELAY_BLOCKS;
/** Blocks a light node keeps. */
export const LIGHT_RETENTION_BLOCKS = 2_880;
/** The history read model's window (about 30 days). */
export const HISTORY_WINDOW_BLOCKS = 259_200;
/** Producers ranked per block by weight; anyone unranked produces after all of them. */
export const MAX_RANKED_PRODUCERS = 64;

/** What makes one chain distinct from another: its name (signed into every transaction) and timing. */
export interface ChainParams {
  /** Signed into every transaction and block, so nothing signed for one network is valid on another. */
  readonly network: string;
  /** Target time between blocks. */
  readonly blockIntervalMs: number;
  /** The genesis block's timestamp, fixed by the code. */
  readonly genesisTimestampMs: number;
  /**
   * How far a block's timestamp may be ahead of the receiving node's clock: half an interval on
   * every network. It must stay below one interval, or a producer ranked lower (or without weight)
   * could sign its later slot ahead of time and be seen before the first-ranked producer's block
   * (docs/ledger.md "Block production").
   */
  readonly maxClockDriftMs: number;
  /** Blocks a name claim lasts: NAME_BLOCKS, except on a devnet made for testing expiry. */
  readonly nameBlocks: number;
}

/** The main network: 10-second blocks. */
export const MAINNET: ChainParams = Object.freeze({
  network: 'mesh',
  blockIntervalMs: 10_000,
  genesisTimestampMs: Date.UTC(2026, 0, 1),
  maxClockDriftMs: 5_000,
  nameBlocks: NAME_BLOCKS,
});

/**
 * A separate chain for local use; hosts may shorten its interval, and tests the life of a name
 * claim (every node of one devnet must use the same values: blocks are judged by them).
 */
export function devnet(blockIntervalMs = 1_000, options: { nameBlocks?: number } = {}): ChainParams {
  if (!Number.isSafeInteger(blockIntervalMs) || blockIntervalMs < 10 || blockIntervalMs > 3_600_000) {
    throw new RangeError(`devnet block interval must be an integer from 10 ms to one hour, got ${blockIntervalMs}`);
  }
  const nameBlocks = options.nameBlocks ?? NAME_BLOCKS;
  if (!Number.isSafeInteger(nameBlocks) || nameBlocks < 1 || nameBlocks > NAME_BLOCKS) {
    throw new RangeError(`devnet name claims must last 1 to ${NAME_BLOCKS} blocks, got ${nameBlocks}`);
  }
  return Object.freeze({
    network: 'mesh-devnet',
    blockIntervalMs,
    genesisTimestampMs: Date.UTC(2026, 0, 1),
    maxClockDriftMs: Math.floor(blockIntervalMs / 2),
    nameBlocks,
  });
}

/** The UptimeReward due at `height`, never taking the total emitted past SUPPLY_CAP. */
export function emissionAt(height: number, emittedBefore: bigint): bigint {
  if (height < 1) return 0n;
  const era = Math.floor((height - 1) / HALVING_BLOCKS);
  const reward = era >= 128 ? 0n : INITIAL_EMISSION >> BigInt(era);
  const room = SUPPLY_CAP - emittedBefore;
  return reward < room ? reward : room > 0n ? room : 0n;
}

/** The burn on a settlement, heartbeat or channel close: amount × BPS / 10,000, rounded down. */
export function burnOf(amount: bigint): bigint {
  return (amount * SETTLEMENT_BURN_BPS) / 10_000n;
}
