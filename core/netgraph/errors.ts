/**
 * Why a network coordinate or an RTT observation was refused (docs/netgraph.md "Refusals").
 * A coordinate comes from a peer, so the coordinate codes carry gossip's 'reject': a coordinate
 * that is not finite, of the wrong dimension or out of range is invalid whoever relays it. An RTT
 * is this node's own measurement and a configuration is its own choice: no verdict.
 */
import { type ErrorTable, RuledError } from '../errors.ts';

const INVALID = { verdict: 'reject' } as const;

export const COORDINATE_ERRORS = {
  /** An RTT that is not a number in (0, 10 s]: a clock glitch, a timeout taken for a reply. */
  'bad-rtt': {},
  /** Not a coordinate's shape: not an object, a field missing or not a number, vec not an array. */
  malformed: INVALID,
  /** vec has another number of dimensions than this node's coordinates. */
  'wrong-dimension': INVALID,
  /** A component is NaN or ±Infinity. */
  'not-finite': INVALID,
  /** A negative height or error (both are never below 0; a negative error would outweigh every peer). */
  'out-of-range': INVALID,
  /** A configuration value outside what the algorithm works with. */
  'bad-config': {},
} as const satisfies ErrorTable;

export type CoordinateErrorCode = keyof typeof COORDINATE_ERRORS;

export class CoordinateError extends RuledError<typeof COORDINATE_ERRORS> {
  constructor(code: CoordinateErrorCode, message: string) {
    super(COORDINATE_ERRORS, code, message);
  }
}

// What POST /profiles answers for a measurement it refuses.
const BAD_BODY = { status: 400, problem: 'invalid-body' } as const;

/**
 * Why a node profile was refused (docs/fabric.md "Refusals"). A profile that does not decode, breaks
 * a bound or is not signed by its node is invalid whoever relays it: 'reject', and the peer that
 * sent it is penalised. One outside the time window or not newer than the one held may be honest
 * (a clock off, a copy gossiped twice): 'ignore'.
 */
export const PROFILE_ERRORS = {
  /** Not a profile's canonical encoding (a field's type or size, too many GPUs, bytes left over). */
  malformed: { verdict: 'reject', ...BAD_BODY },
  /** A figure outside its bounds (negative, not finite, above its maximum), a backend not of the spec, an empty name. */
  'out-of-range': { verdict: 'reject', ...BAD_BODY },
  /** The signature is not the node's over the profile. */
  'bad-signature': { verdict: 'reject', ...BAD_BODY },
  /** measured_at older than the profiles' lifetime (PROFILE_TTL_S). */
  stale: { verdict: 'ignore', ...BAD_BODY },
  /** measured_at further in the future than the clock skew allowed (PROFILE_MAX_SKEW_S). */
  future: { verdict: 'ignore', ...BAD_BODY },
  /** measured_at not after the profile already held for that node. */
  'not-newer': { verdict: 'ignore', status: 409, problem: 'profile-conflict' },
} as const satisfies ErrorTable;

export type ProfileErrorCode = keyof typeof PROFILE_ERRORS;

export class ProfileError extends RuledError<typeof PROFILE_ERRORS> {
  constructor(code: ProfileErrorCode, message: string) {
    super(PROFILE_ERRORS, code, message);
  }
}

export const LINK_SAMPLE_ERRORS = {
  /** a and b are not in order (a < b) or are the same node: a link has one form. */
  'bad-parties': INVALID,
  /** An RTT outside (0, 10 s], a jitter outside [0, 10 s], a loss outside [0, 1]. */
  'out-of-range': INVALID,
  /** measured_at too far ahead of the receiver's clock, or older than a sample is kept. */
  'bad-time': INVALID,
  /** One of the two signatures does not verify: a sample signed by one side only. */
  'bad-signature': INVALID,
  /** A countersigner is asked to sign a sample it is no party to (or that it would be `a` of). */
  'not-a-party': INVALID,
  /** The countersigner has no measurement of the link yet, or its own differs too much. */
  implausible: {},
} as const satisfies ErrorTable;

export type LinkSampleErrorCode = keyof typeof LINK_SAMPLE_ERRORS;

/** Why a link sample was refused (docs/netgraph.md "Link samples"). */
export class LinkSampleError extends RuledError<typeof LINK_SAMPLE_ERRORS> {
  constructor(code: LinkSampleErrorCode, message: string) {
    super(LINK_SAMPLE_ERRORS, code, message);
  }
}
