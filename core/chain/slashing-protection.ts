/**
 * Slashing protection: the local record that keeps a producer from ever signing two blocks at one
 * height, across restarts. It follows the idea of Ethereum's EIP-3076 interchange ("minimal"
 * form): per signing key, the highest height it signed and the signing root (here the block hash)
 * of that block. A block at or below that height is never signed again — except the very block
 * recorded, which the producer may publish again after a crash between recording and publishing.
 *
 * The producer reads `last` before it builds and signs, and `record`s the signed block before it
 * adds or publishes it (docs/chain.md "Slashing protection"). The record lives on the store
 * port; the Node host keeps it in LevelDB in the data directory, each write synced to disk.
 *
 * Store layout: 'P' ‖ producer (32 bytes) → height ‖ hash ‖ the signed block's wire form.
 */
import { bytesEqual, concatBytes } from '../encoding/bytes.ts';
import { bytes32, decode, encode, struct, uint53, varBytes } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { type Block, decodeBlock } from '../ledger/block.ts';
import type { KeyValueStore } from '../store/kv.ts';

const P = 0x50;
// A block's wire form stays under this (1,024 transactions of at most 1,024 bytes, and the header).
const MAX_RECORDED_BLOCK_BYTES = 2 * 1024 * 1024;

const recordCodec = struct({ height: uint53, hash: bytes32, block: varBytes(MAX_RECORDED_BLOCK_BYTES) }, 'signed block record');

/** The last block a key signed. */
export interface SignedRecord {
  readonly height: number;
  readonly hash: Uint8Array;
  readonly block: Block;
}

/** The record forbids signing this block: the key already signed another at this height or above. */
export class SlashingProtectionError extends MeshError {
  readonly record: SignedRecord;

  constructor(record: SignedRecord, height: number) {
    super(
      'already-signed',
      `this key already signed block ${record.height} (${toHex(record.hash).slice(0, 16)}…); it signs nothing at height ${height}, at or below that`,
    );
    this.record = record;
  }
}

export class SlashingProtection {
  readonly #store: KeyValueStore;
  readonly #network: string;
  readonly #last = new Map<string, SignedRecord | null>();
  #queue: Promise<unknown> = Promise.resolve();

  /** Over `store`, for blocks of `network` (a store holds one network's record). */
  constructor(store: KeyValueStore, network: string) {
    this.#store = store;
    this.#network = network;
  }

  /** The last block `producer` signed, as recorded (null: none). */
  async last(producer: Uint8Array): Promise<SignedRecord | null> {
    const id = toHex(producer);
    const cached = this.#last.get(id);
    if (cached !== undefined) return cached;
    const bytes = await this.#store.get(concatBytes(Uint8Array.of(P), producer));
    const value = bytes === undefined ? null : decode(recordCodec, bytes);
    const record = value === null ? null : { height: value.height, hash: value.hash, block: decodeBlock(this.#network, value.block) };
    this.#last.set(id, record);
    return record;
  }

  /**
   * Records `block` as signed by its producer, durably, before it leaves the node. Throws
   * SlashingProtectionError when the producer signed another block at its height or above; the
   * block already recorded passes again. One at a time, so two calls never both pass.
   */
  record(block: Block): Promise<void> {
    const run = this.#queue.then(() => this.#record(block));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #record(block: Block): Promise<void> {
    const { producer, height } = block.header;
    const last = await this.last(producer);
    if (last !== null && height <= last.height) {
      if (height === last.height && bytesEqual(last.hash, block.hash)) return;
      throw new SlashingProtectionError(last, height);
    }
    await this.#store.batch([
      { type: 'put', key: concatBytes(Uint8Array.of(P), producer), value: encode(recordCodec, { height, hash: block.hash, block: block.bytes }) },
    ]);
    this.#last.set(toHex(producer), { height, hash: block.hash, block });
  }
}
