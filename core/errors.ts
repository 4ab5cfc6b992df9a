/**
 * Named errors of the core. Each class is one condition, checked by `instanceof` or `.name`;
 * `code` is a stable machine-readable detail (which part of the input was wrong), `message` says
 * the same for people. Decoders throw these and nothing else: never a bare TypeError or a
 * partially decoded value.
 */
export class MeshError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A string that should hold hex does not (odd length, wrong case, stray character, wrong size). */
export class InvalidHexError extends MeshError {}

/** A credit amount is not a canonical non-negative integer within its bounds. */
export class InvalidAmountError extends MeshError {}

/** Bytes that should hold a canonical binary encoding do not (truncated, trailing, non-canonical). */
export class InvalidEncodingError extends MeshError {}

/** An Ed25519 public key is malformed or excluded by the chain's validity rule. */
export class InvalidKeyError extends MeshError {}

/** An Ed25519 signature is malformed, excluded by the validity rule, or does not verify. */
export class InvalidSignatureError extends MeshError {}

/** A value of the wrong JavaScript type was passed where bytes, a string or a bigint belongs. */
export class WrongTypeError extends MeshError {}
