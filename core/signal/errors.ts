/**
 * Why a signal was refused, and what gossip should make of it.
 *
 * `verdict` follows gossipsub's validation results: 'reject' when the signal itself is invalid
 * (whoever relayed it misbehaved, and the peer's score should fall), 'ignore' when it may be
 * valid but this node cannot or need not take it (a stale nonce, a burn in a block this node does
 * not hold or holds on another branch, a burn already spent here): dropped without penalty.
 */
import { MeshError } from '../errors.ts';

/** Every code a SignalError carries, with its gossip verdict. */
export const SIGNAL_VERDICTS = {
  /** The bytes are not a canonical v1 signal (wrong size, bad field, unknown version). */
  'bad-encoding': 'reject',
  /** The sender's signature does not verify (or its key is not a valid Ed25519 key). */
  'bad-signature': 'reject',
  /** The nonce is not above the last one accepted from this sender (a replay or a reordering). */
  'stale-nonce': 'ignore',
  /** A non-empty payload without a burn proof. */
  'burn-proof-required': 'reject',
  /** This node holds no main-chain block at the proof's height, or cannot locate the transaction. */
  'burn-not-found': 'ignore',
  /** This node's main-chain block at the proof's height has another hash: the proof may be on a fork. */
  'burn-fork': 'ignore',
  /** The proof's block is the one this node holds, and it does not contain the transaction. */
  'burn-not-in-block': 'reject',
  /** The named transaction burns nothing. */
  'not-a-burn': 'reject',
  /** The transaction's burn was paid by someone other than the signal's sender. */
  'burn-not-sender': 'reject',
  /** The proof's amount is not what the transaction burned. */
  'burn-mismatch': 'reject',
  /** This node already accepted a signal backed by the same burn. */
  'burn-used': 'ignore',
} as const;

export type SignalErrorCode = keyof typeof SIGNAL_VERDICTS;
export type SignalVerdict = 'reject' | 'ignore';

/** A signal is malformed or breaks a rule of docs/signals.md; `code` names the rule. */
export class SignalError extends MeshError {
  declare readonly code: SignalErrorCode;
  /** What gossip validation should answer: 'reject' penalises the relaying peer, 'ignore' does not. */
  readonly verdict: SignalVerdict;

  constructor(code: SignalErrorCode, message: string) {
    super(code, message);
    this.verdict = SIGNAL_VERDICTS[code];
  }
}
