/**
 * What the channels feature takes and shows (node-api.md §3 "Payment channel", §4 the channel
 * routes; docs/channels.md): the validated requests, a channel as GET /channels shows it, and the
 * answers of the routes that change one. Amounts are decimal strings of base units on the wire,
 * bigint inside.
 */
import type { Chain } from '../chain/chain.ts';
import type { Mempool } from '../chain/mempool.ts';
import type { OwnTransactions } from '../chain/own-transactions.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import type { Network } from '../net/network.ts';
import type { Clock } from '../time/clock.ts';

/** The node parts the channels work with. */
export interface ChannelParts {
  readonly chain: Chain;
  readonly mempool: Mempool;
  readonly own: OwnTransactions;
  readonly network: Network;
  readonly key: SigningKey;
  readonly clock: Clock;
  readonly log: (line: string) => void;
}

/** Which side of the channel this node is on. */
export type ChannelRole = 'payer' | 'host';

/**
 * opening: the ChannelOpen is signed and pooled, not yet in a block; open: it is; closing: a
 * transaction that ends it (the host's ChannelClose, the payer's ChannelExpire) is pooled;
 * closed and expired: that transaction is in a block.
 */
export type ChannelStatus = 'opening' | 'open' | 'closing' | 'closed' | 'expired';

/** POST /channels/open, validated. */
export interface OpenRequest {
  readonly host: Uint8Array;
  /** Base units, above 0. */
  readonly capacity: bigint;
  /** null: the node's default (docs/channels.md). */
  readonly expiryHeight: number | null;
}

/** A receipt as the host takes it: a cumulative amount and the payer's signature over it. */
export interface Receipt {
  readonly cumulative: bigint;
  readonly payerSig: Uint8Array;
}

/** One channel as GET /channels and GET /channels/:id show it. */
export interface ChannelView {
  channel_id: string;
  payer: string;
  host: string;
  /** Decimal base units. */
  capacity: string;
  /** The last height at which the host may close it; the payer may expire it after. */
  expiry_height: number;
  role: ChannelRole;
  status: ChannelStatus;
  /** Payer: the highest cumulative it signed; host: the best receipt it holds ('0': none). */
  cumulative: string;
  /** The payer's signature over `cumulative`, 128 hex; null when there is no receipt. */
  payer_sig: string | null;
  /** Payer: the highest cumulative the host said it holds; null on the host. */
  delivered: string | null;
  /** The height of the block holding the ChannelOpen; null while opening. */
  open_height: number | null;
  /** The ChannelClose or ChannelExpire that ends it (pooled or in a block); null before. */
  end_tx: string | null;
  /** Once closed: what the ChannelClose paid, its burn, and what went back to the payer. */
  settlement: Settlement | null;
}

/** How a close divides the capacity (decimal base units). */
export interface Settlement {
  cumulative: string;
  to_host: string;
  burned: string;
  returned_to_payer: string;
}

/** POST /channels/receipt. */
export interface ReceiptAnswer {
  channel_id: string;
  cumulative: string;
  payer_sig: string;
  /** Whether the host answered that it holds this receipt (or a higher one). */
  delivered: boolean;
  /** Why it was not delivered (the host could not be reached, or refused it); null when delivered. */
  delivery_error: string | null;
}

/** POST /channels/:id/close: the ChannelClose sent and how it divides the capacity. */
export interface CloseAnswer extends Settlement {
  channel_id: string;
  tx_id: string;
}

/** POST /channels/:id/expire. */
export interface ExpireAnswer {
  channel_id: string;
  tx_id: string;
  returned_to_payer: string;
}
