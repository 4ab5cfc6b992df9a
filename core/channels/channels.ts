/**
 * The payment channels of one node: its payer side and its host side over one channel book, as
 * the /channels routes ask for them (ChannelsService). The desk follows the chain: each connected
 * block's channel transactions are folded into the book (so a host learns of channels opened to
 * it, and both sides of opens, closes and expiries), then each side reacts; a ChannelClose or
 * ChannelExpire of this node that left the pool unmined puts its channel back to open; after a
 * restart or a reorganisation, unfinished records are brought in line with the chain.
 */
import type { ChainEvent } from '../chain/chain.ts';
import { formatAmount } from '../encoding/amount.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { type KeyValueStore, MemoryStore } from '../store/kv.ts';
import { ChannelBook, type ChannelRecord, isFinal } from './book.ts';
import { foldBlock, reconcile } from './chain-facts.ts';
import { ChannelError } from './errors.ts';
import { ChannelHost, CLOSE_MARGIN_BLOCKS } from './host.ts';
import { applyStep, factTransition } from './machine.ts';
import { ChannelPayer } from './payer.ts';
import type { ChannelsService } from './service.ts';
import type { ChannelParts, ChannelView, CloseAnswer, ExpireAnswer, OpenRequest, Receipt, ReceiptAnswer } from './types.ts';

/** Where a node keeps its channels, and when its host side closes them. */
export interface ChannelsConfig {
  /** The channel book's store (a LevelDB of its own on the Node host). Default: memory. */
  readonly store?: KeyValueStore;
  /** Blocks before the expiry height at which the host closes with its best receipt (default CLOSE_MARGIN_BLOCKS; 0: never by itself). */
  readonly closeMarginBlocks?: number;
}

export class ChannelDesk implements ChannelsService {
  readonly book: ChannelBook;
  readonly payer: ChannelPayer;
  readonly host: ChannelHost;
  readonly #parts: ChannelParts;
  // Channels touched by a disconnected block: brought in line once the new branch is in.
  readonly #stale = new Set<string>();
  #unsubscribe: (() => void) | null = null;

  private constructor(book: ChannelBook, parts: ChannelParts, closeMarginBlocks: number) {
    this.book = book;
    this.#parts = parts;
    const side = { ...parts, book };
    this.payer = new ChannelPayer(side);
    this.host = new ChannelHost({ ...side, closeMarginBlocks });
  }

  /** Opens the channel book; `start` then serves receipts and follows the chain. */
  static async open(parts: ChannelParts, config: ChannelsConfig = {}): Promise<ChannelDesk> {
    const margin = config.closeMarginBlocks ?? CLOSE_MARGIN_BLOCKS;
    if (!Number.isSafeInteger(margin) || margin < 0) throw new RangeError(`closeMarginBlocks must be a non-negative integer, got ${margin}`);
    return new ChannelDesk(await ChannelBook.open(config.store ?? new MemoryStore()), parts, margin);
  }

  /** Brings the records in line with the chain (the pool is empty after a restart), then follows it. */
  async start(): Promise<void> {
    await this.#reconcile(this.book.all().filter((r) => !isFinal(r)));
    for (const record of this.book.all()) if (record.role === 'payer' && record.status === 'opening') await this.payer.repool(record);
    this.host.start();
    this.#unsubscribe = this.#parts.chain.subscribe((event) => this.#onChain(event));
  }

  async stop(): Promise<void> {
    this.#unsubscribe?.();
    this.host.stop();
    await this.payer.flush();
  }

  // ---- ChannelsService ----

  openChannel(request: OpenRequest): Promise<{ channel_id: string; expiry_height: number }> {
    return this.payer.open(request);
  }

  async signReceipt(channelId: Uint8Array, host: Uint8Array, cumulative: bigint): Promise<ReceiptAnswer> {
    const { record, payerSig, deliver } = await this.payer.sign(channelId, host, cumulative);
    // Before its ChannelOpen is in a block the host refuses it; it goes out again once it is.
    const error = deliver ? await this.payer.deliver(record) : 'the channel is not open on the chain yet: the receipt goes to the host once it is';
    return { channel_id: record.channelId, cumulative: formatAmount(cumulative), payer_sig: toHex(payerSig), delivered: error === null, delivery_error: error };
  }

  closeChannel(channelId: Uint8Array, receipt: Receipt | null): Promise<CloseAnswer> {
    return this.host.close(channelId, receipt);
  }

  async expireChannel(channelId: Uint8Array): Promise<ExpireAnswer> {
    const id = toHex(channelId);
    const record = this.book.get(id);
    if (record === undefined) throw new ChannelError('unknown-channel', `this node is party to no channel ${id}`);
    if (record.role !== 'payer') throw new ChannelError('wrong-role', `this node is the host of channel ${id}: only its payer expires it`);
    if (isFinal(record) || record.status === 'closing') {
      throw new ChannelError('ended', `channel ${id} is ${record.status}${record.endTx === null ? '' : ` (transaction ${record.endTx})`}`);
    }
    return this.payer.expire(record);
  }

  listChannels(): ChannelView[] {
    return this.book.all().map(viewOf);
  }

  getChannel(channelId: Uint8Array): ChannelView | undefined {
    const record = this.book.get(toHex(channelId));
    return record === undefined ? undefined : viewOf(record);
  }

  // ---- the chain ----

  #onChain(event: ChainEvent): void {
    if (event.type === 'disconnected') {
      for (const tx of event.block.txs) {
        const b = tx.body;
        const id = b.kind === 'ChannelOpen' ? toHex(tx.id) : b.kind === 'ChannelClose' || b.kind === 'ChannelExpire' ? toHex(b.channel_id) : null;
        if (id !== null && this.book.get(id) !== undefined) this.#stale.add(id);
      }
      return;
    }
    if (event.type !== 'connected') return;
    const changed = foldBlock(this.book, event, this.#parts.key.publicKey, this.#parts.clock.now());
    this.#reopenDropped();
    if (this.#stale.size > 0) {
      const stale = [...this.#stale].flatMap((id) => this.book.get(id) ?? []);
      this.#stale.clear();
      void this.#reconcile(stale);
    }
    this.payer.onBlock(changed);
    this.host.onBlock();
  }

  /** A ChannelClose or ChannelExpire of this node that left the pool without a block: the channel is open again. */
  #reopenDropped(): void {
    const { chain, mempool } = this.#parts;
    for (const record of this.book.records()) {
      if (record.status !== 'closing' || record.endTx === null || this.host.isClosing(record.channelId) || this.payer.isExpiring(record.channelId)) continue;
      if (mempool.has(fromHex(record.endTx, 32)) || chain.state.channel(fromHex(record.channelId, 32)) === undefined) continue;
      this.#parts.log(
        `channels: the ${record.role === 'host' ? 'ChannelClose' : 'ChannelExpire'} of ${record.channelId.slice(0, 16)}… left the pool unmined; the channel is open again`,
      );
      applyStep(record, factTransition(record, { kind: 'end-dropped' }));
      void this.book.save(record);
    }
  }

  async #reconcile(records: readonly ChannelRecord[]): Promise<void> {
    for (const record of records) {
      if (await reconcile(record, this.#parts.chain, this.#parts.mempool)) await this.book.save(record);
      else {
        this.#parts.log(`channels: the ChannelOpen of ${record.channelId.slice(0, 16)}… can never be mined (its nonce went to another transaction); forgotten`);
        await this.book.delete(record.channelId);
      }
    }
  }
}

function viewOf(record: ChannelRecord): ChannelView {
  const capacity = BigInt(record.capacity);
  const settled = record.settled;
  return {
    channel_id: record.channelId,
    payer: record.payer,
    host: record.host,
    capacity: record.capacity,
    expiry_height: record.expiryHeight,
    role: record.role,
    status: record.status,
    cumulative: record.cumulative,
    payer_sig: record.payerSig,
    delivered: record.role === 'payer' ? record.delivered : null,
    open_height: record.openHeight,
    end_tx: record.endTx,
    settlement:
      settled === null
        ? null
        : {
            cumulative: settled.cumulative,
            to_host: formatAmount(BigInt(settled.cumulative) - BigInt(settled.burned)),
            burned: settled.burned,
            returned_to_payer: formatAmount(capacity - BigInt(settled.cumulative)),
          },
  };
}

/** Payment channels, as payer and as host. */
export function channelsService(config: ChannelsConfig = {}): (components: ChannelParts) => Promise<ChannelDesk> {
  return (components) => ChannelDesk.open(components, config);
}
