/**
 * What the chain says about the jobs in the book, the same for the payer's records and the host's:
 * heartbeats paid, the settlement's cost, a lock the heartbeats spent (record.ts `onChain`). The two
 * sides then react in their own ways to an expired bid (the host stops a container; the payer
 * stops placing it).
 */
import type { ChainEvent } from '../chain/chain.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import type { LedgerState } from '../ledger/state.ts';
import type { JobBook } from './book.ts';
import { onChain, spentLock } from './record.ts';

/**
 * Folds a connected block's Heartbeats and JobSettles into their jobs' records, and closes jobs whose
 * heartbeats spent the whole lock. Gives the ids of the jobs whose bids the block expired.
 */
export function foldBlock(book: JobBook, event: Extract<ChainEvent, { type: 'connected' }>, state: LedgerState): string[] {
  const expired: string[] = [];
  event.block.txs.forEach((tx, i) => {
    const body = tx.body;
    if (body.kind !== 'JobSettle' && body.kind !== 'Heartbeat' && body.kind !== 'JobExpire') return;
    const record = book.get(toHex(body.job_id));
    if (record === undefined) return;
    if (body.kind === 'JobExpire') expired.push(record.jobId);
    else if (body.kind === 'Heartbeat') void book.save(onChain(record, { kind: 'heartbeat-mined', amount: event.effects[i]?.amount ?? 0n }));
    else void book.save(onChain(record, { kind: 'settle-mined', cost: body.cost }));
  });
  for (const record of book.all()) {
    if (!spentLock(record)) continue;
    const next = onChain(record, { kind: 'lock-checked', open: state.job(fromHex(record.jobId, 32)) !== undefined });
    if (next !== record) void book.save(next);
  }
  return expired;
}
