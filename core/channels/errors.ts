/**
 * Why the channels feature refused a request, each code with the HTTP status and problem the API
 * answers it with (core/api/problem.ts holds the problem codes; docs/channels.md lists them).
 */
import { formatCredits } from '../encoding/amount.ts';
import { type ErrorTable, RuledError } from '../errors.ts';

const CONFLICT = { status: 409, problem: 'channel-conflict' } as const;
const BAD = { status: 400, problem: 'invalid-body' } as const;

export const CHANNEL_ERRORS = {
  /** No channel of that id on this node (for a receipt: none this node opened). */
  'unknown-channel': { status: 404, problem: 'unknown-channel' },
  /** The host named is this node, or not a valid node id (not a point on the curve). */
  'bad-host': BAD,
  /** The receipt names another host than the channel's. */
  'wrong-host': BAD,
  /** expiry_height is not above the next block's height. */
  'bad-expiry': BAD,
  /** A cumulative above the channel's capacity: the detail says by how many credits. */
  'exceeds-capacity': BAD,
  /** The payer's signature does not verify over the receipt bytes. */
  'bad-signature': { status: 400, problem: 'invalid-signature' },
  /** The payer signed a higher cumulative already: a receipt carries the running total, not an increment. */
  'below-signed': CONFLICT,
  /** This node is on the other side of the channel (closing as the payer, expiring as the host). */
  'wrong-role': CONFLICT,
  /** The channel on the chain is between two other nodes. */
  'not-host': CONFLICT,
  /** The ChannelOpen is not in a block yet: the host takes receipts once it is (the payer retries). */
  'not-on-chain': CONFLICT,
  /** A ChannelClose or ChannelExpire is pooled or mined already. */
  ended: CONFLICT,
  /** The chain is past the last height a close may be in (expiry_height). */
  'past-expiry': CONFLICT,
  /** The channel may not be expired yet: the detail says from which height. */
  'not-expired': CONFLICT,
  /** The host holds no receipt to close with. */
  'no-receipt': CONFLICT,
} as const satisfies ErrorTable;

export type ChannelErrorCode = keyof typeof CHANNEL_ERRORS;

export class ChannelError extends RuledError<typeof CHANNEL_ERRORS> {
  constructor(code: ChannelErrorCode, message: string) {
    super(CHANNEL_ERRORS, code, message);
  }
}

/** The refusal of a cumulative above the capacity, with the shortfall in credits. */
export function exceedsCapacity(cumulative: bigint, capacity: bigint): ChannelError {
  return new ChannelError(
    'exceeds-capacity',
    `cumulative ${formatCredits(cumulative)} credits is above the capacity of ${formatCredits(capacity)} credits by ${formatCredits(cumulative - capacity)} credits`,
  );
}
