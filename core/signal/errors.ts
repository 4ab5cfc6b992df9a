/**
 * Why a signal was refused, and what gossip should make of it.
 *
 * `verdict` follows gossipsub's validation results: 'reject' when the signal itself is invalid
 * (whoever relayed it misbehaved, and the peer's score should fall), 'ignore' when it may be
 * valid but this node cannot or need not take it (a stale nonce, a burn in a block this node does
 * not hold or holds on another branch, a burn already spent here): dropped without penalty.
 */
import { type ErrorTable, RuledError } from '../errors.ts';

// What POST /signals/send answers for a refused signal: a conflict with an accepted one, or a refusal.
const REFUSED = { status: 400, problem: 'signal-refused' } as const;

/** Every code a SignalError carries, with its gossip verdict and the API's answer. */
export const SIGNAL_ERRORS = {
  /** The bytes are not a canonical v1 signal (wrong size, bad field, unknown version). */
  'bad-encoding': { verdict: 'reject', ...REFUSED },
  /** The sender's signature does not verify (or its key is not a valid Ed25519 key). */
  'bad-signature': { verdict: 'reject', ...REFUSED },
  /** The nonce is not above the last one accepted from this sender (a replay or a reordering). */
  'stale-nonce': { verdict: 'ignore', ...REFUSED },
  /** A non-empty payload without a burn proof. */
  'burn-proof-required': { verdict: 'reject', ...REFUSED },
  /** This node holds no main-chain block at the proof's height, or cannot locate the transaction. */
  'burn-not-found': { verdict: 'ignore', ...REFUSED },
  /** This node's main-chain block at the proof's height has another hash: the proof may be on a fork. */
  'burn-fork': { verdict: 'ignore', ...REFUSED },
  /** The proof's block is the one this node holds, and it does not contain the transaction. */
  'burn-not-in-block': { verdict: 'reject', ...REFUSED },
  /** The named transaction burns nothing. */
  'not-a-burn': { verdict: 'reject', ...REFUSED },
  /** The transaction's burn was paid by someone other than the signal's sender. */
  'burn-not-sender': { verdict: 'reject', ...REFUSED },
  /** The proof's amount is not what the transaction burned. */
  'burn-mismatch': { verdict: 'reject', ...REFUSED },
  /** This node already accepted a signal backed by the same burn. */
  'burn-used': { verdict: 'ignore', status: 409, problem: 'signal-conflict' },
} as const satisfies ErrorTable;

export type SignalErrorCode = keyof typeof SIGNAL_ERRORS;

/** A signal is malformed or breaks a rule of docs/signals.md; `code` names the rule. */
export class SignalError extends RuledError<typeof SIGNAL_ERRORS> {
  constructor(code: SignalErrorCode, message: string) {
    super(SIGNAL_ERRORS, code, message);
  }
}
