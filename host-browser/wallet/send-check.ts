/**
 * The send form's check, before anything is signed: the recipient is a NodeId or a name the chain
 * knows, the amount is credits above zero, and it fits the free balance.
 */
import { formatCredits, parseCredits } from '../../core/encoding/amount.ts';
import { fromHex, toHex } from '../../core/encoding/hex.ts';
import { isName } from '../../core/names/names.ts';

export type SendCheck =
  | { readonly ok: true; readonly to: Uint8Array; readonly amount: bigint }
  | { readonly ok: false; readonly field: 'to' | 'amount'; readonly message: string };

export interface SendContext {
  readonly self: Uint8Array;
  /** Free credits (base units) at the tip, less what pending sends already spend. */
  readonly free: bigint;
  /** The holder of a live name, or undefined when nobody holds it. */
  readonly resolveName: (name: string) => Uint8Array | undefined;
}

const ID = /^[0-9a-fA-F]{64}$/;

export function checkSend(toText: string, amountText: string, context: SendContext): SendCheck {
  const toInput = toText.trim();
  let to: Uint8Array;
  if (toInput === '') return { ok: false, field: 'to', message: 'Enter a NodeId (64 hex characters) or a name.' };
  if (ID.test(toInput)) to = fromHex(toInput.toLowerCase(), 32);
  else if (isName(toInput)) {
    const holder = context.resolveName(toInput);
    if (holder === undefined) return { ok: false, field: 'to', message: `No one holds the name "${toInput}" on the chain.` };
    to = holder;
  } else {
    return { ok: false, field: 'to', message: 'That is neither a NodeId (64 hex characters) nor a name (a-z, 0-9 and hyphen).' };
  }
  if (toHex(to) === toHex(context.self)) return { ok: false, field: 'to', message: "That is this wallet's own NodeId." };
  let amount: bigint;
  try {
    amount = parseCredits(amountText.trim(), 'the amount');
  } catch (error) {
    return { ok: false, field: 'amount', message: `Enter an amount in credits, like 1.5 (${error instanceof Error ? error.message : String(error)}).` };
  }
  if (amount === 0n) return { ok: false, field: 'amount', message: 'The amount must be more than 0.' };
  if (amount > context.free) {
    return { ok: false, field: 'amount', message: `That is more than the free balance of ${formatCredits(context.free)} credits.` };
  }
  return { ok: true, to, amount };
}
