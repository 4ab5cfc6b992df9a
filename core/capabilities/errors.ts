/**
 * Why a capability token is refused (`CapabilityError`), and why this node refuses to revoke a
 * capability or change its admin trust (`GrantError`). Each code's row gives what the API answers
 * where it answers one (docs/capabilities.md, docs/node-api.md); a token refused at a target host
 * reaches the caller with its code as the reason of the host's refusal.
 */
import { type ErrorRule, RuledError } from '../errors.ts';

// Known without any host's context (the format's own bounds): the API answers them as a bad grant.
const BAD_GRANT = { status: 400, problem: 'bad-grant' } as const;
// Judged by the target host: the caller's node answers them as the host's refusal (502), the code as its rule.
const HOST_REFUSED = { status: 502, problem: 'peer-refused' } as const;

export const CAPABILITY_ERRORS = {
  /** The text or bytes are not a canonical token: wrong prefix, bad base64url, non-canonical bytes, no link, a link valid never. */
  malformed: BAD_GRANT,
  /** More links than MAX_LINKS. */
  'too-deep': BAD_GRANT,
  /** The first link's issuer is neither the enforcing host nor one of its configured roots. */
  untrusted: HOST_REFUSED,
  /** A link's audience is not the next link's issuer. */
  misaligned: HOST_REFUSED,
  /** A link's signature does not verify under its issuer's key. */
  'bad-signature': HOST_REFUSED,
  /** A link allows more than its parent: a command, a bound, an image entry or a host the parent does not give. */
  widened: HOST_REFUSED,
  /** The chain's window has not begun (beyond the clock skew). */
  'not-yet-valid': HOST_REFUSED,
  /** The chain's window has ended (beyond the clock skew). */
  expired: HOST_REFUSED,
  /** The peer presenting the token is not its last audience. */
  'not-presenter': HOST_REFUSED,
  /** A link of the chain was revoked on chain by its issuer. */
  revoked: HOST_REFUSED,
  /** The token is valid but does not allow this use (command, bound, image or host). */
  'not-allowed': HOST_REFUSED,
} as const satisfies Readonly<Record<string, ErrorRule>>;

export type CapabilityErrorCode = keyof typeof CAPABILITY_ERRORS;

/** A capability token refused; `code` says why (a host's refusal carries it as its reason), `message` says where. */
export class CapabilityError extends RuledError<typeof CAPABILITY_ERRORS> {
  constructor(code: CapabilityErrorCode, message: string) {
    super(CAPABILITY_ERRORS, code, message);
  }
}

export const GRANT_ERRORS = {
  /** No link of the token was issued (and validly signed) by this node, or the one named was not. */
  'not-issuer': { status: 400, problem: 'invalid-body' },
  /** This node issued several links of the token: `link` must say which to revoke. */
  'link-required': { status: 400, problem: 'invalid-body' },
  /** The chain already records this node's revocation of that link. */
  'already-revoked': { status: 409, problem: 'already-revoked' },
  /** A node cannot be its own admin. */
  'trust-self': { status: 400, problem: 'invalid-body' },
  /** The chain already records that trust as asked (granted, or not granted). */
  'trust-unchanged': { status: 409, problem: 'trust-unchanged' },
} as const satisfies Readonly<Record<string, ErrorRule>>;

export type GrantErrorCode = keyof typeof GRANT_ERRORS;

/** This node will not submit the revocation or trust change asked for; `code` says why. */
export class GrantError extends RuledError<typeof GRANT_ERRORS> {
  constructor(code: GrantErrorCode, message: string) {
    super(GRANT_ERRORS, code, message);
  }
}
