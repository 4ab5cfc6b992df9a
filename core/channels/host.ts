/**
 * The host's side of a payment channel (docs/channels.md "On the host"): it takes receipts, over
 * `channels.receipt` or the close route, checks each against the chain (the channel is open, this
 * node is its host, the cumulative is within the capacity, the channel's payer signed it), keeps
 * the best one per channel in its store before it says so, and closes with the best it holds: when
 * asked, and by itself once the chain comes within CLOSE_MARGIN_BLOCKS of the expiry height.
 */
import { verify } from '../crypto/ed25519.ts';
import { formatAmount, formatCredits } from '../encoding/amount.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { decode, encode } from '../encoding/codec.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { clip } from '../encoding/text.ts';
import { burnOf } from '../ledger/params.ts';
import type { Channel } from '../ledger/state.ts';
import { channelReceiptBytes } from '../ledger/tx.ts';
import type { RpcRequest } from '../net/network.ts';
import { type ChannelRecord, isFinal, newChannelRecord } from './book.ts';
import { ChannelError, exceedsCapacity } from './errors.ts';
import { applyStep, hostTransition } from './machine.ts';
import { type ChannelSideOptions, submitEnding } from './payer.ts';
import type { CloseAnswer, Receipt } from './types.ts';
import { CHANNEL_RPC, MAX_REASON_BYTES, MAX_RECEIPT_MESSAGE_BYTES, receiptAnswerCodec, receiptCodec } from './wire.ts';

/**
 * The host closes a channel it holds a receipt for once the chain's tip is this many blocks from
 * the expiry height: room for the close to miss a few blocks and still be in one by the expiry.
 */
export const CLOSE_MARGIN_BLOCKS = 10;

export interface ChannelHostOptions extends ChannelSideOptions {
  readonly closeMarginBlocks: number;
}

export class ChannelHost {
  readonly #o: ChannelHostOptions;
  readonly #self: Uint8Array;
  // Channels a close is being made for: a second close waits for no pool to tell.
  readonly #closing = new Set<string>();
  #unserve: (() => void) | null = null;

  constructor(options: ChannelHostOptions) {
    this.#o = options;
    this.#self = options.key.publicKey;
  }

  start(): void {
    this.#unserve = this.#o.network.serve(CHANNEL_RPC.receipt, (request) => this.#onReceipt(request), {
      maxRequestBytes: MAX_RECEIPT_MESSAGE_BYTES,
      relayed: true,
    });
  }

  stop(): void {
    this.#unserve?.();
  }

  /** Whether a close of this channel is being made right now. */
  isClosing(channelId: string): boolean {
    return this.#closing.has(channelId);
  }

  /**
   * Takes a receipt for `channelId`: throws ChannelError unless the channel is open on the chain
   * with this node as host, within its expiry, the cumulative within its capacity and the channel's
   * payer's signature valid over the receipt bytes. Keeps it when it is better than the one held,
   * and resolves once the record is written, to the record (its cumulative is the best held).
   * While a ChannelClose is being made, only that close's own receipt is taken: one acknowledged
   * later would not be the one the close pays.
   */
  async accept(channelId: Uint8Array, receipt: Receipt, forClose = false): Promise<ChannelRecord> {
    const { chain, book } = this.#o;
    const closing = (): void => {
      if (!forClose && this.#closing.has(toHex(channelId))) {
        throw new ChannelError('ended', `a ChannelClose of channel ${toHex(channelId)} is being made; a receipt now would not be the one it pays`);
      }
    };
    closing();
    const { record, channel } = this.#openChannel(channelId);
    if (receipt.cumulative > channel.capacity) {
      throw exceedsCapacity(receipt.cumulative, channel.capacity);
    }
    const bytes = channelReceiptBytes(chain.params.network, channelId, this.#self, receipt.cumulative);
    if (!(await verify(channel.payer, bytes, receipt.payerSig))) {
      throw new ChannelError(
        'bad-signature',
        `payer_sig is not the signature of the channel's payer ${toHex(channel.payer)} over the receipt for ${formatCredits(receipt.cumulative)} credits to this host`,
      );
    }
    closing();
    // Compared after the check, with nothing awaited in between: a lower receipt never replaces a higher one.
    const kept = book.get(record.channelId) ?? record;
    if (kept.role !== 'host') throw new ChannelError('wrong-role', `this node is the payer of channel ${record.channelId}: receipts go to its host`);
    // A record new to the book has no receipt yet, so it is always written here.
    const step = hostTransition(kept, { kind: 'receipt', cumulative: receipt.cumulative, payerSig: toHex(receipt.payerSig) });
    if (step.record !== kept) {
      applyStep(kept, step);
      await book.save(kept);
    }
    return kept;
  }

  /**
   * POST /channels/:id/close: takes `receipt` when given (as `accept` does), then submits a
   * ChannelClose with the best receipt held. Throws ChannelError: unknown-channel, wrong-role,
   * not-host, ended, past-expiry, no-receipt, and accept's.
   */
  async close(channelId: Uint8Array, receipt: Receipt | null): Promise<CloseAnswer> {
    const id = toHex(channelId);
    const known = this.#o.book.get(id);
    if (known === undefined && this.#o.chain.state.channel(channelId) === undefined)
      throw new ChannelError('unknown-channel', `no channel ${id} on this node or on the chain`);
    if (known?.role === 'payer') throw new ChannelError('wrong-role', `this node is the payer of channel ${id}: its host closes it`);
    if (this.#closing.has(id)) throw new ChannelError('ended', `a ChannelClose of channel ${id} is being made`);
    this.#closing.add(id);
    try {
      let record = receipt === null ? this.#openChannel(channelId).record : await this.accept(channelId, receipt, true);
      record = this.#o.book.get(id) ?? record;
      if (record.payerSig === null) throw new ChannelError('no-receipt', `this node holds no receipt of channel ${id} to close it with`);
      return await this.#submitClose(record);
    } finally {
      this.#closing.delete(id);
    }
  }

  /**
   * The channel's record (a new one, unsaved, for a channel this node learns of only now) and its
   * state on the chain, when it can take a receipt or a close; ChannelError otherwise.
   */
  #openChannel(channelId: Uint8Array): { record: ChannelRecord; channel: Channel } {
    const { book, chain } = this.#o;
    const id = toHex(channelId);
    const known = book.get(id);
    if (known?.role === 'payer') throw new ChannelError('wrong-role', `this node is the payer of channel ${id}: receipts go to its host`);
    if (known !== undefined && (isFinal(known) || known.status === 'closing')) {
      throw new ChannelError('ended', `channel ${id} is ${known.status}${known.endTx === null ? '' : ` (transaction ${known.endTx})`}`);
    }
    const channel = chain.state.channel(channelId);
    if (channel === undefined) {
      throw new ChannelError(
        'not-on-chain',
        `channel ${id} is not open on the chain${known === undefined ? ': if it was just opened, its ChannelOpen is not in a block yet' : ''}`,
      );
    }
    if (!bytesEqual(channel.host, this.#self))
      throw new ChannelError('not-host', `this node is not the host of channel ${id} (its host is ${toHex(channel.host)})`);
    // A close goes into block tip + 1 at the earliest, which may be at most expiry_height.
    if (chain.tip.height >= channel.expiry_height) {
      throw new ChannelError(
        'past-expiry',
        `channel ${id} could be closed up to height ${channel.expiry_height}; the chain is at ${chain.tip.height}: only its payer may expire it now`,
      );
    }
    const record =
      known ??
      newChannelRecord({
        channelId: id,
        role: 'host',
        payer: toHex(channel.payer),
        host: toHex(channel.host),
        capacity: channel.capacity.toString(),
        expiryHeight: channel.expiry_height,
        status: 'open',
        openHeight: channel.open_height,
        createdMs: this.#o.clock.now(),
      });
    return { record, channel };
  }

  /** Signs and pools the ChannelClose of `record`'s best receipt; the record says `closing` before it is pooled. */
  async #submitClose(record: ChannelRecord): Promise<CloseAnswer> {
    const cumulative = BigInt(record.cumulative);
    const body = {
      kind: 'ChannelClose',
      channel_id: fromHex(record.channelId, 32),
      payer: fromHex(record.payer, 32),
      cumulative,
      payer_sig: fromHex(record.payerSig!, 64),
    } as const;
    const txId = toHex((await submitEnding(this.#o.own, this.#o.book, record, body)).id);
    const burned = burnOf(cumulative);
    return {
      channel_id: record.channelId,
      tx_id: txId,
      cumulative: formatAmount(cumulative),
      to_host: formatAmount(cumulative - burned),
      burned: formatAmount(burned),
      returned_to_payer: formatAmount(BigInt(record.capacity) - cumulative),
    };
  }

  /** After a block: closes, with the best receipt, each channel held whose expiry is within the margin. */
  onBlock(): void {
    const { book, chain, log } = this.#o;
    const tip = chain.tip.height;
    for (const record of book.records()) {
      if (record.role !== 'host' || record.status !== 'open' || record.payerSig === null || this.#closing.has(record.channelId)) continue;
      if (tip < record.expiryHeight - this.#o.closeMarginBlocks || tip >= record.expiryHeight) continue;
      this.#closing.add(record.channelId);
      void this.#submitClose(record)
        .then((answer) =>
          log(
            `channels: closing ${record.channelId.slice(0, 16)}… before its expiry at ${record.expiryHeight} with ${formatCredits(BigInt(answer.cumulative))} credits (${answer.tx_id.slice(0, 16)}…)`,
          ),
        )
        .catch((error: unknown) => log(`channels: the close of ${record.channelId.slice(0, 16)}… failed: ${String(error)}`))
        .finally(() => this.#closing.delete(record.channelId));
    }
  }

  async #onReceipt({ data }: RpcRequest): Promise<Uint8Array> {
    const message = decode(receiptCodec, data);
    try {
      const record = await this.accept(message.channel_id, { cumulative: message.cumulative, payerSig: message.payer_sig });
      return encode(receiptAnswerCodec, { answer: 'Kept', best: BigInt(record.cumulative) });
    } catch (error) {
      if (!(error instanceof ChannelError)) throw error;
      return encode(receiptAnswerCodec, { answer: 'Refused', code: error.code, reason: clip(error.message, MAX_REASON_BYTES) });
    }
  }
}
