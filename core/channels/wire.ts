/**
 * The channels protocol on the mesh RPC protocol 1 (docs/channels.md "Protocol"): one exchange.
 *
 * - `channels.receipt`, payer → host: a channel id, a cumulative amount and the payer's signature
 *   over the receipt bytes (core/ledger/tx.ts `channelReceiptBytes`, which name the host, so a
 *   receipt is good for its host only). Answer: kept, with the best cumulative the host now holds
 *   for the channel; or refused, with the reason's code (core/channels/errors.ts) and text.
 */
import { bytes32, bytes64, type Infer, struct, u128, utf8, variant } from '../encoding/codec.ts';

export const CHANNEL_RPC = { receipt: 'channels.receipt' } as const;

/** A refusal's text is at most this many bytes. */
export const MAX_REASON_BYTES = 512;
/** The longest error code. */
const MAX_CODE_BYTES = 32;
/** A receipt is 32 + 16 + 64 bytes; an answer far less than this. */
export const MAX_RECEIPT_MESSAGE_BYTES = 1024;

export const receiptCodec = struct({ channel_id: bytes32, cumulative: u128, payer_sig: bytes64 }, 'channel receipt message');

export const receiptAnswerCodec = variant(
  'answer',
  {
    Kept: [0, struct({ best: u128 }, 'kept')],
    Refused: [1, struct({ code: utf8(MAX_CODE_BYTES), reason: utf8(MAX_REASON_BYTES) }, 'refused')],
  },
  'receipt answer',
);

export type ReceiptMessage = Infer<typeof receiptCodec>;
export type ReceiptAnswerMessage = Infer<typeof receiptAnswerCodec>;
