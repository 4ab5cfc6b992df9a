/**
 * A channel's life as a state machine, one pure transition per role: `payerTransition` and
 * `hostTransition` give the next record and what to do once it is written. The caller applies the
 * record (`applyStep`), has it written, then performs the effects: a ChannelClose or ChannelExpire
 * is on record as `closing` before it is pooled.
 *
 * | status        | event (role)                        | next status        | effects             |
 * | ------------- | ----------------------------------- | ------------------ | ------------------- |
 * | opening       | open-mined                          | open               | (the payer's next block delivers) |
 * | open          | signed (payer; higher cumulative)   | open               | deliver             |
 * | opening       | signed (payer)                      | opening            |                     |
 * | open          | delivered (payer; host holds more)  | open               |                     |
 * | open          | receipt (host; higher cumulative)   | open               |                     |
 * | not final     | ending (this node's close/expire)   | closing            | pool                |
 * | closing       | ending-refused                      | as it was          |                     |
 * | closing       | end-dropped (left the pool unmined) | open               |                     |
 * | not final     | end-mined                           | closed or expired  |                     |
 * | not final     | on-chain (reconciled)               | open, or closing while its end is pooled |  |
 * | not final     | not-mined (reconciled)              | opening            |                     |
 *
 * closed and expired are final: no event moves a channel out of them or changes its receipt (the
 * payer may still hear what its host holds).
 */
import type { ChannelRecord, HostChannelRecord, PayerChannelRecord } from './book.ts';
import type { ChannelStatus } from './types.ts';

/** What the chain and this node's own transactions do to a channel, the same for both roles. */
export type ChannelFact =
  | { readonly kind: 'open-mined'; readonly height: number }
  | { readonly kind: 'end-mined'; readonly txId: string; readonly settled: { readonly cumulative: string; readonly burned: string } | null }
  | { readonly kind: 'ending'; readonly txId: string }
  | { readonly kind: 'ending-refused'; readonly status: ChannelStatus; readonly endTx: string | null }
  | { readonly kind: 'end-dropped' }
  | { readonly kind: 'on-chain'; readonly openHeight: number; readonly endPooled: boolean }
  | { readonly kind: 'not-mined' }
  | { readonly kind: 'mined-at'; readonly height: number };

export type PayerChannelEvent =
  | ChannelFact
  | { readonly kind: 'signed'; readonly cumulative: bigint; readonly payerSig: string }
  | { readonly kind: 'delivered'; readonly best: bigint };

export type HostChannelEvent = ChannelFact | { readonly kind: 'receipt'; readonly cumulative: bigint; readonly payerSig: string };

/** deliver: hand the highest receipt to the host; pool: the ending transaction goes into the pool. */
export type ChannelEffect = { readonly kind: 'deliver' } | { readonly kind: 'pool' };

export interface ChannelStep<R extends ChannelRecord> {
  readonly record: R;
  readonly effects: readonly ChannelEffect[];
}

function final(record: ChannelRecord): boolean {
  return record.status === 'closed' || record.status === 'expired';
}

function onFact<R extends ChannelRecord>(record: R, fact: ChannelFact): R {
  if (final(record)) return record;
  switch (fact.kind) {
    case 'open-mined':
      return record.status === 'opening' ? { ...record, status: 'open', openHeight: fact.height } : record;
    case 'end-mined':
      return { ...record, endTx: fact.txId, status: fact.settled === null ? 'expired' : 'closed', settled: fact.settled ?? record.settled };
    case 'ending':
      return { ...record, status: 'closing', endTx: fact.txId };
    case 'ending-refused':
      return record.status === 'closing' ? { ...record, status: fact.status, endTx: fact.endTx } : record;
    case 'end-dropped':
      return record.status === 'closing' ? { ...record, status: 'open', endTx: null } : record;
    case 'on-chain':
      return { ...record, openHeight: fact.openHeight, status: record.status === 'closing' && record.endTx !== null && fact.endPooled ? 'closing' : 'open' };
    case 'not-mined':
      return { ...record, status: 'opening' };
    case 'mined-at':
      return { ...record, openHeight: fact.height };
  }
}

/** A receipt is kept when it is the first, or pays more: a lower one never replaces a higher one. */
function higher(record: ChannelRecord, cumulative: bigint): boolean {
  return record.payerSig === null || cumulative > BigInt(record.cumulative);
}

export function payerTransition(record: PayerChannelRecord, event: PayerChannelEvent): ChannelStep<PayerChannelRecord> {
  switch (event.kind) {
    case 'signed': {
      if (final(record)) return { record, effects: [] };
      const next = higher(record, event.cumulative) ? { ...record, cumulative: event.cumulative.toString(), payerSig: event.payerSig } : record;
      // Before its ChannelOpen is in a block the host refuses it; it goes out once it is.
      return { record: next, effects: next.status === 'open' ? [{ kind: 'deliver' }] : [] };
    }
    case 'delivered':
      return { record: event.best > BigInt(record.delivered) ? { ...record, delivered: event.best.toString() } : record, effects: [] };
    default: {
      const next = onFact(record, event);
      return { record: next, effects: event.kind === 'ending' && next !== record ? [{ kind: 'pool' }] : [] };
    }
  }
}

export function hostTransition(record: HostChannelRecord, event: HostChannelEvent): ChannelStep<HostChannelRecord> {
  if (event.kind === 'receipt') {
    if (final(record) || !higher(record, event.cumulative)) return { record, effects: [] };
    return { record: { ...record, cumulative: event.cumulative.toString(), payerSig: event.payerSig }, effects: [] };
  }
  const next = onFact(record, event);
  return { record: next, effects: event.kind === 'ending' && next !== record ? [{ kind: 'pool' }] : [] };
}

/** The transition of `record`'s role for a fact both roles share. */
export function factTransition(record: ChannelRecord, fact: ChannelFact): ChannelStep<ChannelRecord> {
  return record.role === 'payer' ? payerTransition(record, fact) : hostTransition(record, fact);
}

/**
 * Applies a step to the record the book holds (the book writes a record as it is when its batch
 * is made, so the record keeps its identity), and gives the effects to perform once it is written.
 */
export function applyStep<R extends ChannelRecord>(record: R, step: ChannelStep<R>): readonly ChannelEffect[] {
  if (step.record !== record) Object.assign(record, step.record);
  return step.effects;
}
