/**
 * Why a name could not be claimed or resolved, each code with the HTTP status and problem the API
 * answers it with (docs/names.md). A claim's other refusals are the ledger's (LEDGER_RULES: 402
 * for a free balance below the price).
 */
import { type ErrorTable, RuledError } from '../errors.ts';

export const NAME_ERRORS = {
  /** Another node holds the name, and its claim has not lapsed. */
  taken: { status: 409, problem: 'name-taken' },
  /** No live claim of the name on the chain this node holds (never claimed, or lapsed). */
  unknown: { status: 404, problem: 'unknown-name' },
} as const satisfies ErrorTable;

export type NameErrorCode = keyof typeof NAME_ERRORS;

export class NameError extends RuledError<typeof NAME_ERRORS> {
  constructor(code: NameErrorCode, message: string) {
    super(NAME_ERRORS, code, message);
  }
}
