/**
 * What the /channels routes ask of the node's payment channels (docs/channels.md); ChannelDesk implements it.
 */
import type { ChannelView, CloseAnswer, ExpireAnswer, OpenRequest, Receipt, ReceiptAnswer } from './types.ts';

export interface ChannelsService {
  /**
   * Opens a channel to `host`: signs and pools a ChannelOpen that locks the capacity. Throws
   * LedgerRuleError 'insufficient-free-balance' (402), ChannelError 'bad-host', 'bad-expiry' (400).
   */
  openChannel(request: OpenRequest): Promise<{ channel_id: string; expiry_height: number }>;
  /**
   * On the payer: signs a receipt for `cumulative` (no transaction) and hands it to the host.
   * Throws ChannelError 'unknown-channel' (404), 'wrong-host', 'exceeds-capacity' (400),
   * 'below-signed', 'ended' (409).
   */
  signReceipt(channelId: Uint8Array, host: Uint8Array, cumulative: bigint): Promise<ReceiptAnswer>;
  /**
   * On the host: takes `receipt` (when given) and closes with the best receipt held. Throws
   * ChannelError 'unknown-channel' (404), 'bad-signature', 'exceeds-capacity' (400), 'wrong-role',
   * 'not-host', 'not-on-chain', 'ended', 'past-expiry', 'no-receipt' (409).
   */
  closeChannel(channelId: Uint8Array, receipt: Receipt | null): Promise<CloseAnswer>;
  /** On the payer, after expiry_height: ChannelError 'unknown-channel' (404), 'wrong-role', 'ended', 'not-expired' (409). */
  expireChannel(channelId: Uint8Array): Promise<ExpireAnswer>;
  /** Every channel this node is payer or host of, newest first. */
  listChannels(): ChannelView[];
  /** One channel, or undefined. */
  getChannel(channelId: Uint8Array): ChannelView | undefined;
}
