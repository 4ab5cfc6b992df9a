/**
 * Block headers: the spec's block fields (height, previous hash, timestamp, producer, transaction
 * count) plus `tx_root` and `state_root`, signed by the producer. A header stands alone: two signed
 * headers by one producer at one height are equivocation evidence without the blocks themselves.
 *
 * block hash = SHA-256(domain('mesh/block/1', network) ‖ header), and the producer signs the same
 * bytes. Timestamps are milliseconds so devnets can run sub-second intervals; the spec's block object
 * reports seconds.
 */

import { coreSha256, type Sha256Hasher } from '../crypto/sha256.ts';
import { bytes32, bytes64, encode, type Infer, struct, u8, u16, uint53 } from '../encoding/codec.ts';
import { domainBytes } from './domain.ts';

export const HEADER_VERSION = 1;

export const headerCodec = struct(
  {
    version: u8,
    height: uint53,
    prev_hash: bytes32,
    timestamp_ms: uint53,
    producer: bytes32,
    tx_count: u16,
    tx_root: bytes32,
    state_root: bytes32,
  },
  'header',
);
export type Header = Infer<typeof headerCodec>;

export const signedHeaderCodec = struct({ header: headerCodec, signature: bytes64 }, 'signed header');
export type SignedHeader = Infer<typeof signedHeaderCodec>;

/** What the producer signs. */
export function blockSigningBytes(network: string, header: Header): Uint8Array {
  return domainBytes('mesh/block/1', network, encode(headerCodec, header));
}

/** The block's hash: SHA-256 of its signing bytes. */
export function blockHash(network: string, header: Header, sha: Sha256Hasher = coreSha256): Uint8Array {
  return sha.hash(blockSigningBytes(network, header));
}
