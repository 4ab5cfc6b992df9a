/**
 * Blocks: a signed header and up to MAX_TXS_PER_BLOCK transactions.
 *
 * Wire form: header ‖ signature ‖ the transactions back to back (their count is the header's
 * tx_count). A header that declares more than MAX_TXS_PER_BLOCK is refused before any transaction
 * is decoded, let alone any signature checked.
 */

import { SIGNATURE_LENGTH, type SigningKey } from '../crypto/ed25519.ts';
import { coreSha256, type Sha256Hasher } from '../crypto/sha256.ts';
import { ensureBytes } from '../encoding/bytes.ts';
import { decode, encode, Reader, Writer } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { type ErrorTable, RuledError } from '../errors.ts';
import { blockHash, blockSigningBytes, HEADER_VERSION, type Header, headerCodec } from './header.ts';
import { EMPTY_ROOT } from './merkle.ts';
import { type ChainParams, MAX_TXS_PER_BLOCK } from './params.ts';
import { readTx, type Tx } from './tx.ts';

// A block that breaks a rule is invalid whoever relays it, and for good (chain.ts remembers it).
const INVALID = { verdict: 'reject' } as const;

/**
 * Every rule an InvalidBlockError names, with its gossip verdict. A block ahead of the local clock
 * is the one exception: it may be valid a moment later, so neither its relay nor its sender is blamed.
 */
export const BLOCK_RULES = {
  'bad-header': INVALID,
  'too-many-txs': INVALID,
  'bad-version': INVALID,
  'truncated-signature': INVALID,
  'bad-tx-encoding': INVALID,
  'trailing-bytes': INVALID,
  'bad-height': INVALID,
  'bad-prev-hash': INVALID,
  'bad-state-root': INVALID,
  'bad-tx-count': INVALID,
  'bad-tx-root': INVALID,
  'duplicate-tx': INVALID,
  'producer-too-early': INVALID,
  'reward-not-first': INVALID,
  'timestamp-not-increasing': INVALID,
  'tx-rule': INVALID,
  'bad-block-signature': INVALID,
  'bad-tx-signature': INVALID,
  'known-invalid': INVALID,
  'timestamp-in-future': { verdict: 'ignore' },
} as const satisfies ErrorTable;

export type BlockRuleCode = keyof typeof BLOCK_RULES;

/** A block is malformed or breaks a block rule; `code` names the rule. */
export class InvalidBlockError extends RuledError<typeof BLOCK_RULES> {
  constructor(code: BlockRuleCode, message: string) {
    super(BLOCK_RULES, code, message);
  }
}

export interface Block {
  readonly header: Header;
  readonly signature: Uint8Array;
  readonly txs: readonly Tx[];
  /** The block's hash (see header.ts). */
  readonly hash: Uint8Array;
  /** The wire form. */
  readonly bytes: Uint8Array;
}

/** The spec's block object (node-api.md §2 "Block"), as pushed on /blocks/stream. */
export interface BlockEvent {
  index: number;
  hash: string;
  prev_hash: string;
  timestamp: number;
  miner: string;
  tx_count: number;
  nonce: number;
}

/**
 * The Merkle root of a block's transaction ids: leaves are the ids, a node is
 * SHA-256(0x01 ‖ left ‖ right), an odd node at the end of a level moves up unchanged, and the
 * empty block's root is 32 zero bytes.
 */
export function txRoot(ids: readonly Uint8Array[], sha: Sha256Hasher = coreSha256): Uint8Array {
  if (ids.length === 0) return EMPTY_ROOT.slice();
  // Level by level in one array, each level hashed in one batch into the front of it: a node's
  // hash cost less than allocating it on its own.
  let count = ids.length;
  const level = new Uint8Array(32 * count);
  for (let i = 0; i < count; i++) level.set(ids[i]!, 32 * i);
  const preimages = new Uint8Array(65 * (count >>> 1));
  const ends: number[] = [];
  while (count > 1) {
    const pairs = count >>> 1;
    ends.length = 0;
    for (let p = 0; p < pairs; p++) {
      preimages[65 * p] = 1;
      preimages.set(level.subarray(64 * p, 64 * p + 64), 65 * p + 1);
      ends.push(65 * (p + 1));
    }
    sha.batch(preimages, ends, level);
    // An odd node at the end moves up unchanged.
    if (count % 2 === 1) level.copyWithin(32 * pairs, 32 * (count - 1), 32 * count);
    count -= pairs;
  }
  return level.slice(0, 32);
}

function assemble(network: string, header: Header, signature: Uint8Array, txs: readonly Tx[], sha: Sha256Hasher): Block {
  const w = new Writer();
  headerCodec.write(w, header);
  w.bytes(signature);
  for (const tx of txs) w.bytes(tx.bytes);
  return { header, signature, txs, hash: blockHash(network, header, sha), bytes: w.finish() };
}

/** Decodes a block (its hash and tx ids by `sha`). Throws InvalidBlockError 'too-many-txs' before reading any transaction. */
export function decodeBlock(network: string, bytes: Uint8Array, sha: Sha256Hasher = coreSha256): Block {
  // The block's own copy, read in place: its transactions' bytes are views of it, one copy of a
  // block's bytes in all (not one more per transaction).
  const own = ensureBytes(bytes, 'bytes').slice();
  const r = new Reader(own);
  let header: Header;
  try {
    header = headerCodec.read(r);
  } catch (error) {
    throw new InvalidBlockError('bad-header', `block header: ${(error as Error).message}`);
  }
  if (header.tx_count > MAX_TXS_PER_BLOCK) {
    throw new InvalidBlockError('too-many-txs', `block declares ${header.tx_count} transactions, more than ${MAX_TXS_PER_BLOCK}`);
  }
  if (header.version !== HEADER_VERSION) {
    throw new InvalidBlockError('bad-version', `block version ${header.version} is not ${HEADER_VERSION}`);
  }
  if (r.remaining < SIGNATURE_LENGTH) {
    throw new InvalidBlockError('truncated-signature', `block signature needs ${SIGNATURE_LENGTH} bytes, ${r.remaining} remain`);
  }
  const signature = r.bytes(SIGNATURE_LENGTH, 'block signature');
  const txs: Tx[] = [];
  try {
    for (let i = 0; i < header.tx_count; i++) txs.push(readTx(r, sha));
  } catch (error) {
    throw new InvalidBlockError('bad-tx-encoding', `transaction ${txs.length}: ${(error as Error).message}`);
  }
  if (r.remaining !== 0) throw new InvalidBlockError('trailing-bytes', `${r.remaining} bytes after the last transaction`);
  // The decoder takes canonical encodings only, so the bytes read are the block's encoding: copied,
  // not written again.
  return { header, signature, txs, hash: blockHash(network, header, sha), bytes: own };
}

/** Builds and signs a block over `txs` with the given header fields. */
export async function signBlock(
  network: string,
  fields: Omit<Header, 'version' | 'tx_count' | 'tx_root'>,
  txs: readonly Tx[],
  key: SigningKey,
  sha: Sha256Hasher = coreSha256,
): Promise<Block> {
  if (txs.length > MAX_TXS_PER_BLOCK) {
    throw new InvalidBlockError('too-many-txs', `${txs.length} transactions, more than ${MAX_TXS_PER_BLOCK}`);
  }
  const header: Header = {
    version: HEADER_VERSION,
    ...fields,
    tx_count: txs.length,
    tx_root: txRoot(
      txs.map((t) => t.id),
      sha,
    ),
  };
  // Round-trip through the codec so a bad field fails here, not in a peer's decoder.
  decode(headerCodec, encode(headerCodec, header));
  const signature = await key.sign(blockSigningBytes(network, header));
  return assemble(network, header, signature, txs, sha);
}

/** A network's genesis block: fixed by the code, so separately started nodes share it. */
export function genesisBlock(params: ChainParams): Block {
  const header: Header = {
    version: HEADER_VERSION,
    height: 0,
    prev_hash: new Uint8Array(32),
    timestamp_ms: params.genesisTimestampMs,
    producer: new Uint8Array(32),
    tx_count: 0,
    tx_root: EMPTY_ROOT.slice(),
    state_root: EMPTY_ROOT.slice(),
  };
  return assemble(params.network, header, new Uint8Array(SIGNATURE_LENGTH), [], coreSha256);
}

/** The spec's block object. */
export function blockEvent(block: Pick<Block, 'header' | 'hash'>): BlockEvent {
  return {
    index: block.header.height,
    hash: toHex(block.hash),
    prev_hash: toHex(block.header.prev_hash),
    timestamp: Math.floor(block.header.timestamp_ms / 1000),
    miner: toHex(block.header.producer),
    tx_count: block.header.tx_count,
    // Vestigial, as is difficulty: production is by weight, not proof of work.
    nonce: 0,
  };
}
