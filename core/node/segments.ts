/**
 * Light-node segments on mesh-segments: the state at a checkpoint block, served in pieces.
 *
 * A light node (the browser's, or `mode: 'light'`) does not replay the chain from genesis. It takes a
 * checkpoint it trusts (a block hash its peers agree on, or a configured one), asks a full node for
 * the state at that block in segments of at most 1 MiB, and opens its chain from it with
 * `Chain.openFromSnapshot`, which accepts the state only if it hashes to the checkpoint's state_root.
 * Blocks after the checkpoint then come by ordinary sync. A server answers from the blocks it holds;
 * it sorts the snapshot's entries by key so that every segment of one checkpoint cuts the same list.
 */
import type { Chain, Snapshot } from '../chain/chain.ts';
import { type Random, systemRandom } from '../crypto/random.ts';
import { bytesEqual, compareBytes } from '../encoding/bytes.ts';
import { array, bytes32, decode, encode, fixedBytes, type Infer, struct, uint53, varBytes, variant } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { type Block, decodeBlock } from '../ledger/block.ts';
import type { ChainParams } from '../ledger/params.ts';
import { type GossipMessage, type Network, TOPICS, type Verdict } from '../net/network.ts';
import { type Clock, systemClock } from '../time/clock.ts';
import { ServeBudget } from './serve-budget.ts';

/** Bytes of state entries in one segment (gossip frames are 4 MiB). */
export const MAX_SEGMENT_BYTES = 1024 * 1024;
const MAX_SEGMENT_ENTRIES = 65_536;
// A snapshot of another checkpoint copies and rewinds the whole state: at most one per this interval.
const SNAPSHOT_EVERY_MS = 10_000;

const entryCodec = struct({ key: varBytes(1_024), value: varBytes(1 << 16) }, 'state entry');

export const segmentCodec = variant('kind', {
  request: [0, struct({ target: bytes32, request_id: fixedBytes(8), checkpoint: bytes32, offset: uint53 }, 'segment request')],
  response: [
    1,
    struct(
      {
        requester: bytes32,
        request_id: fixedBytes(8),
        block: varBytes(4 * 1024 * 1024),
        total: uint53,
        offset: uint53,
        entries: array(entryCodec, MAX_SEGMENT_ENTRIES),
      },
      'segment response',
    ),
  ],
});

export type SegmentMessage = Infer<typeof segmentCodec>;

/** A snapshot could not be fetched (no answer, or an answer that does not fit the checkpoint). */
export class SegmentError extends MeshError {}

type Response = Extract<SegmentMessage, { kind: 'response' }>;

/**
 * Serves segments of the checkpoints its chain holds, and fetches them. A light node that has no
 * chain yet makes one with `chain` null to fetch its starting state.
 */
export class Segments {
  readonly #chain: Chain | null;
  readonly #params: ChainParams;
  readonly #network: Network;
  readonly #clock: Clock;
  readonly #random: Random;
  // The last snapshot served: light nodes fetching one checkpoint ask for it many times.
  #cached: { hash: string; block: Block; entries: (readonly [Uint8Array, Uint8Array])[] } | null = null;
  #lastSnapshotAt = -Infinity;
  readonly #waiting = new Map<string, (response: Response, from: Uint8Array) => void>();

  readonly #segmentBytes: number;
  readonly #budget: ServeBudget;

  /**
   * `serveBytesPerSecond`: bytes of answers per requester and second (default 4 MiB); all
   * requesters together get four times that. `clock` and `random` default to the system's.
   */
  constructor(
    network: Network,
    params: ChainParams,
    chain: Chain | null,
    options: { segmentBytes?: number; serveBytesPerSecond?: number; clock?: Clock; random?: Random } = {},
  ) {
    this.#network = network;
    this.#params = params;
    this.#chain = chain;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
    this.#segmentBytes = options.segmentBytes ?? MAX_SEGMENT_BYTES;
    const serveBytes = options.serveBytesPerSecond ?? 4 * 1024 * 1024;
    this.#budget = new ServeBudget(serveBytes, 4 * serveBytes, this.#clock);
  }

  /** Subscribes to mesh-segments. */
  start(): void {
    this.#network.handle(TOPICS.segments, (m) => this.#onMessage(m));
  }

  async #onMessage(message: GossipMessage): Promise<Verdict> {
    let segment: SegmentMessage;
    try {
      segment = decode(segmentCodec, message.data);
    } catch {
      return 'reject';
    }
    // Requests and answers go between direct peers, as sync's do (the light node asks the host it is
    // connected to): one addressed to another node is not passed on, or a 1 MiB segment for one
    // light node would cross the whole mesh.
    if (segment.kind === 'request') {
      if (!bytesEqual(segment.target, this.#network.self)) return 'ignore';
      await this.#serve(message.origin, segment);
      return 'ignore';
    }
    if (!bytesEqual(segment.requester, this.#network.self)) return 'ignore';
    this.#waiting.get(toHex(segment.request_id))?.(segment, message.origin);
    return 'ignore';
  }

  async #serve(requester: Uint8Array, request: Extract<SegmentMessage, { kind: 'request' }>): Promise<void> {
    // A request costs a few bytes, its answer up to a segment and a block sent to every peer: held
    // to a budget per requester and in all. A segment's worth is reserved now, the rest settled below.
    const who = toHex(requester);
    if (!this.#budget.reserve(who, this.#segmentBytes)) return;
    let sent = 0;
    try {
      sent = await this.#answer(requester, request);
    } finally {
      this.#budget.refund(who, this.#segmentBytes - sent);
    }
  }

  // Publishes the segment `request` asks for; the bytes sent (0 when this node cannot answer).
  async #answer(requester: Uint8Array, request: Extract<SegmentMessage, { kind: 'request' }>): Promise<number> {
    const snapshot = await this.#snapshot(request.checkpoint);
    if (snapshot === null) return 0;
    const entries: { key: Uint8Array; value: Uint8Array }[] = [];
    let bytes = 0;
    for (let i = request.offset; i < snapshot.entries.length && entries.length < MAX_SEGMENT_ENTRIES; i++) {
      const [key, value] = snapshot.entries[i]!;
      if (entries.length > 0 && bytes + key.length + value.length > this.#segmentBytes) break;
      entries.push({ key, value });
      bytes += key.length + value.length;
    }
    const response: SegmentMessage = {
      kind: 'response',
      requester,
      request_id: request.request_id,
      block: snapshot.block.bytes,
      total: snapshot.entries.length,
      offset: request.offset,
      entries,
    };
    const wire = encode(segmentCodec, response);
    await this.#network.publish(TOPICS.segments, wire);
    return wire.length;
  }

  // The snapshot at a main-chain block this node holds, or null.
  async #snapshot(checkpoint: Uint8Array): Promise<{ block: Block; entries: (readonly [Uint8Array, Uint8Array])[] } | null> {
    const chain = this.#chain;
    if (chain === null) return null;
    const hash = toHex(checkpoint);
    if (this.#cached?.hash === hash) return this.#cached;
    if (this.#clock.now() - this.#lastSnapshotAt < SNAPSHOT_EVERY_MS) return null;
    const block = await chain.blockByHash(checkpoint);
    if (block === undefined || block.header.height < chain.base) return null;
    const main = await chain.hashAt(block.header.height);
    if (main === undefined || !bytesEqual(main, checkpoint)) return null;
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

  #ask(peer: Uint8Array, checkpoint: Uint8Array, offset: number, timeoutMs: number): Promise<Response> {
    const id = this.#random.bytes(8);
    const key = toHex(id);
    return new Promise<Response>((resolve, reject) => {
      const timer = this.#clock.setTimeout(() => {
        this.#waiting.delete(key);
        reject(new SegmentError('timeout', `no segment from ${toHex(peer).slice(0, 16)}… in ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiting.set(key, (response, from) => {
        if (!bytesEqual(from, peer)) return;
        timer.cancel();
        this.#waiting.delete(key);
        resolve(response);
      });
      const request: SegmentMessage = { kind: 'request', target: peer, request_id: id, checkpoint, offset };
      this.#network.publish(TOPICS.segments, encode(segmentCodec, request)).catch((error: unknown) => {
        timer.cancel();
        this.#waiting.delete(key);
        reject(error);
      });
    });
  }
}
