/**
 * Light-node segments on the RPC protocol `sync.segments`: the state at a checkpoint block, served
 * in pieces, each answered to its requester only.
 *
 * A light node (the browser's, or `mode: 'light'`) does not replay the chain from genesis. It takes a
 * checkpoint it trusts (a block hash its peers agree on, or a configured one), asks a full node for
 * the state at that block in segments of at most 1 MiB, and opens its chain from it with
 * `Chain.openFromSnapshot`, which accepts the state only if it hashes to the checkpoint's state_root.
 * Blocks after the checkpoint then come by ordinary sync. A server answers from the blocks it holds;
 * it sorts the snapshot's entries by key so that every segment of one checkpoint cuts the same list.
 */
import type { Chain, Snapshot } from '../chain/chain.ts';
import { bytesEqual, compareBytes } from '../encoding/bytes.ts';
import { array, bytes32, decode, encode, type Infer, struct, uint53, varBytes } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { MeshError, messageOf } from '../errors.ts';
import { type Block, decodeBlock } from '../ledger/block.ts';
import type { ChainParams } from '../ledger/params.ts';
import { PeerBusyError, RemoteError, RequestTimeoutError } from '../net/errors.ts';
import type { Network, RpcRequest } from '../net/network.ts';
import { type Clock, sleep, systemClock } from '../time/clock.ts';
import { SERVE_BYTES_PER_SECOND, ServeBudget } from './serve-budget.ts';

/** The RPC protocol of light-node segments. */
export const SEGMENTS_PROTOCOL = 'sync.segments';

/** Bytes of state entries in one segment. */
export const MAX_SEGMENT_BYTES = 1024 * 1024;
const MAX_SEGMENT_ENTRIES = 65_536;
const MAX_BLOCK_BYTES = 4 * 1024 * 1024;
// The bound on an answer: the block, the entries with their length prefixes, and the rest.
const MAX_SEGMENT_ANSWER_BYTES = MAX_BLOCK_BYTES + 2 * MAX_SEGMENT_BYTES;
// A snapshot of another checkpoint copies and rewinds the whole state: at most one per this interval.
const SNAPSHOT_EVERY_MS = 10_000;
// A busy server is asked again after this long, this many times before the fetch gives up on it.
const BUSY_BACKOFF_MS = 1_000;
const BUSY_TRIES = 10;

const entryCodec = struct({ key: varBytes(1_024), value: varBytes(1 << 16) }, 'state entry');

/** `sync.segments` request: the entries of the state at `checkpoint` from `offset` on. */
export const segmentRequestCodec = struct({ checkpoint: bytes32, offset: uint53 }, 'segment request');

/** `sync.segments` answer: the checkpoint block, how many entries its state has, and some of them from `offset`. */
export const segmentCodec = struct(
  {
    block: varBytes(MAX_BLOCK_BYTES),
    total: uint53,
    offset: uint53,
    entries: array(entryCodec, MAX_SEGMENT_ENTRIES),
  },
  'segment',
);

export type SegmentRequest = Infer<typeof segmentRequestCodec>;
export type Segment = Infer<typeof segmentCodec>;

/** A snapshot could not be fetched or served (no answer, an answer that does not fit the checkpoint, a checkpoint not held). */
export class SegmentError extends MeshError {}

/**
 * Serves segments of the checkpoints its chain holds, and fetches them. A light node that has no
 * chain yet makes one with `chain` null to fetch its starting state.
 */
export class Segments {
  readonly #chain: Chain | null;
  readonly #params: ChainParams;
  readonly #network: Network;
  readonly #clock: Clock;
  // The last snapshot served: light nodes fetching one checkpoint ask for it many times.
  #cached: { hash: string; block: Block; entries: (readonly [Uint8Array, Uint8Array])[] } | null = null;
  #lastSnapshotAt = -Infinity;
  #unserve: (() => void) | null = null;

  readonly #segmentBytes: number;
  readonly #budget: ServeBudget;

  /**
   * `budget`: the bytes answered per requester and in all (shared with sync); default, a budget of
   * its own of `serveBytesPerSecond` (4 MiB) per requester. `clock` defaults to the system's.
   */
  constructor(
    network: Network,
    params: ChainParams,
    chain: Chain | null,
    options: { segmentBytes?: number; budget?: ServeBudget; serveBytesPerSecond?: number; clock?: Clock } = {},
  ) {
    this.#network = network;
    this.#params = params;
    this.#chain = chain;
    this.#clock = options.clock ?? systemClock;
    this.#segmentBytes = options.segmentBytes ?? MAX_SEGMENT_BYTES;
    this.#budget = options.budget ?? ServeBudget.perRequester(options.serveBytesPerSecond ?? SERVE_BYTES_PER_SECOND, this.#clock);
  }

  /** Serves `sync.segments` (a node with a chain). */
  start(): void {
    if (this.#chain === null) return;
    this.#unserve = this.#network.serve(SEGMENTS_PROTOCOL, (request) => this.#serve(request), {
      maxRequestBytes: 64,
      maxResponseBytes: MAX_SEGMENT_ANSWER_BYTES,
    });
  }

  stop(): void {
    this.#unserve?.();
    this.#unserve = null;
  }

  async #serve({ peer, data }: RpcRequest): Promise<Uint8Array> {
    let request: SegmentRequest;
    try {
      request = decode(segmentRequestCodec, data);
    } catch (error) {
      this.#network.penalise(peer, 'sent an undecodable segment request');
      throw error;
    }
    // A request costs a few bytes, its answer up to a segment and a block: held to a budget per
    // requester and in all, shared with sync. A segment's worth is reserved now, the rest settled below.
    const who = toHex(peer);
    if (!this.#budget.reserve(who, MAX_SEGMENT_ANSWER_BYTES)) throw new PeerBusyError(this.#budget.refusal(who));
    let answer: Uint8Array | null = null;
    try {
      answer = await this.#answer(request);
      return answer;
    } finally {
      this.#budget.refund(who, MAX_SEGMENT_ANSWER_BYTES - (answer?.length ?? 0));
    }
  }

  // The segment `request` asks for; refused when this node does not hold the checkpoint on its main
  // chain, as busy when it computed another checkpoint's snapshot moments ago.
  async #answer(request: SegmentRequest): Promise<Uint8Array> {
    const snapshot = await this.#snapshot(request.checkpoint);
    const entries: { key: Uint8Array; value: Uint8Array }[] = [];
    let bytes = 0;
    for (let i = request.offset; i < snapshot.entries.length && entries.length < MAX_SEGMENT_ENTRIES; i++) {
      const [key, value] = snapshot.entries[i]!;
      if (entries.length > 0 && bytes + key.length + value.length > this.#segmentBytes) break;
      entries.push({ key, value });
      bytes += key.length + value.length;
    }
    return encode(segmentCodec, { block: snapshot.block.bytes, total: snapshot.entries.length, offset: request.offset, entries });
  }

  // The snapshot at a main-chain block this node holds.
  async #snapshot(checkpoint: Uint8Array): Promise<{ block: Block; entries: (readonly [Uint8Array, Uint8Array])[] }> {
    const chain = this.#chain!;
    const hash = toHex(checkpoint);
    if (this.#cached?.hash === hash) return this.#cached;
    const block = await chain.blockByHash(checkpoint);
    const main = block === undefined ? undefined : await chain.hashAt(block.header.height);
    if (block === undefined || block.header.height < chain.base || main === undefined || !bytesEqual(main, checkpoint)) {
      throw new SegmentError('not-held', `this node holds no main-chain block ${hash.slice(0, 16)}… to serve the state of`);
    }
    if (this.#clock.now() - this.#lastSnapshotAt < SNAPSHOT_EVERY_MS) {
      throw new PeerBusyError(`this node computes the state of another checkpoint at most once every ${SNAPSHOT_EVERY_MS / 1000} s`);
    }
    this.#lastSnapshotAt = this.#clock.now();
    const snapshot = await chain.snapshotAt(block.header.height);
    const entries = [...snapshot.entries].sort((a, b) => compareBytes(a[0], b[0]));
    this.#cached = { hash, block: snapshot.block, entries };
    return this.#cached;
  }

  /**
   * Fetches the state at `checkpoint` from `peer`, segment by segment. The result is only as good as
   * its check: pass it to `Chain.openFromSnapshot` with the same trusted hash.
   */
  async fetch(peer: Uint8Array, checkpoint: Uint8Array, timeoutMs = 10_000): Promise<Snapshot> {
    const entries: (readonly [Uint8Array, Uint8Array])[] = [];
    let block: Block | undefined;
    let total = Infinity;
    while (entries.length < total) {
      const response = await this.#ask(peer, checkpoint, entries.length, timeoutMs);
      const served = decodeBlock(this.#params.network, response.block, this.#chain?.crypto.sha256);
      if (!bytesEqual(served.hash, checkpoint)) throw new SegmentError('wrong-block', 'the peer served another block than the checkpoint');
      if (response.offset !== entries.length || (response.entries.length === 0 && response.total > entries.length)) {
        throw new SegmentError('bad-segment', `the peer served entries from ${response.offset}, not ${entries.length}`);
      }
      block = served;
      total = response.total;
      for (const e of response.entries) entries.push([e.key, e.value]);
      if (entries.length > total) throw new SegmentError('bad-segment', 'the peer served more entries than it announced');
    }
    if (block === undefined) throw new SegmentError('bad-segment', 'no segment arrived');
    return { block, entries };
  }

  // One segment from `peer`; a busy peer is asked again after a pause, a few times.
  async #ask(peer: Uint8Array, checkpoint: Uint8Array, offset: number, timeoutMs: number): Promise<Segment> {
    const request = encode(segmentRequestCodec, { checkpoint, offset });
    for (let tries = 1; ; tries++) {
      try {
        const answer = await this.#network.request(peer, SEGMENTS_PROTOCOL, request, { timeoutMs, maxResponseBytes: MAX_SEGMENT_ANSWER_BYTES });
        try {
          return decode(segmentCodec, answer);
        } catch (error) {
          throw new SegmentError('bad-segment', `the segment from ${toHex(peer).slice(0, 16)}… does not decode: ${messageOf(error)}`);
        }
      } catch (error) {
        if (error instanceof PeerBusyError && tries < BUSY_TRIES) {
          await sleep(this.#clock, BUSY_BACKOFF_MS);
          continue;
        }
        const who = `${toHex(peer).slice(0, 16)}…`;
        if (error instanceof RequestTimeoutError) throw new SegmentError('timeout', `no segment from ${who} in ${timeoutMs} ms`);
        // The server's reason (it holds no such block on its main chain, say) comes with it.
        if (error instanceof RemoteError) throw new SegmentError('not-served', `${who} did not serve the state: ${error.message}`);
        throw error;
      }
    }
  }
}
