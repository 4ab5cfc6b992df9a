/**
 * What the chain says about the channels in the book, the same for the payer's records and the
 * host's: a block's ChannelOpen, ChannelClose and ChannelExpire move them along (and tell a host of
 * a channel opened to it), and after a restart or a reorganisation each unfinished record is
 * brought back in line with the chain, which is what counts.
 */
import type { Chain, ChainEvent } from '../chain/chain.ts';
import type { Mempool } from '../chain/mempool.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { burnOf } from '../ledger/params.ts';
import { decodeTx, type Tx } from '../ledger/tx.ts';
import { type ChannelBook, type ChannelRecord, isFinal, newChannelRecord, type PayerChannelRecord } from './book.ts';
import { applyStep, type ChannelFact, factTransition } from './machine.ts';

/** Blocks read at a time when the end of a channel is looked for. */
const SCAN_BLOCKS = 200;

/**
 * Folds a connected block's channel transactions into the book: records a channel opened to or by
 * `self` that it did not know, and marks opened, closed and expired ones. Resolves to the records
 * it changed (each is being saved).
 */
export function foldBlock(book: ChannelBook, event: Extract<ChainEvent, { type: 'connected' }>, self: Uint8Array, nowMs: number): ChannelRecord[] {
  const changed: ChannelRecord[] = [];
  const height = event.block.header.height;
  event.block.txs.forEach((tx, i) => {
    const record = applyTx(book, tx, height, event.effects[i]?.burned ?? 0n, self, nowMs);
    if (record !== undefined) {
      changed.push(record);
      void book.save(record);
    }
  });
  return changed;
}

function applyTx(book: ChannelBook, tx: Tx, height: number, burned: bigint, self: Uint8Array, nowMs: number): ChannelRecord | undefined {
  const b = tx.body;
  if (b.kind === 'ChannelOpen') {
    const role = bytesEqual(b.sender, self) ? 'payer' : bytesEqual(b.host, self) ? 'host' : null;
    if (role === null) return undefined;
    const known = book.get(toHex(tx.id));
    if (known !== undefined) {
      const step = factTransition(known, { kind: 'open-mined', height });
      if (step.record === known) return undefined;
      applyStep(known, step);
      return known;
    }
    return newChannelRecord({
      channelId: toHex(tx.id),
      role,
      payer: toHex(b.sender),
      host: toHex(b.host),
      capacity: b.capacity.toString(),
      expiryHeight: b.expiry_height,
      status: 'open',
      openHeight: height,
      createdMs: nowMs,
    });
  }
  if (b.kind !== 'ChannelClose' && b.kind !== 'ChannelExpire') return undefined;
  const record = book.get(toHex(b.channel_id));
  if (record === undefined) return undefined;
  endRecord(record, tx, burned);
  return record;
}

/** Marks `record` ended by `tx` (a ChannelClose or ChannelExpire in a block). */
function endRecord(record: ChannelRecord, tx: Tx, burned: bigint): void {
  const settled = tx.body.kind === 'ChannelClose' ? { cumulative: tx.body.cumulative.toString(), burned: burned.toString() } : null;
  apply(record, { kind: 'end-mined', txId: toHex(tx.id), settled });
}

/** Moves `record` along; the caller writes it. */
function apply(record: ChannelRecord, fact: ChannelFact): void {
  applyStep(record, factTransition(record, fact));
}

/**
 * Brings an unfinished record in line with the chain and the pool (after a restart, whose pool is
 * empty, or a reorganisation): open while the chain holds the channel (closing while this node's
 * ending transaction is pooled); ended as the block that ended it says; opening while its
 * ChannelOpen may still be mined. Resolves to false when the record should be forgotten: a
 * ChannelOpen of this node that can never be mined (its nonce went to another transaction).
 */
export async function reconcile(record: ChannelRecord, chain: Chain, mempool: Mempool): Promise<boolean> {
  if (isFinal(record)) return true;
  const id = fromHex(record.channelId, 32);
  const channel = chain.state.channel(id);
  if (channel !== undefined) {
    apply(record, { kind: 'on-chain', openHeight: channel.open_height, endPooled: record.endTx !== null && mempool.has(fromHex(record.endTx, 32)) });
    return true;
  }
  const openedAt = await chain.txHeight(id);
  if (openedAt === undefined) {
    apply(record, { kind: 'not-mined' });
    if (record.role !== 'payer' || record.openTx === null || record.openNonce === null) return true;
    // The nonce went to another transaction: this ChannelOpen can never be mined.
    return chain.state.account(fromHex(record.payer, 32)).nonce < record.openNonce || mempool.has(id);
  }
  apply(record, { kind: 'mined-at', height: openedAt });
  const end = await findEnd(chain, id, openedAt);
  if (end !== undefined) endRecord(record, end.tx, end.burned);
  return true;
}

/** The ChannelClose or ChannelExpire of channel `id` in a block above `from`, with the close's burn. */
async function findEnd(chain: Chain, id: Uint8Array, from: number): Promise<{ tx: Tx; burned: bigint } | undefined> {
  for (let height = from; height <= chain.tip.height; height += SCAN_BLOCKS) {
    for (const block of await chain.blocksFrom(height, SCAN_BLOCKS)) {
      for (const tx of block.txs) {
        const b = tx.body;
        if ((b.kind === 'ChannelClose' || b.kind === 'ChannelExpire') && bytesEqual(b.channel_id, id)) {
          return { tx, burned: b.kind === 'ChannelClose' ? burnOf(b.cumulative) : 0n };
        }
      }
    }
  }
  return undefined;
}

/** The signed ChannelOpen a payer record keeps, to pool it again. */
export function openTxOf(record: PayerChannelRecord): Tx | null {
  return record.openTx === null ? null : decodeTx(fromHex(record.openTx));
}
