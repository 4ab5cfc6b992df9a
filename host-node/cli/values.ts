/**
 * Parsers for option and argument values. Each refuses with a UsageError that names the option
 * and quotes what was given. Runtime-neutral, like the command definitions.
 */
import { parseCredits } from '../../core/encoding/amount.ts';
import { fromHex, isId } from '../../core/encoding/hex.ts';
import { isName, NAME_RULE } from '../../core/names/names.ts';
import { type Parser, UsageError } from './command.ts';

const DIGITS = /^[0-9]+$/;

/** A TCP port, 0 (a free one) to `max`. */
export function port(max = 65_535): Parser<number> {
  return (text, name) => {
    if (!DIGITS.test(text) || Number(text) > max) throw new UsageError(`${name} must be a port number 0–${max}, got ${JSON.stringify(text)}`);
    return Number(text);
  };
}

/** An integer in decimal digits, from `min` to `max` (no upper bound when omitted). */
export function integer(min: number, max?: number): Parser<number> {
  return (text, name) => {
    const n = Number(text);
    if (!DIGITS.test(text) || n < min || (max !== undefined && n > max) || !Number.isSafeInteger(n)) {
      const range = max === undefined ? `of at least ${min}` : `from ${min} to ${max}`;
      throw new UsageError(`${name} takes an integer ${range}, got ${JSON.stringify(text)}`);
    }
    return n;
  };
}

/** A number in decimal digits with an optional fraction, from `min` to `max`. */
export function decimal(min: number, max: number): Parser<number> {
  return (text, name) => {
    const n = /^[0-9]+(\.[0-9]+)?$/.test(text) ? Number(text) : NaN;
    if (!(n >= min && n <= max)) throw new UsageError(`${name} takes a number from ${min} to ${max}, got ${JSON.stringify(text)}`);
    return n;
  };
}

/** One of `choices`, spelt exactly. */
export function oneOf<const T extends string>(choices: readonly T[]): Parser<T> {
  return (text, name) => {
    const found = choices.find((c) => c === text);
    if (found === undefined) throw new UsageError(`${name} takes one of ${choices.join(', ')}, got ${JSON.stringify(text)}`);
    return found;
  };
}

/** An id of 64 lowercase hex characters (a node, a job, a channel), as given: the one spelling the node accepts. */
export function hexId(what: string): Parser<string> {
  return (text, name) => {
    if (!isId(text)) throw new UsageError(`${name} must be ${what}, 64 lowercase hex characters, got ${JSON.stringify(text)}`);
    return text;
  };
}

/** A NodeId as given. */
export const nodeIdText: Parser<string> = hexId('a node id');

/** A NodeId, decoded. */
export const nodeId: Parser<Uint8Array> = (text, name) => fromHex(nodeIdText(text, name), 32, name);

/** A node id or a name, as given: where a transfer or a message goes (the node resolves a name on its chain). */
export const recipient: Parser<string> = (text, name) => {
  if (isName(text) || isId(text)) return text;
  throw new UsageError(`${name} must be a node id (64 lowercase hex characters) or a name (${NAME_RULE}), got ${JSON.stringify(text)}`);
};

/** An amount in credits as a decimal (`1.5`), as base units; above zero. */
export const credits: Parser<bigint> = (text, name) => {
  let amount: bigint;
  try {
    amount = parseCredits(text, name);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (amount === 0n) throw new UsageError(`${name} must be more than 0`);
  return amount;
};
