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
