/**
 * Equivocation evidence: two headers signed by one producer at one height, as the chain reports it
 * and as it travels on the mesh-evidence topic (docs/network.md). What makes evidence valid is what
 * makes a SlashEquivocation apply (docs/ledger.md "Slashing"); what makes it worth relaying is that
 * it could still take a bond: not too old, not punished yet, and a producer with a locked bond.
 */
import { type Ed25519Backend, verifyBatch } from '../crypto/ed25519.ts';
import { bytesEqual, compareBytes } from '../encoding/bytes.ts';
import { decode, encode, type Infer, struct } from '../encoding/codec.ts';
import { type ErrorTable, RuledError } from '../errors.ts';
import { blockSigningBytes, headerCodec, type SignedHeader, signedHeaderCodec } from '../ledger/header.ts';
import { EVIDENCE_MAX_AGE_BLOCKS } from '../ledger/params.ts';
import { type LedgerState, lockedBond } from '../ledger/state.ts';

/** The wire form: the two signed headers, the one whose encoding sorts first first. */
export const evidenceCodec = struct({ a: signedHeaderCodec, b: signedHeaderCodec }, 'equivocation evidence');
export type Evidence = Infer<typeof evidenceCodec>;

const INVALID = { verdict: 'reject' } as const;
const NOT_NEEDED = { verdict: 'ignore' } as const;

/**
 * Why evidence is refused. Evidence that proves nothing is its relay's fault (every node checks it
 * before forwarding); evidence that is true but of no use here (too old, already punished, against
 * a key with nothing to take) is dropped without blame.
 */
export const EVIDENCE_ERRORS = {
  'producers-differ': INVALID,
  'heights-differ': INVALID,
  'same-block': INVALID,
  'bad-signature': INVALID,
  'too-old': NOT_NEEDED,
  'too-far-ahead': NOT_NEEDED,
  'already-slashed': NOT_NEEDED,
  'no-bond': NOT_NEEDED,
  known: NOT_NEEDED,
} as const satisfies ErrorTable;

export type EvidenceErrorCode = keyof typeof EVIDENCE_ERRORS;

export class EvidenceError extends RuledError<typeof EVIDENCE_ERRORS> {
  constructor(code: EvidenceErrorCode, message: string) {
    super(EVIDENCE_ERRORS, code, message);
  }
}

/** The evidence of two signed headers, in the wire's order. */
export function evidenceOf(x: SignedHeader, y: SignedHeader): Evidence {
  return compareBytes(encode(headerCodec, x.header), encode(headerCodec, y.header)) <= 0 ? { a: x, b: y } : { a: y, b: x };
}

export function encodeEvidence(evidence: Evidence): Uint8Array {
  return encode(evidenceCodec, evidence);
}

/** Decodes evidence from the wire; DecodeError (gossip rejects it) when it does not decode. */
export function decodeEvidence(bytes: Uint8Array): Evidence {
  return decode(evidenceCodec, bytes);
}

/** One producer, one height, two different headers: EvidenceError otherwise. Signatures aside. */
export function checkEvidenceShape(evidence: Evidence): void {
  const x = evidence.a.header;
  const y = evidence.b.header;
  if (!bytesEqual(x.producer, y.producer)) throw new EvidenceError('producers-differ', 'the two headers have different producers');
  if (x.height !== y.height) throw new EvidenceError('heights-differ', 'the two headers are at different heights');
  if (bytesEqual(encode(headerCodec, x), encode(headerCodec, y))) throw new EvidenceError('same-block', 'the two headers are the same block');
}

/** Both headers signed by their producer on `network`: EvidenceError 'bad-signature' otherwise. */
export async function checkEvidenceSignatures(evidence: Evidence, network: string, ed25519?: Ed25519Backend): Promise<void> {
  const verdicts = await verifyBatch(
    [evidence.a, evidence.b].map((h) => ({ publicKey: h.header.producer, message: blockSigningBytes(network, h.header), signature: h.signature })),
    ed25519,
  );
  if (!verdicts.every(Boolean)) throw new EvidenceError('bad-signature', 'a header of the evidence is not signed by its producer');
}

/**
 * Whether the evidence could still take a bond on the chain whose tip state is `state` at
 * `tipHeight`: EvidenceError 'too-old', 'too-far-ahead', 'already-slashed' or 'no-bond' otherwise.
 * Evidence above the tip is kept (this node may be behind), up to the evidence age ahead.
 */
export function checkEvidenceUseful(evidence: Evidence, state: LedgerState, tipHeight: number): void {
  const { producer, height } = evidence.a.header;
  // The next block's height is what the ledger judges the age by.
  if (tipHeight + 1 - height > EVIDENCE_MAX_AGE_BLOCKS)
    throw new EvidenceError('too-old', `evidence at height ${height} is older than ${EVIDENCE_MAX_AGE_BLOCKS} blocks`);
  if (height - tipHeight > EVIDENCE_MAX_AGE_BLOCKS)
    throw new EvidenceError('too-far-ahead', `evidence at height ${height} is far above this node's tip ${tipHeight}`);
  if (state.slashed(producer, height) !== undefined) throw new EvidenceError('already-slashed', 'this equivocation was already punished');
  if (lockedBond(state.account(producer), tipHeight + 1) === 0n) throw new EvidenceError('no-bond', 'the producer has no locked bond to take');
}
