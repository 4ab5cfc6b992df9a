/**
 * The payment channels in memory, for tests of the HTTP API (routes/channels.test.ts) and through
 * FakeNode of everything that serves a NodeService: one channel (CHANNEL) at first, fixed answers,
 * and every call the API made, in order, ids as hex, so a test sees what reached the service and
 * that a refused request reached nothing.
 */

import type { ChannelsService } from '../channels/service.ts';
import type { ChannelView, CloseAnswer, ExpireAnswer, OpenRequest, Receipt, ReceiptAnswer } from '../channels/types.ts';
import { toHex } from '../encoding/hex.ts';

export const CHANNEL_ID = 'c4'.repeat(32);
export const CHANNEL_HOST = 'b2'.repeat(32);
export const CLOSE_TX_ID = 'c1'.repeat(32);
export const CHANNEL_SIG = 'a5'.repeat(64);

/** A channel this node opened to CHANNEL_HOST: 10 credits, 2.5 signed and delivered. */
export const CHANNEL: ChannelView = {
  channel_id: CHANNEL_ID,
  payer: '1a'.repeat(32),
  host: CHANNEL_HOST,
  capacity: '10000000000000000000',
  expiry_height: 1_447,
  role: 'payer',
  status: 'open',
  cumulative: '2500000000000000000',
  payer_sig: CHANNEL_SIG,
  delivered: '2500000000000000000',
  open_height: 8,
  end_tx: null,
  settlement: null,
};

export class FakeChannels implements ChannelsService {
  readonly channelCalls: { method: keyof ChannelsService; args: unknown[] }[] = [];
  readonly channels = new Map<string, ChannelView>([[CHANNEL_ID, CHANNEL]]);
  /** Thrown by the methods that change a channel, when set. */
  channelError: unknown = undefined;

  #call(method: keyof ChannelsService, ...args: unknown[]): void {
    this.channelCalls.push({ method, args: args.map((a) => (a instanceof Uint8Array ? toHex(a) : a)) });
  }

  #answer<T>(value: T): Promise<T> {
    return this.channelError === undefined ? Promise.resolve(value) : Promise.reject(this.channelError);
  }

  openChannel(request: OpenRequest): Promise<{ channel_id: string; expiry_height: number }> {
    this.#call('openChannel', { ...request, host: toHex(request.host) });
    return this.#answer({ channel_id: CHANNEL_ID, expiry_height: request.expiryHeight ?? 1_447 });
  }
  signReceipt(channelId: Uint8Array, host: Uint8Array, cumulative: bigint): Promise<ReceiptAnswer> {
    this.#call('signReceipt', channelId, host, cumulative);
    return this.#answer({ channel_id: toHex(channelId), cumulative: cumulative.toString(), payer_sig: CHANNEL_SIG, delivered: true, delivery_error: null });
  }
  closeChannel(channelId: Uint8Array, receipt: Receipt | null): Promise<CloseAnswer> {
    this.#call('closeChannel', channelId, receipt === null ? null : { cumulative: receipt.cumulative, payerSig: toHex(receipt.payerSig) });
    const cumulative = receipt?.cumulative ?? 2_500_000_000_000_000_000n;
    const burned = cumulative / 100n;
    return this.#answer({
      channel_id: toHex(channelId),
      tx_id: CLOSE_TX_ID,
      cumulative: cumulative.toString(),
      to_host: (cumulative - burned).toString(),
      burned: burned.toString(),
      returned_to_payer: (10_000_000_000_000_000_000n - cumulative).toString(),
    });
  }
  expireChannel(channelId: Uint8Array): Promise<ExpireAnswer> {
    this.#call('expireChannel', channelId);
    return this.#answer({ channel_id: toHex(channelId), tx_id: CLOSE_TX_ID, returned_to_payer: '10000000000000000000' });
  }
  listChannels(): ChannelView[] {
    this.#call('listChannels');
    return [...this.channels.values()];
  }
  getChannel(channelId: Uint8Array): ChannelView | undefined {
    this.#call('getChannel', channelId);
    return this.channels.get(toHex(channelId));
  }
}
