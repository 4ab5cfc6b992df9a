/**
 * What the chain says about the jobs in the book, the same for the payer's records and the host's:
 * heartbeats paid, the settlement's cost, a lock the heartbeats spent. The two sides then react in
 * their own ways (the host stops a container whose bid expired; the payer stops placing it).
 */
import type { ChainEvent } from '../chain/chain.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import type { LedgerState } from '../ledger/state.ts';
import type { JobBook, JobRecord } from './book.ts';

/**
 * Folds a connected block's Heartbeats and JobSettles into their jobs' records, and closes jobs whose
 * heartbeats spent the whole lock. Resolves to the records of the jobs whose bids the block expired.
 */
export function foldBlock(book: JobBook, event: Extract<ChainEvent, { type: 'connected' }>, state: LedgerState): JobRecord[] {
  const expired: JobRecord[] = [];
  event.block.txs.forEach((tx, i) => {
    const body = tx.body;
    if (body.kind !== 'JobSettle' && body.kind !== 'Heartbeat' && body.kind !== 'JobExpire') return;
    const record = book.get(toHex(body.job_id));
    if (record === undefined) return;
    if (body.kind === 'JobExpire') {
      expired.push(record);
      return;
    }
    if (body.kind === 'Heartbeat') {
      record.heartbeats = { count: record.heartbeats.count + 1, paid: (BigInt(record.heartbeats.paid) + (event.effects[i]?.amount ?? 0n)).toString() };
      if (record.status === 'pending') record.status = 'running';
    } else {
      record.cost = (BigInt(record.heartbeats.paid) + body.cost).toString();
      // A job that ended abnormally keeps saying why; its cost shows what it used.
      if (!record.status.startsWith('failed')) record.status = 'settled';
    }
    void book.save(record);
  });
  for (const record of book.all()) if (closeIfSpent(record, state)) void book.save(record);
  return expired;
}

/**
 * An ended heartbeat-billed job whose heartbeats spent its whole lock is paid in full: nothing is
 * left to settle. Marks it so, and says whether it did.
 */
export function closeIfSpent(record: JobRecord, state: LedgerState): boolean {
  if (record.billing !== 'heartbeat' || record.finishedMs === null || record.heartbeats.count === 0 || record.cost !== null) return false;
  if (state.job(fromHex(record.jobId, 32)) !== undefined) return false;
  record.cost = record.heartbeats.paid;
  if (record.status === 'awaiting_settlement') record.status = 'settled';
  return true;
}
