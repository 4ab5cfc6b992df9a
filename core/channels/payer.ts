/**
 * The payer's side of a payment channel (docs/channels.md "On the payer"): it opens the channel
 * (a ChannelOpen that locks the capacity, on record before it is pooled), signs receipts of a
 * rising cumulative amount without any transaction, hands each to the host over the network port
 * (and again, on later blocks, while the host has not said it holds it), and expires the channel
 * once its expiry height has passed.
 */

import type { OwnTransactions, OwnTxBody } from '../chain/own-transactions.ts';
import { parsePublicKey } from '../crypto/ed25519.ts';
import { formatCredits } from '../encoding/amount.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { decode, encode } from '../encoding/codec.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { LedgerRuleError } from '../ledger/apply.ts';
import { EXPIRY_BLOCKS } from '../ledger/params.ts';
import { freeBalance } from '../ledger/state.ts';
import { channelReceiptBytes, type Tx } from '../ledger/tx.ts';
import { TOPICS } from '../net/network.ts';
import type { Timer } from '../time/clock.ts';
import { type ChannelBook, type ChannelRecord, isFinal, newChannelRecord, type PayerChannelRecord } from './book.ts';
import { openTxOf } from './chain-facts.ts';
import { ChannelError, exceedsCapacity } from './errors.ts';
import { applyStep, factTransition, type PayerChannelEvent, payerTransition } from './machine.ts';
import type { ChannelParts, ExpireAnswer, OpenRequest } from './types.ts';
import { CHANNEL_RPC, MAX_RECEIPT_MESSAGE_BYTES, receiptAnswerCodec, receiptCodec } from './wire.ts';

/** A channel's life when POST /channels/open names no expiry_height: the bid expiry's 1,440 blocks. */
export const DEFAULT_EXPIRY_BLOCKS = EXPIRY_BLOCKS;
/** How long a receipt waits for the host's answer. */
const DELIVERY_TIMEOUT_MS = 5_000;
/** Least time between two tries to hand the same channel's receipt over. */
export const DELIVERY_RETRY_MS = 2_000;
/**
 * How long the payer's changed receipts wait before they are written together: a payer signing
 * thousands a second writes ten times a second, not once per receipt (a synced write costs more
 * than a signature, and the receipt is the host's to keep, not the payer's).
 */
export const RECEIPT_WRITE_MS = 100;

/** What both sides of a channel work with: the node's parts and the channel book. */
export interface ChannelSideOptions extends ChannelParts {
  readonly book: ChannelBook;
}

/** A signed receipt, as POST /channels/receipt answers it before delivery. */
export interface SignedReceipt {
  readonly record: PayerChannelRecord;
  readonly cumulative: bigint;
  readonly payerSig: Uint8Array;
  /** Whether it goes to the host now (the channel is open on the chain). */
  readonly deliver: boolean;
}

export class ChannelPayer {
  readonly #o: ChannelSideOptions;
  readonly #self: string;
  // Channels whose receipt is on its way, and when each was last sent.
  readonly #sending = new Set<string>();
  readonly #lastTry = new Map<string, number>();
  // Receipts a host refused for good (not "not on chain yet"): the cumulative refused, not sent again.
  readonly #refused = new Map<string, string>();
  // Channels a ChannelExpire is being made for (marked closing before it is pooled).
  readonly #expiring = new Set<string>();
  // Records changed by receipts and deliveries, written together RECEIPT_WRITE_MS after the first change.
  readonly #unwritten = new Map<string, PayerChannelRecord>();
  #writeTimer: Timer | null = null;

  constructor(options: ChannelSideOptions) {
    this.#o = options;
    this.#self = toHex(options.key.publicKey);
  }

  /** Writes the records receipts and deliveries changed (the node calls it when it stops). */
  async flush(): Promise<void> {
    this.#writeTimer?.cancel();
    this.#writeTimer = null;
    const records = [...this.#unwritten.values()];
    this.#unwritten.clear();
    await Promise.all(
      records.map((r) =>
        this.#o.book.save(r).catch((error: unknown) => this.#o.log(`channels: ${r.channelId.slice(0, 16)}… is not written: ${String(error)}`)),
      ),
    );
  }

  /**
   * Moves a payer record along with a receipt or a delivery: written in the background, with others
   * (a receipt the book forgets in a crash costs the payer nothing: the host holds it).
   */
  #step(record: PayerChannelRecord, event: PayerChannelEvent): boolean {
    const step = payerTransition(record, event);
    if (step.record !== record) {
      applyStep(record, step);
      this.#unwritten.set(record.channelId, record);
      this.#writeTimer ??= this.#o.clock.setTimeout(() => void this.flush(), RECEIPT_WRITE_MS);
    }
    return step.effects.some((e) => e.kind === 'deliver');
  }

  /** Whether a ChannelExpire of this channel is being made right now. */
  isExpiring(channelId: string): boolean {
    return this.#expiring.has(channelId);
  }

  /** After a restart: a ChannelOpen still waiting for a block goes back into the pool and out to peers. */
  async repool(record: PayerChannelRecord): Promise<void> {
    const tx = openTxOf(record);
    if (tx === null || this.#o.mempool.has(tx.id)) return;
    try {
      await this.#o.mempool.add(tx);
      await this.#o.network.publish(TOPICS.transactions, tx.bytes);
    } catch (error) {
      this.#o.log(`channels: the ChannelOpen of ${record.channelId.slice(0, 16)}… is not pooled again: ${String(error)}`);
    }
  }

  /** POST /channels/open: signs and pools a ChannelOpen, on record before it is pooled. */
  async open(request: OpenRequest): Promise<{ channel_id: string; expiry_height: number }> {
    const { chain, own, book, key, clock } = this.#o;
    if (bytesEqual(request.host, key.publicKey)) throw new ChannelError('bad-host', 'host is this node: a channel needs two parties');
    try {
      parsePublicKey(request.host);
    } catch (error) {
      throw new ChannelError('bad-host', `host is not a node id: ${(error as Error).message}`);
    }
    const tip = chain.tip.height;
    const expiryHeight = request.expiryHeight ?? tip + DEFAULT_EXPIRY_BLOCKS;
    // The ChannelOpen goes into block tip + 1 at the earliest, and the expiry must be above its block.
    if (expiryHeight <= tip + 1) {
      throw new ChannelError('bad-expiry', `expiry_height ${expiryHeight} is not above the next block's height ${tip + 1} (the chain is at ${tip})`);
    }
    const free = freeBalance(chain.state.account(key.publicKey), tip);
    if (request.capacity > free) {
      throw new LedgerRuleError(
        'insufficient-free-balance',
        `the capacity of ${formatCredits(request.capacity)} credits is above the free balance of ${formatCredits(free)} credits`,
      );
    }
    let record: ChannelRecord | undefined;
    const body = { kind: 'ChannelOpen', host: request.host, capacity: request.capacity, expiry_height: expiryHeight } as const;
    try {
      // On record before it can lock anything: a crash in between leaves no locked channel unknown to the book.
      await own.submit(body, async (tx) => {
        record = newChannelRecord({
          channelId: toHex(tx.id),
          role: 'payer',
          payer: this.#self,
          host: toHex(request.host),
          capacity: request.capacity.toString(),
          expiryHeight,
          status: 'opening',
          openTx: toHex(tx.bytes),
          openNonce: tx.body.nonce,
          createdMs: clock.now(),
        });
        await book.save(record);
      });
    } catch (error) {
      if (record !== undefined) await book.delete(record.channelId);
      throw error;
    }
    return { channel_id: record!.channelId, expiry_height: expiryHeight };
  }

  /**
   * The core of POST /channels/receipt: checks the request against the channel, signs the receipt
   * bytes with the node's key and records the highest cumulative signed. No transaction.
   */
  async sign(channelId: Uint8Array, host: Uint8Array, cumulative: bigint): Promise<SignedReceipt> {
    const id = toHex(channelId);
    const record = this.#o.book.get(id);
    if (record === undefined || record.role !== 'payer') {
      throw new ChannelError(
        'unknown-channel',
        record === undefined ? `this node opened no channel ${id}` : `this node hosts channel ${id}: only its payer signs receipts`,
      );
    }
    if (toHex(host) !== record.host) throw new ChannelError('wrong-host', `host ${toHex(host)} is not the channel's host ${record.host}`);
    if (isFinal(record) || record.status === 'closing') {
      throw new ChannelError('ended', `channel ${id} is ${record.status}`);
    }
    const capacity = BigInt(record.capacity);
    if (cumulative > capacity) {
      throw exceedsCapacity(cumulative, capacity);
    }
    if (cumulative < BigInt(record.cumulative)) {
      throw new ChannelError(
        'below-signed',
        `a receipt for ${formatCredits(BigInt(record.cumulative))} credits is signed already: a receipt carries the cumulative total paid, not an increment`,
      );
    }
    const payerSig = await this.#o.key.sign(channelReceiptBytes(this.#o.chain.params.network, channelId, host, cumulative));
    // Another receipt may have been signed meanwhile: the record keeps the highest.
    const deliver = this.#step(record, { kind: 'signed', cumulative, payerSig: toHex(payerSig) });
    return { record, cumulative, payerSig, deliver };
  }

  /**
   * Hands the channel's highest receipt to its host over `channels.receipt`. Resolves to null when
   * the host holds it (or a higher one), else to why not; never rejects for the network's sake.
   */
  async deliver(record: PayerChannelRecord): Promise<string | null> {
    const { network, clock } = this.#o;
    if (record.payerSig === null) return 'no receipt is signed';
    const cumulative = record.cumulative;
    this.#sending.add(record.channelId);
    this.#lastTry.set(record.channelId, clock.now());
    try {
      const request = encode(receiptCodec, {
        channel_id: fromHex(record.channelId, 32),
        cumulative: BigInt(cumulative),
        payer_sig: fromHex(record.payerSig, 64),
      });
      const bytes = await network.request(fromHex(record.host, 32), CHANNEL_RPC.receipt, request, {
        timeoutMs: DELIVERY_TIMEOUT_MS,
        maxResponseBytes: MAX_RECEIPT_MESSAGE_BYTES,
        relayed: true,
      });
      const answer = decode(receiptAnswerCodec, bytes);
      if (answer.answer === 'Refused') {
        if (answer.code !== 'not-on-chain') this.#refused.set(record.channelId, cumulative);
        return `the host refused it: ${answer.reason}`;
      }
      this.#step(record, { kind: 'delivered', best: answer.best });
      return answer.best >= BigInt(cumulative) ? null : `the host holds a receipt for ${formatCredits(answer.best)} credits only`;
    } catch (error) {
      if (!(error instanceof MeshError)) throw error;
      return `the host could not be reached: ${error.message}`;
    } finally {
      this.#sending.delete(record.channelId);
    }
  }

  /** POST /channels/:id/expire: the payer's ChannelExpire once the chain is past expiry_height. */
  async expire(record: PayerChannelRecord): Promise<ExpireAnswer> {
    const { chain, own, book } = this.#o;
    const channelId = fromHex(record.channelId, 32);
    if (chain.state.channel(channelId) === undefined) {
      if (record.status === 'opening')
        throw new ChannelError('not-on-chain', `channel ${record.channelId} cannot be expired: its ChannelOpen is not in a block yet`);
      throw new ChannelError('ended', `channel ${record.channelId} is not open on the chain any more: its host closed it`);
    }
    // The ChannelExpire goes into block tip + 1 at the earliest, which must be above expiry_height.
    const from = record.expiryHeight + 1;
    if (chain.tip.height + 1 < from) {
      throw new ChannelError(
        'not-expired',
        `the channel may be expired from height ${from}, ${from - chain.tip.height - 1} blocks from now (the chain is at ${chain.tip.height})`,
      );
    }
    if (this.#expiring.has(record.channelId)) throw new ChannelError('ended', `a ChannelExpire of channel ${record.channelId} is being made`);
    this.#expiring.add(record.channelId);
    try {
      const tx = await submitEnding(own, book, record, { kind: 'ChannelExpire', channel_id: channelId });
      return { channel_id: record.channelId, tx_id: toHex(tx.id), returned_to_payer: record.capacity };
    } finally {
      this.#expiring.delete(record.channelId);
    }
  }

  /**
   * After a block: receipts the host has not said it holds go out again: at once for a channel the
   * block opened (a host refuses receipts before that), else at most every DELIVERY_RETRY_MS.
   */
  onBlock(changed: readonly ChannelRecord[]): void {
    const now = this.#o.clock.now();
    const opened = new Set(changed.filter((r) => r.status === 'open').map((r) => r.channelId));
    for (const record of this.#o.book.records()) {
      if (record.role !== 'payer' || record.status !== 'open' || record.payerSig === null) continue;
      if (BigInt(record.delivered) >= BigInt(record.cumulative) || this.#sending.has(record.channelId)) continue;
      if (this.#refused.get(record.channelId) === record.cumulative) continue;
      if (!opened.has(record.channelId) && now - (this.#lastTry.get(record.channelId) ?? 0) < DELIVERY_RETRY_MS) continue;
      void this.deliver(record).then((why) => {
        if (why !== null)
          this.#o.log(`channels: the receipt of ${record.channelId.slice(0, 16)}… for ${formatCredits(BigInt(record.cumulative))} credits: ${why}`);
      });
    }
  }
}

/**
 * Signs and pools `body`, the ChannelClose or ChannelExpire that ends `record`'s channel; the
 * record says `closing`, with the transaction's id, before it is pooled, and goes back to what it
 * was when the transaction is refused.
 */
export async function submitEnding(own: OwnTransactions, book: ChannelBook, record: ChannelRecord, body: OwnTxBody): Promise<Tx> {
  const before = { status: record.status, endTx: record.endTx };
  try {
    // own.submit pools it (the 'pool' effect) once the record is written.
    return await own.submit(body, async (signed) => {
      applyStep(record, factTransition(record, { kind: 'ending', txId: toHex(signed.id) }));
      await book.save(record);
    });
  } catch (error) {
    if (record.status === 'closing') {
      applyStep(record, factTransition(record, { kind: 'ending-refused', ...before }));
      await book.save(record);
    }
    throw error;
  }
}
