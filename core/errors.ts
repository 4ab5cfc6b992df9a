/**
 * Named errors of the core. Each class is one condition, checked by `instanceof` or `.name`;
 * `code` is a stable machine-readable detail (which part of the input was wrong), `message` says
 * the same for people. Decoders throw these and nothing else: never a bare TypeError or a
 * partially decoded value.
 */
/** What an error says, for a log line or a wrapping error's message. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class MeshError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/**
 * How one code of an error class is answered, where it applies: `verdict` is what gossip
 * validation makes of a message that failed with it ('reject' penalises the relaying peer: the
 * message itself is invalid; 'ignore' drops it without blame: it may be valid, or valid later, but
 * this node cannot or need not take it), `status` and `problem` what the node's HTTP API answers
 * (the status, and the problem code, `/problems/<code>`, whose catalog holds that status).
 */
export interface ErrorRule {
  readonly verdict?: 'ignore' | 'reject';
  readonly status?: number;
  readonly problem?: string;
}

/**
 * An error whose class lists every code it carries in a table of ErrorRules, so what gossip and the
 * API make of it is read from the table, never chosen by comparing strings.
 *
 * @example
 * export const POOL_ERRORS = { full: { verdict: 'ignore', status: 503, problem: 'pool-full' } } as const satisfies ErrorTable;
 * export class PoolError extends RuledError<typeof POOL_ERRORS> {
 *   constructor(code: keyof typeof POOL_ERRORS, message: string) { super(POOL_ERRORS, code, message); }
 * }
 */
export type ErrorTable = Readonly<Record<string, ErrorRule>>;

// The values one field takes across a table's rows (undefined for rows without it).
type FieldOf<Row, K extends keyof ErrorRule> = Row extends { readonly [P in K]: infer V } ? V : undefined;

export class RuledError<T extends ErrorTable> extends MeshError {
  declare readonly code: keyof T & string;
  readonly verdict: FieldOf<T[keyof T], 'verdict'>;
  readonly status: FieldOf<T[keyof T], 'status'>;
  readonly problem: FieldOf<T[keyof T], 'problem'>;

  constructor(table: T, code: keyof T & string, message: string) {
    super(code, message);
    const rule = table[code] as ErrorRule;
    this.verdict = rule.verdict as FieldOf<T[keyof T], 'verdict'>;
    this.status = rule.status as FieldOf<T[keyof T], 'status'>;
    this.problem = rule.problem as FieldOf<T[keyof T], 'problem'>;
  }
}

const MALFORMED = { verdict: 'reject' } as const;

/**
 * Bytes or text that do not decode. Every code of every decode error gets the same answer: a
 * message that does not decode is invalid whoever relays it, so gossip rejects it.
 */
export class DecodeError extends RuledError<Readonly<Record<string, typeof MALFORMED>>> {}

/** A decode error class over `codes`, each of them in its table with the verdict 'reject'. */
function decodeErrorOf<const C extends string>(codes: readonly C[]): new (code: C, message: string) => DecodeError & { readonly code: C } {
  const table = Object.fromEntries(codes.map((code) => [code, MALFORMED])) as Record<C, typeof MALFORMED>;
  return class extends DecodeError {
    declare readonly code: C;

    constructor(code: C, message: string) {
      super(table, code, message);
    }
  };
}

/** A string that should hold hex does not (odd length, wrong case, stray character, wrong size). */
export class InvalidHexError extends decodeErrorOf(['odd-length', 'bad-character', 'wrong-length']) {}

/** A credit amount is not a canonical non-negative integer within its bounds. */
export class InvalidAmountError extends decodeErrorOf([
  'empty',
  'exponent',
  'fraction',
  'fraction-digits',
  'leading-zero',
  'negative-zero',
  'not-decimal',
  'not-integer',
  'out-of-range',
  'sign',
  'unsafe-integer',
]) {}

/** Every code an InvalidEncodingError carries. */
export const ENCODING_CODES = [
  'bad-bool',
  'bad-option-tag',
  'bad-utf8',
  'bad-variant-tag',
  'missing-field',
  'negative-zero',
  'not-finite',
  'not-sorted',
  'out-of-range',
  'too-long',
  'trailing-bytes',
  'truncated',
  'unknown-field',
  'wrong-length',
] as const;

/** Bytes that should hold a canonical binary encoding do not (truncated, trailing, non-canonical). */
export class InvalidEncodingError extends decodeErrorOf(ENCODING_CODES) {}

/** An Ed25519 public key is malformed or excluded by the chain's validity rule. */
export class InvalidKeyError extends decodeErrorOf(['length', 'non-canonical', 'not-on-curve', 'seed-length', 'small-order']) {}

/** An Ed25519 signature is malformed, excluded by the validity rule, or does not verify. */
export class InvalidSignatureError extends decodeErrorOf(['length', 'r-non-canonical', 'r-small-order', 's-non-canonical']) {}

/** Every code a WrongTypeError carries. */
export const TYPE_CODES = ['not-array', 'not-bigint', 'not-boolean', 'not-bytes', 'not-number', 'not-object', 'not-string', 'not-string-or-number'] as const;

/** A value of the wrong JavaScript type was passed where bytes, a string or a bigint belongs. */
export class WrongTypeError extends decodeErrorOf(TYPE_CODES) {}
