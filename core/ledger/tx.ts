/**
 * Transactions: sixteen kinds (node-api.md §2, and JobAccept: docs/ledger.md), one canonical encoding each, signed by the sender.
 *
 * Wire form: body ‖ signature, where body = kind tag ‖ sender ‖ nonce ‖ the kind's fields, and the
 * signature is the sender's Ed25519 signature over `txSigningBytes(network, body)` (a domain tag
 * naming the network, so a transaction signed for the devnet is void on the main network).
 * tx_id = SHA-256 of the wire form. Payload design: docs/ledger.md.
 */

import { SIGNATURE_LENGTH, type SigningKey } from '../crypto/ed25519.ts';
import { coreSha256, type Sha256Hasher } from '../crypto/sha256.ts';
import { type ByteArena, concatBytes } from '../encoding/bytes.ts';
import {
  bool,
  bytes32,
  bytes64,
  decode,
  encode,
  type Infer,
  option,
  type Reader,
  struct,
  u8,
  u16,
  u32,
  u128,
  uint53,
  utf8,
  variant,
} from '../encoding/codec.ts';
import { InvalidEncodingError } from '../errors.ts';
import { domainBytes } from './domain.ts';

import { signedHeaderCodec } from './header.ts';
import { NAME_MAX_LENGTH } from './params.ts';

const common = { sender: bytes32, nonce: uint53 } as const;

/** Billing of a job: settled once at the end, or billed by heartbeats while it runs. */
export const BILLING_SETTLE = 0;
export const BILLING_HEARTBEAT = 1;

/** The transaction body codec: a tagged union of the sixteen kinds. */
export const txBodyCodec = variant(
  'kind',
  {
    Transfer: [1, struct({ ...common, to: bytes32, amount: u128 }, 'Transfer')],
    UptimeReward: [2, struct({ ...common, amount: u128 }, 'UptimeReward')],
    JobBid: [
      3,
      struct(
        {
          ...common,
          spec_hash: bytes32,
          bid: u128,
          duration_secs: u32,
          cpu_cores: u16,
          mem_mb: u32,
          billing: u8,
          host: option(bytes32),
        },
        'JobBid',
      ),
    ],
    JobSettle: [4, struct({ ...common, job_id: bytes32, payer: bytes32, cost: u128, payer_sig: bytes64 }, 'JobSettle')],
    JobExpire: [5, struct({ ...common, job_id: bytes32 }, 'JobExpire')],
    TrustGrant: [6, struct({ ...common, subject: bytes32, trusted: bool }, 'TrustGrant')],
    Heartbeat: [7, struct({ ...common, job_id: bytes32, cell: bytes32, epoch: uint53 }, 'Heartbeat')],
    ChannelOpen: [8, struct({ ...common, host: bytes32, capacity: u128, expiry_height: uint53 }, 'ChannelOpen')],
    ChannelClose: [9, struct({ ...common, channel_id: bytes32, payer: bytes32, cumulative: u128, payer_sig: bytes64 }, 'ChannelClose')],
    ChannelExpire: [10, struct({ ...common, channel_id: bytes32 }, 'ChannelExpire')],
    NameClaim: [11, struct({ ...common, name: utf8(NAME_MAX_LENGTH) }, 'NameClaim')],
    RevokeCapability: [12, struct({ ...common, token_id: bytes32 }, 'RevokeCapability')],
    HostBond: [13, struct({ ...common, amount: u128 }, 'HostBond')],
    HostUnbond: [14, struct({ ...common, amount: u128 }, 'HostUnbond')],
    SlashEquivocation: [15, struct({ ...common, a: signedHeaderCodec, b: signedHeaderCodec }, 'SlashEquivocation')],
    JobAccept: [16, struct({ ...common, job_id: bytes32 }, 'JobAccept')],
  },
  'tx',
);

export type TxBody = Infer<typeof txBodyCodec>;
export type TxKind = TxBody['kind'];
export type TxOf<K extends TxKind> = Extract<TxBody, { kind: K }>;

/** Every kind, in tag order (the itemized transaction list reports all of them). */
export const TX_KINDS: readonly TxKind[] = [
  'Transfer',
  'UptimeReward',
  'JobBid',
  'JobSettle',
  'JobExpire',
  'TrustGrant',
  'Heartbeat',
  'ChannelOpen',
  'ChannelClose',
  'ChannelExpire',
  'NameClaim',
  'RevokeCapability',
  'HostBond',
  'HostUnbond',
  'SlashEquivocation',
  'JobAccept',
];

/** The seven kinds the SSE streams and the archive report. */
export const STREAM_KINDS: readonly TxKind[] = TX_KINDS.slice(0, 7);

/** A decoded, signed transaction with its id and wire bytes. */
export interface Tx {
  readonly body: TxBody;
  readonly signature: Uint8Array;
  /** body ‖ signature, as in blocks and gossip. */
  readonly bytes: Uint8Array;
  /** SHA-256 of `bytes`. */
  readonly id: Uint8Array;
  /** The encoded body (what the signature covers, after the domain tag). */
  readonly bodyBytes: Uint8Array;
}

/** The largest transaction's wire size (SlashEquivocation): bounds gossip and mempool entries. */
export const MAX_TX_BYTES = 1_024;

/** What the sender signs (from `arena`, if given). */
export function txSigningBytes(network: string, bodyBytes: Uint8Array, arena?: ByteArena): Uint8Array {
  return domainBytes('mesh/tx/1', network, bodyBytes, arena);
}

function build(body: TxBody, bodyBytes: Uint8Array, signature: Uint8Array, sha: Sha256Hasher): Tx {
  return fromWire(body, concatBytes(bodyBytes, signature), sha);
}

// A transaction over its wire bytes: the body and the signature are views into them, one copy in all.
function fromWire(body: TxBody, bytes: Uint8Array, sha: Sha256Hasher): Tx {
  const sigAt = bytes.length - SIGNATURE_LENGTH;
  return { body, signature: bytes.subarray(sigAt), bytes, id: sha.hash(bytes), bodyBytes: bytes.subarray(0, sigAt) };
}

/** Decodes a transaction from its wire form (its id hashed by `sha`); throws InvalidEncodingError for anything non-canonical. */
export function decodeTx(bytes: Uint8Array, sha: Sha256Hasher = coreSha256): Tx {
  if (bytes.length > MAX_TX_BYTES) {
    throw new InvalidEncodingError('too-long', `transaction is ${bytes.length} bytes, more than ${MAX_TX_BYTES}`);
  }
  if (bytes.length < SIGNATURE_LENGTH + 1) {
    throw new InvalidEncodingError('truncated', `transaction is ${bytes.length} bytes, too short to hold a signature`);
  }
  const own = bytes.slice();
  return fromWire(decode(txBodyCodec, own.subarray(0, own.length - SIGNATURE_LENGTH)), own, sha);
}

/**
 * Reads one transaction from a reader positioned at its start (blocks hold them back to back). Its
 * bytes are a view of the reader's, not a copy: read only bytes that are the caller's own and never
 * change (decodeBlock reads the block's own copy, which its transactions then share).
 */
export function readTx(r: Reader, sha: Sha256Hasher = coreSha256): Tx {
  const start = r.offset;
  const body = txBodyCodec.read(r);
  const sigAt = r.take(SIGNATURE_LENGTH, 'tx signature');
  return fromWire(body, r.view(start, sigAt + SIGNATURE_LENGTH), sha);
}

/** Signs `body` with `key` (whose public key must be `body.sender`) for `network`. */
export async function signTx(body: TxBody, key: SigningKey, network: string, sha: Sha256Hasher = coreSha256): Promise<Tx> {
  const bodyBytes = encode(txBodyCodec, body);
  const signature = await key.sign(txSigningBytes(network, bodyBytes));
  return build(decode(txBodyCodec, bodyBytes), bodyBytes, signature, sha);
}

const settlementCodec = struct({ job_id: bytes32, host: bytes32, cost: u128 }, 'settlement v2');
const receiptCodec = struct({ channel_id: bytes32, host: bytes32, cumulative: u128 }, 'channel receipt');

/** The v2 settlement bytes a payer signs: job id, host id, cost (node-api.md §4 POST /jobs/:id/settle). */
export function settlementBytes(network: string, jobId: Uint8Array, host: Uint8Array, cost: bigint, arena?: ByteArena): Uint8Array {
  return domainBytes('mesh/settle/2', network, encode(settlementCodec, { job_id: jobId, host, cost }), arena);
}

/** The receipt bytes a channel's payer signs: channel id, host id, cumulative amount. */
export function channelReceiptBytes(network: string, channelId: Uint8Array, host: Uint8Array, cumulative: bigint, arena?: ByteArena): Uint8Array {
  return domainBytes('mesh/channel-receipt/1', network, encode(receiptCodec, { channel_id: channelId, host, cumulative }), arena);
}
