/**
 * The chain: blocks, the tip state and fork choice over the key-value port.
 *
 * Fork choice (node-api.md "Ledger rules" 7): a longer valid competing branch replaces the local
 * chain; an equal or shorter one is kept aside; a branch with an invalid block aborts the switch and
 * leaves chain, state and store exactly as they were; a branch that does not link to a block this
 * node holds is rejected. Every change — a block, or a whole reorganisation with its state changes,
 * undo records and read-model entries — is one atomic batch, so a crash at any moment leaves a
 * store that reopens to a consistent chain.
 *
 * Store layout (docs/chain.md):
 *   'B' hash → block         'H' height(8) → hash of the main-chain block
 *   'U' height(8) → undo     'S' state key → value (the tip's state)
 *   'M' 'tip' → height(8) hash     'M' 'base' → lowest held height (light nodes prune below it)
 *   'T' 'Y' 'I' 'W' → read models (readmodel.ts)
 */

import { RecentSet } from '../collections/recent-set.ts';
import { type CryptoBackends, coreCrypto } from '../crypto/backends.ts';
import { verify, verifyBatch } from '../crypto/ed25519.ts';
import { bytesEqual, concatBytes } from '../encoding/bytes.ts';
import { array, bytes32, decode, encode, option, Reader, struct, uint53, varBytes } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { type ErrorTable, MeshError, RuledError } from '../errors.ts';
import type { TxEffect } from '../ledger/apply.ts';
import { type Block, type BlockEvent, blockEvent, decodeBlock, genesisBlock, InvalidBlockError } from '../ledger/block.ts';
import { blockSigningBytes, headerCodec, type SignedHeader, signedHeaderCodec } from '../ledger/header.ts';
import { type ChainParams, LIGHT_RETENTION_BLOCKS } from '../ledger/params.ts';
import { type Change, LedgerState } from '../ledger/state.ts';
import { type Applied, applyVerifiedBlock, checkContents, findInvalidSignatures, headerMessage, type ParentInfo } from '../ledger/validate.ts';
import { type KeyValueStore, prefixRange, type StagedBatch } from '../store/kv.ts';
import { type History, history, indexBlock, listTransactions, PendingBatch, type TxListItem, txHeight, unindexBlocks } from './readmodel.ts';

// A block that builds on what this node does not hold (or no longer holds): it is behind or on
// another branch, which is no fault of the sender, and the sender holds the parent it built on.
const BEHIND = { verdict: 'ignore' } as const;

/**
 * Every code a ForkChoiceError carries. Those with a gossip verdict are what a gossiped block may
 * meet; the node asks the sender for the blocks it lacks. The rest concern sync answers,
 * snapshots and reads, and never decide a gossip verdict.
 */
export const FORK_CHOICE_ERRORS = {
  'unknown-parent': BEHIND,
  'too-deep': BEHIND,
  'no-common-ancestor': {},
  'branch-too-long': {},
  'not-consecutive': {},
  'not-held': {},
  'store-not-empty': {},
  'snapshot-checkpoint': {},
  'snapshot-root': {},
  'snapshot-signature': {},
} as const satisfies ErrorTable;

export type ForkChoiceErrorCode = keyof typeof FORK_CHOICE_ERRORS;

/** A branch cannot be adopted: no common ancestor, an unknown parent, or deeper than this node holds. */
export class ForkChoiceError extends RuledError<typeof FORK_CHOICE_ERRORS> {
  /** The block builds on what this node does not hold: the peer that sent it can fill the gap. */
  readonly behind: boolean;

  constructor(code: ForkChoiceErrorCode, message: string) {
    super(FORK_CHOICE_ERRORS, code, message);
    this.behind = FORK_CHOICE_ERRORS[code] === BEHIND;
  }
}

/** The store does not hold a consistent chain (it was written by something else, or damaged). */
export class CorruptStoreError extends MeshError {}

export type ChainEvent =
  | { readonly type: 'connected'; readonly block: Block; readonly effects: readonly TxEffect[] }
  | { readonly type: 'disconnected'; readonly block: Block }
  | { readonly type: 'equivocation'; readonly evidence: readonly [SignedHeader, SignedHeader] };

/** What `addBlock` / `addBranch` did. */
export type AddOutcome = 'extended' | 'reorganized' | 'side' | 'known';

export interface ChainOptions {
  readonly store: KeyValueStore;
  readonly params: ChainParams;
  /** 'light' keeps only the last LIGHT_RETENTION_BLOCKS blocks; 'full' (default) keeps all. */
  readonly mode?: 'full' | 'light';
  /** Blocks a light node keeps (default LIGHT_RETENTION_BLOCKS; smaller only in tests). */
  readonly retainBlocks?: number;
  /** What hashes and verifies blocks and transactions, and the state (default: the core's own). */
  readonly crypto?: CryptoBackends;
}

/** The state at a held block, with the block: what a light node starts from. */
export interface Snapshot {
  readonly block: Block;
  readonly entries: readonly (readonly [Uint8Array, Uint8Array])[];
}

/**
 * A valid competing branch level with the tip (`Chain.levelBranch`): its blocks from the fork, its
 * tip, and the state after it (the preparation's: read it, and leave it as it was).
 */
export interface LevelBranch {
  readonly hash: Uint8Array;
  readonly forkHeight: number;
  readonly blocks: readonly Block[];
  readonly tip: TipInfo;
  readonly state: LedgerState;
}

export interface TipInfo extends ParentInfo {
  readonly block: Block;
}

const B = 0x42;
const H = 0x48;
const U = 0x55;
const S = 0x53;
const M = 0x4d;
const META_TIP = concatBytes(Uint8Array.of(M), new TextEncoder().encode('tip'));
const META_BASE = concatBytes(Uint8Array.of(M), new TextEncoder().encode('base'));
/** Itemized transactions per page (node-api.md §8). */
export const DEFAULT_TX_PAGE = 100;
export const MAX_TX_PAGE = 500;
/** Blocks per sync response (node-api.md §8). */
export const MAX_BLOCKS_PER_RESPONSE = 500;
// Heights whose blocks and undo records a reorganisation reads at once.
const REWIND_READS = 256;
// Encoded bytes of the blocks read ahead of a reorganisation (decoded, about ten times as much).
const MAX_REWIND_AHEAD_BYTES = 32 * 1024 * 1024;
// Side blocks held in memory (competing branches not yet longer than the main chain).
const MAX_SIDE_BLOCKS = 4_096;
// ... and their wire bytes. A side block is checked for its producer's signature only, and any key
// may sign one, so a peer can send as many as it likes: decoded, a block takes about ten times its
// wire size, and 4,096 blocks of 1,024 transactions would take gigabytes. 16 MiB still holds a
// reorganisation several sync answers (2 MiB each) deep; a deeper one of full blocks fails.
const MAX_SIDE_BYTES = 16 * 1024 * 1024;
// Held blocks one `prepareBranch` call applies at most (two sync answers of 500).
const MAX_PREPARED_PER_CALL = 2 * MAX_BLOCKS_PER_RESPONSE;

const h8 = (height: number): Uint8Array => encode(uint53, height);
const bKey = (hash: Uint8Array): Uint8Array => concatBytes(Uint8Array.of(B), hash);
const hKey = (height: number): Uint8Array => concatBytes(Uint8Array.of(H), h8(height));
const uKey = (height: number): Uint8Array => concatBytes(Uint8Array.of(U), h8(height));
const sKey = (key: Uint8Array): Uint8Array => concatBytes(Uint8Array.of(S), key);

// A main-chain block a reorganisation rewinds, with its undo record, both as stored: decoded only
// while used. Held decoded while a deep reorganisation's branch is fetched, 10,000 blocks and their
// records were hundreds of thousands of small objects and buffers for the collector to go through
// again and again, and made every allocation meanwhile dearer.
interface RewindStep {
  readonly height: number;
  readonly hash: Uint8Array;
  readonly bytes: Uint8Array;
  readonly undo: Uint8Array;
}

// Blocks a coming reorganisation rewinds, read while its branch is fetched (`readRewindAhead`).
interface RewindAhead {
  readonly forkHeight: number;
  readonly steps: Map<string, RewindStep>;
  next: number;
  upTo: number;
  bytes: number;
  reading: boolean;
}

// A competing branch applied ahead while sync still fetches it (`prepareBranch`): the state at the
// fork point with the branch's blocks applied so far, and the store batch of the switch to it
// against the tip it was prepared on, its writes so far staged in the store.
interface Prepared {
  readonly forkHeight: number;
  readonly tipHash: Uint8Array;
  readonly rewind: readonly RewindStep[];
  readonly state: LedgerState;
  readonly blocks: Block[];
  readonly applied: Applied[];
  readonly batch: PendingBatch;
  readonly staged: StagedBatch;
  parent: TipInfo;
  // A block did not apply: nothing past it is prepared, and the switch applies it and says why.
  broken: boolean;
  brokenAt?: Block;
}

const tipCodec = struct({ height: uint53, hash: bytes32 }, 'tip');
const undoCodec = struct(
  {
    changes: array(struct({ key: varBytes(1_024), before: option(varBytes(1 << 16)), after: option(varBytes(1 << 16)) }, 'change'), 1 << 22),
    nodes: array(bytes32, 1 << 16),
  },
  'undo',
);

function info(block: Block): TipInfo {
  return { height: block.header.height, hash: block.hash, timestampMs: block.header.timestamp_ms, block };
}

// Whether `branch` begins with `blocks`: by hash, since a branch fetched again from another peer
// is decoded anew.
function begins(branch: readonly Block[], blocks: readonly Block[]): boolean {
  return blocks.length <= branch.length && blocks.every((block, i) => block === branch[i] || bytesEqual(block.hash, branch[i]!.hash));
}

function decodeUndo(bytes: Uint8Array): { changes: Change[]; nodes: Uint8Array[] } {
  const undo = decode(undoCodec, bytes);
  return {
    changes: undo.changes.map((c) => ({ key: c.key, before: c.before ?? undefined, after: c.after ?? undefined })),
    nodes: undo.nodes,
  };
}

export class Chain {
  readonly params: ChainParams;
  /** The chain's hashing and signature backends: what decodes, signs and verifies for it. */
  readonly crypto: CryptoBackends;
  readonly mode: 'full' | 'light';
  readonly genesis: Block;
  readonly #retain: number;
  readonly #store: KeyValueStore;
  readonly #state: LedgerState;
  #tip: TipInfo;
  #base: number;
  readonly #side = new Map<string, Block>();
  #sideBytes = 0;
  readonly #invalid = new RecentSet<string>(MAX_SIDE_BLOCKS);
  // The very block objects whose contents `checkSignatures` matched against their header and whose
  // every signature it found good, so adding them checks none of it again. Kept by object, not by
  // hash: another copy with the same hash may carry another header signature.
  readonly #checkedAhead = new WeakSet<Block>();
  // First header seen per (producer, height), to spot equivocation: with its signature in their
  // wire form (decoded only when they become evidence), since the block's own signature is a view
  // that would hold the whole block.
  readonly #signedAt = new Map<string, { readonly hash: string; readonly signed: Uint8Array }>();
  readonly #listeners = new Set<(event: ChainEvent) => void>();
  #rewindAhead: RewindAhead | null = null;
  #prepared: Prepared | null = null;
  // A branch whose preparation was dropped (its tip moved) is prepared afresh only once it holds
  // twice the blocks applied then: a chain that keeps moving costs at most twice the work in all.
  #prepareAgainAt: { readonly forkHeight: number; readonly blocks: number } | null = null;
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(options: ChainOptions, state: LedgerState, tip: Block, base: number) {
    this.params = options.params;
    this.crypto = options.crypto ?? coreCrypto;
    this.mode = options.mode ?? 'full';
    this.#retain = options.retainBlocks ?? LIGHT_RETENTION_BLOCKS;
    this.genesis = genesisBlock(options.params);
    this.#store = options.store;
    this.#state = state;
    this.#tip = info(tip);
    this.#base = base;
  }

  /** Opens the chain in `store`, writing the network's genesis block on first use. */
  static async open(options: ChainOptions): Promise<Chain> {
    const { store, params } = options;
    const { sha256 } = options.crypto ?? coreCrypto;
    const genesis = genesisBlock(params);
    const tipBytes = await store.get(META_TIP);
    if (tipBytes === undefined) {
      await store.batch([
        { type: 'put', key: bKey(genesis.hash), value: genesis.bytes },
        { type: 'put', key: hKey(0), value: genesis.hash },
        { type: 'put', key: META_TIP, value: encode(tipCodec, { height: 0, hash: genesis.hash }) },
        { type: 'put', key: META_BASE, value: h8(0) },
      ]);
      return new Chain(options, new LedgerState(sha256), genesis, 0);
    }
    const tip = decode(tipCodec, tipBytes);
    const base = decode(uint53, (await store.get(META_BASE)) ?? h8(0));
    const first = await store.get(hKey(base));
    const tipBlockBytes = await store.get(bKey(tip.hash));
    if (first === undefined || tipBlockBytes === undefined) throw new CorruptStoreError('missing-block', 'the store lacks its tip or base block');
    if (base === 0 && !bytesEqual(first, genesis.hash)) {
      throw new CorruptStoreError('other-network', `the store holds another network's chain, not ${params.network}`);
    }
    const entries: [Uint8Array, Uint8Array][] = [];
    for await (const [k, v] of store.entries(prefixRange(Uint8Array.of(S)))) entries.push([k.subarray(1), v]);
    const state = LedgerState.fromEntries(entries, sha256);
    const tipBlock = decodeBlock(params.network, tipBlockBytes, sha256);
    if (!bytesEqual(state.stateRoot(), tipBlock.header.state_root)) {
      throw new CorruptStoreError('state-root', "the stored state does not match the tip block's state_root");
    }
    return new Chain(options, state, tipBlock, base);
  }

  /**
   * Starts a light node from a peer's snapshot at the checkpoint `trustedHash` — a block the caller
   * already knows is on the best chain (from the headers its peers agree on, or a configured
   * checkpoint), never one the serving peer chose. The block must be that one, and the snapshot's
   * state must hash to its state_root; `store` must be empty.
   */
  static async openFromSnapshot(options: ChainOptions, snapshot: Snapshot, trustedHash: Uint8Array): Promise<Chain> {
    const { store, params } = options;
    const { sha256, ed25519 } = options.crypto ?? coreCrypto;
    if ((await store.get(META_TIP)) !== undefined) throw new ForkChoiceError('store-not-empty', 'a snapshot can only start an empty store');
    const block = snapshot.block;
    if (!bytesEqual(block.hash, trustedHash)) {
      throw new ForkChoiceError('snapshot-checkpoint', `the snapshot is at block ${toHex(block.hash).slice(0, 16)}…, not the trusted checkpoint`);
    }
    checkContents(block, sha256);
    if (block.header.height === 0 && !bytesEqual(block.hash, genesisBlock(params).hash)) {
      throw new ForkChoiceError('snapshot-checkpoint', 'a snapshot at height 0 must be the genesis block');
    }
    const state = LedgerState.fromEntries(snapshot.entries, sha256);
    if (!bytesEqual(state.stateRoot(), block.header.state_root)) {
      throw new ForkChoiceError('snapshot-root', `the snapshot does not hash to the state_root of block ${block.header.height}`);
    }
    if (block.header.height > 0 && !(await verify(block.header.producer, blockSigningBytes(params.network, block.header), block.signature, ed25519))) {
      throw new ForkChoiceError('snapshot-signature', 'the snapshot block is not signed by its producer');
    }
    const ops = [
      { type: 'put' as const, key: bKey(block.hash), value: block.bytes },
      { type: 'put' as const, key: hKey(block.header.height), value: block.hash },
      { type: 'put' as const, key: META_TIP, value: encode(tipCodec, { height: block.header.height, hash: block.hash }) },
      { type: 'put' as const, key: META_BASE, value: h8(block.header.height) },
      ...snapshot.entries.map(([k, v]) => ({ type: 'put' as const, key: sKey(k), value: v })),
    ];
    await store.batch(ops);
    return new Chain({ ...options, mode: options.mode ?? 'light' }, state, block, block.header.height);
  }

  get tip(): TipInfo {
    return this.#tip;
  }

  /** The state at the tip. Read it; never write it (the chain owns its changes). */
  get state(): LedgerState {
    return this.#state;
  }

  /** The lowest height whose block this node holds (0 on a full node). */
  get base(): number {
    return this.#base;
  }

  /** Listens for connected and disconnected blocks and equivocation evidence; returns an unsubscribe. */
  subscribe(listener: (event: ChainEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(event: ChainEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  // Runs mutations one at a time.
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  // ---- reads -----------------------------------------------------------------------------------

  async hashAt(height: number): Promise<Uint8Array | undefined> {
    return this.#store.get(hKey(height));
  }

  async blockByHash(hash: Uint8Array): Promise<Block | undefined> {
    const side = this.#side.get(toHex(hash));
    if (side) return side;
    const bytes = await this.#store.get(bKey(hash));
    return bytes === undefined ? undefined : decodeBlock(this.params.network, bytes, this.crypto.sha256);
  }

  /** The main-chain block at `height`, if held. */
  async blockAt(height: number): Promise<Block | undefined> {
    const hash = await this.hashAt(height);
    return hash === undefined ? undefined : this.blockByHash(hash);
  }

  /** Up to `count` (≤ 500) consecutive main-chain blocks from `from`: a sync response. */
  async blocksFrom(from: number, count: number): Promise<Block[]> {
    const out: Block[] = [];
    const end = Math.min(this.#tip.height, from + Math.min(count, MAX_BLOCKS_PER_RESPONSE) - 1);
    for (let h = Math.max(from, this.#base); h <= end; h++) {
      const block = await this.blockAt(h);
      if (block === undefined) break;
      out.push(block);
    }
    return out;
  }

  /**
   * The block objects (node-api.md §2) of up to `count` consecutive main-chain blocks from `from`,
   * fewer at the tip or at the first block not held (below a light node's base). Read from the
   * headers alone, none of the transactions decoded, and while no block is being added, so one
   * page never mixes two branches: what /blocks/stream replays.
   */
  blockEventsFrom(from: number, count: number): Promise<BlockEvent[]> {
    return this.#exclusive(async () => {
      const events: BlockEvent[] = [];
      for (let h = from; h <= this.#tip.height && events.length < count; h++) {
        const hash = await this.hashAt(h);
        const bytes = hash === undefined ? undefined : await this.#store.get(bKey(hash));
        if (hash === undefined || bytes === undefined) break;
        events.push(blockEvent({ hash, header: headerCodec.read(new Reader(bytes)) }));
      }
      return events;
    });
  }

  /**
   * The stored bytes of consecutive main-chain blocks from `from`: at most `count` (≤ 500) blocks
   * and, beyond the first, at most `maxBytes` in all, with the tip height they lead to. What a sync
   * answer sends; unlike blocksFrom it decodes nothing, so serving a range costs store reads, not
   * the parsing of every transaction. It reads while no block is being added: `tip` moves before
   * the store has the new blocks, and an answer cut short there would claim a tip it does not give.
   */
  blockBytesFrom(from: number, count: number, maxBytes: number): Promise<{ blocks: Uint8Array[]; tipHeight: number }> {
    return this.#exclusive(async () => {
      const blocks: Uint8Array[] = [];
      let bytes = 0;
      const end = Math.min(this.#tip.height, from + Math.min(count, MAX_BLOCKS_PER_RESPONSE) - 1);
      let h = Math.max(from, this.#base);
      if (h > end) return { blocks, tipHeight: this.#tip.height };
      // The heights' hashes in one walk of the index rather than a read each (the serving node's
      // reads are half of what a range costs it); it ends at the first height not held.
      for await (const [key, hash] of this.#store.entries({ gte: hKey(h), lt: hKey(end + 1) })) {
        if (!bytesEqual(key, hKey(h))) break;
        const block = await this.#store.get(bKey(hash));
        if (block === undefined || (blocks.length > 0 && bytes + block.length > maxBytes)) break;
        blocks.push(block);
        bytes += block.length;
        h++;
      }
      return { blocks, tipHeight: this.#tip.height };
    });
  }

  /** GET /beacon: the tip's height and hash. */
  beacon(): { height: number; hash: string } {
    return { height: this.#tip.height, hash: toHex(this.#tip.hash) };
  }

  /** GET /history/:node_id. */
  history(node: Uint8Array): Promise<History> {
    return history(this.#store, node, this.#tip.height, this.#base + 1);
  }

  /** GET /transactions/:node_id: `limit` defaults to 100 and is capped at 500. */
  transactions(node: Uint8Array, options: { limit?: number; before?: number } = {}): Promise<TxListItem[]> {
    const limit = Math.min(Math.max(1, options.limit ?? DEFAULT_TX_PAGE), MAX_TX_PAGE);
    return listTransactions(this.#store, node, { limit, ...(options.before === undefined ? {} : { before: options.before }) });
  }

  /** The main-chain height of a held transaction, or undefined. */
  txHeight(txId: Uint8Array): Promise<number | undefined> {
    return txHeight(this.#store, txId);
  }

  /** The block object of the tip (for /blocks/stream and /status). */
  tipEvent(): BlockEvent {
    return blockEvent(this.#tip.block);
  }

  /** The state at held height `height` (default: the oldest held), for a light node to start from. */
  async snapshotAt(height = this.#base): Promise<Snapshot> {
    return this.#exclusive(async () => {
      if (height < this.#base || height > this.#tip.height) {
        throw new ForkChoiceError('not-held', `height ${height} is outside the held range ${this.#base}..${this.#tip.height}`);
      }
      const state = LedgerState.fromEntries(this.#state.entries(), this.crypto.sha256);
      for (let h = this.#tip.height; h > height; h--) state.applyChanges((await this.#undo(h)).changes, 'undo');
      const block = (await this.blockAt(height))!;
      return { block, entries: state.entries() };
    });
  }

  async #undo(height: number): Promise<{ changes: Change[]; nodes: Uint8Array[] }> {
    const bytes = await this.#store.get(uKey(height));
    if (bytes === undefined) throw new ForkChoiceError('too-deep', `block ${height} is pruned; this node cannot rewind past height ${this.#base}`);
    return decodeUndo(bytes);
  }

  /**
   * Reads the main-chain blocks from `forkHeight + 1` up to `toHeight` with their undo records,
   * ahead of a reorganisation back to `forkHeight` whose branch sync is still fetching, so that the
   * switch finds them in memory instead of waiting seconds for the store.
   * Read in the background, a few hundred heights at a time between other changes, and kept by
   * block hash: the switch reads again any height whose block changed meanwhile. One fork point at
   * a time, at most MAX_REWIND_AHEAD_BYTES of blocks, dropped by the next reorganisation.
   */
  readRewindAhead(forkHeight: number, toHeight: number): void {
    let ahead = this.#rewindAhead;
    if (ahead === null || ahead.forkHeight !== forkHeight) {
      ahead = { forkHeight, steps: new Map(), next: forkHeight + 1, upTo: toHeight, bytes: 0, reading: false };
      this.#rewindAhead = ahead;
    }
    ahead.upTo = Math.max(ahead.upTo, toHeight);
    if (ahead.reading) return;
    ahead.reading = true;
    const more = (a: RewindAhead): boolean =>
      this.#rewindAhead === a && a.next >= this.#base && a.next <= Math.min(a.upTo, this.#tip.height) && a.bytes < MAX_REWIND_AHEAD_BYTES;
    void (async (a: RewindAhead) => {
      try {
        while (more(a)) {
          await this.#exclusive(async () => {
            if (!more(a)) return;
            const high = Math.min(a.next + REWIND_READS - 1, a.upTo, this.#tip.height);
            for (const step of await this.#readRewind(a.next, high)) {
              a.steps.set(toHex(step.hash), step);
              a.bytes += step.bytes.length;
            }
            a.next = high + 1;
          });
        }
      } catch {
        // The switch reads whatever is missing, and reports what is wrong.
      } finally {
        a.reading = false;
      }
    })(ahead);
  }

  /**
   * A competing branch level with the tip that `prepareBranch` applied in full, every block valid
   * and its signatures checked (`checkSignatures`): its tip and the height it forks at; null when
   * there is none (docs/chain.md, "Ties after a partition").
   */
  levelBranch(): LevelBranch | null {
    const p = this.#prepared;
    const last = p?.blocks[p.blocks.length - 1];
    if (p == null || p.broken || last === undefined || !bytesEqual(p.tipHash, this.#tip.hash) || last.header.height !== this.#tip.height) return null;
    // Applying checks the rules, not the signatures: only blocks whose signatures were checked count.
    if (!p.blocks.every((block) => this.#checkedAhead.has(block))) return null;
    return { hash: last.hash, forkHeight: p.forkHeight, blocks: p.blocks.slice(), tip: p.parent, state: p.state };
  }

  /** Whether a competing branch is being applied ahead (`prepareBranch`), and none of it failed. */
  get preparing(): boolean {
    return this.#prepared !== null && !this.#prepared.broken;
  }

  /**
   * Applies a competing branch that sync holds while it fetches the rest of it (the blocks so far,
   * the first one building on a main-chain block below the tip) to a copy of the state rewound to
   * the fork point, and builds the store batch of the switch to it, so that once the branch
   * outgrows the chain, the switch need only take over that state's net change, write the batch
   * and show it. Begun once `readRewindAhead` was asked to read every block back to the fork point
   * (so the work stays in proportion to the blocks the peer sent); each call applies up to 1,000
   * of the blocks not applied yet, so that no call holds the thread for long. It touches neither the state nor the store, and never throws: a block that does not apply
   * ends the preparation there, and the switch applies it and reports it. Dropped when the tip
   * moves, and by the next switch.
   */
  prepareBranch(branch: readonly Block[], nowMs?: number): Promise<void> {
    return this.#exclusive(async () => {
      try {
        await this.#prepare(branch, nowMs);
      } catch {
        // The switch does it all, and says what is wrong.
        this.#dropPrepared();
      }
    });
  }

  async #prepare(branch: readonly Block[], nowMs: number | undefined): Promise<void> {
    const first = branch[0];
    if (first === undefined) return;
    const forkHeight = first.header.height - 1;
    let p = this.#prepared;
    // A broken preparation is begun again only for another branch (the doubling below bounds it).
    const broken = p?.broken === true && !begins(branch, [...p.blocks, p.brokenAt!]);
    if (p !== null && (broken || p.forkHeight !== forkHeight || !bytesEqual(p.tipHash, this.#tip.hash) || !begins(branch, p.blocks))) p = null;
    if (p === null) {
      this.#dropPrepared();
      const ahead = this.#rewindAhead;
      if (ahead === null || ahead.forkHeight !== forkHeight || forkHeight >= this.#tip.height || ahead.upTo < this.#tip.height) return;
      const again = this.#prepareAgainAt;
      if (again !== null && again.forkHeight === forkHeight && branch.length < again.blocks) return;
      const forkHash = await this.hashAt(forkHeight);
      if (forkHash === undefined || !bytesEqual(forkHash, first.header.prev_hash)) return;
      const rewind = await this.#readRewind(forkHeight + 1, this.#tip.height, ahead.steps);
      // What was not read ahead yet is read now: the reading ahead is done with, and keeps it all.
      for (const step of rewind) ahead.steps.set(toHex(step.hash), step);
      ahead.next = this.#tip.height + 1;
      const undos = rewind.map((step) => decodeUndo(step.undo));
      const state = LedgerState.fromEntries(this.#state.entries(), this.crypto.sha256);
      for (const { changes } of undos) state.applyChanges(changes, 'undo');
      const batch = new PendingBatch(this.#store);
      await this.#unindex(batch, rewind, undos);
      const parent = info((await this.blockAt(forkHeight))!);
      const staged = this.#store.stage();
      p = { forkHeight, tipHash: this.#tip.hash, rewind, state, blocks: [], applied: [], batch, staged, parent, broken: false };
      this.#prepared = p;
    }
    // A few ranges' worth a call: the thread also has the next ranges to take in meanwhile.
    const end = Math.min(branch.length, p.blocks.length + MAX_PREPARED_PER_CALL);
    for (let i = p.blocks.length; i < end && !p.broken; i++) {
      const block = branch[i]!;
      let applied: Applied;
      try {
        applied = applyVerifiedBlock(p.state, block, p.parent, this.params, nowMs);
      } catch {
        p.broken = true;
        p.brokenAt = block;
        break;
      }
      await this.#index(p.batch, block, applied);
      p.blocks.push(block);
      // Its changes are in its undo record now: only its effects are kept, for the switch's events.
      p.applied.push({ effects: applied.effects, changes: [] });
      p.parent = info(block);
    }
    p.staged.add(p.batch.drain());
  }

  #dropPrepared(): void {
    const p = this.#prepared;
    if (p === null) return;
    p.staged.discard();
    this.#prepareAgainAt = { forkHeight: p.forkHeight, blocks: Math.max(2, 2 * p.blocks.length) };
    this.#prepared = null;
  }

  // The main-chain blocks at heights `low` to `high`, highest first, with their undo records: those
  // `ahead` holds under the hash now at their height taken from it, the rest read from the store, a
  // walk of each kind and a few hundred block reads at a time (one after another, a 10,000-block
  // rewind spent seconds waiting on 30,000 store reads in turn).
  async #readRewind(low: number, high: number, ahead?: ReadonlyMap<string, RewindStep>): Promise<RewindStep[]> {
    const steps: RewindStep[] = [];
    const missing: { height: number; hash: Uint8Array }[] = [];
    let height = low;
    for await (const [key, hash] of this.#store.entries({ gte: hKey(low), lt: hKey(high + 1) })) {
      if (!bytesEqual(key, hKey(height))) break;
      const step = ahead?.get(toHex(hash));
      if (step !== undefined && step.height === height) steps.push(step);
      else missing.push({ height, hash });
      height++;
    }
    if (height <= high) throw new ForkChoiceError('too-deep', `block ${height} is not held; this node cannot rewind past it`);
    if (missing.length > 0) {
      const from = missing[0]!.height;
      const to = missing[missing.length - 1]!.height;
      const undos = new Map<number, Uint8Array>();
      for await (const [key, bytes] of this.#store.entries({ gte: uKey(from), lt: uKey(to + 1) })) undos.set(decode(uint53, key.subarray(1)), bytes);
      for (let i = 0; i < missing.length; i += REWIND_READS) {
        const blocks = await Promise.all(missing.slice(i, i + REWIND_READS).map(({ hash }) => this.#store.get(bKey(hash))));
        blocks.forEach((bytes, j) => {
          const { height, hash } = missing[i + j]!;
          const undo = undos.get(height);
          if (bytes === undefined || undo === undefined) {
            throw new ForkChoiceError('too-deep', `block ${height} is pruned; this node cannot rewind past height ${this.#base}`);
          }
          steps.push({ height, hash, bytes, undo });
        });
      }
    }
    return steps.sort((a, b) => b.height - a.height);
  }

  // ---- writes ----------------------------------------------------------------------------------

  /**
   * Adds a block from the network or the local producer. `nowMs` bounds its timestamp (omit it only
   * for blocks replayed from trusted storage). Throws InvalidBlockError or ForkChoiceError.
   */
  addBlock(block: Block, nowMs?: number): Promise<AddOutcome> {
    return this.#exclusive(() => this.#add([block], nowMs));
  }

  /**
   * Adds consecutive blocks (a sync response, or a competing branch sync gathered from several):
   * all are adopted, or none.
   */
  addBranch(blocks: readonly Block[], nowMs?: number): Promise<AddOutcome> {
    return this.#exclusive(() => this.#add(blocks, nowMs));
  }

  async #add(blocks: readonly Block[], nowMs: number | undefined): Promise<AddOutcome> {
    if (blocks.length === 0) return 'known';
    // A relayed copy may have been tampered with by someone other than its producer: a block whose
    // transactions do not match its header is refused without being remembered, so the genuine
    // block with the same header hash is still accepted when it arrives.
    for (const block of blocks) if (!this.#checkedAhead.has(block)) checkContents(block, this.crypto.sha256);
    for (let i = 1; i < blocks.length; i++) {
      if (!bytesEqual(blocks[i]!.header.prev_hash, blocks[i - 1]!.hash) || blocks[i]!.header.height !== blocks[i - 1]!.header.height + 1) {
        throw new ForkChoiceError('not-consecutive', `block ${i} of the branch does not follow block ${i - 1}`);
      }
    }
    for (const block of blocks) {
      if (this.#invalid.has(toHex(block.hash)) || this.#invalid.has(toHex(block.header.prev_hash))) {
        this.#invalid.add(toHex(block.hash));
        throw new InvalidBlockError('known-invalid', `block ${block.header.height} is or descends from a block found invalid`);
      }
    }
    // Drop the blocks already on the main chain (a sync response may overlap what we have).
    let start = 0;
    while (start < blocks.length && bytesEqual((await this.#mainHashAt(blocks[start]!.header.height)) ?? new Uint8Array(0), blocks[start]!.hash)) start++;
    const fresh = blocks.slice(start);
    if (fresh.length === 0) return 'known';

    // Find where the branch meets the main chain, through side blocks if need be.
    const branch = [...fresh];
    for (;;) {
      const first = branch[0]!;
      const parentHeight = first.header.height - 1;
      if (parentHeight < 0) throw new ForkChoiceError('no-common-ancestor', 'the branch replaces the genesis block');
      const mainHash = await this.#mainHashAt(parentHeight);
      if (mainHash !== undefined && bytesEqual(mainHash, first.header.prev_hash)) break;
      const side = this.#side.get(toHex(first.header.prev_hash));
      if (side !== undefined) {
        branch.unshift(side);
        continue;
      }
      if (parentHeight < this.#base && mainHash === undefined) {
        throw new ForkChoiceError('too-deep', `the branch forks at height ${parentHeight}, below the oldest held block ${this.#base}`);
      }
      // The store holds main-chain blocks only (a reorganisation moves the old ones to the side
      // blocks), so a parent that is neither on the main chain nor aside is not held at all. Its
      // signed headers still count: a producer's block on another branch at a height where it
      // signed one here is equivocation, whether or not the branch ever comes. (A bad signature
      // records nothing; the block is refused for its parent all the same.)
      await this.noteHeaders(fresh);
      throw new ForkChoiceError(
        blocks.length > 1 ? 'no-common-ancestor' : 'unknown-parent',
        `block ${first.header.height} builds on ${toHex(first.header.prev_hash).slice(0, 16)}…, which this node does not hold`,
      );
    }
    await this.#checkSigned(fresh);
    const last = branch[branch.length - 1]!;
    if (last.header.height <= this.#tip.height) {
      for (const block of fresh) this.#keepSide(block);
      return 'side';
    }
    const forkHeight = branch[0]!.header.height - 1;
    const extends_ = forkHeight === this.#tip.height;
    await this.#switch(forkHeight, branch, nowMs);
    return extends_ ? 'extended' : 'reorganized';
  }

  /**
   * Checks every signature of blocks about to be added (a sync range that arrives while the one
   * before it is applied), so that adding them need not wait for the check. Touches no state and
   * never throws: a block that fails is left for `addBranch` to find, reject and report.
   */
  async checkSignatures(blocks: readonly Block[]): Promise<void> {
    try {
      for (const block of blocks) checkContents(block, this.crypto.sha256);
      const invalid = await findInvalidSignatures(blocks, this.params, false, this.crypto.ed25519);
      // Only blocks whose signatures were all verified are marked: a range refused for its shape
      // (a duplicate transaction, say) vouches for none of its blocks.
      const good = invalid === null ? blocks.length : invalid.verified;
      for (let i = 0; i < good; i++) this.#checkedAhead.add(blocks[i]!);
    } catch {
      // addBranch checks the same blocks again and says what is wrong.
    }
  }

  /**
   * Checks the producers' signatures on blocks held outside the chain (a competing branch sync
   * fetches while it is not longer) and records their headers, so that a producer who signed them
   * and a main-chain block at one height is reported as equivocating. A bad signature records
   * nothing after it; adding the branch later says what is wrong.
   */
  async noteHeaders(blocks: readonly Block[]): Promise<void> {
    await this.#checkSigned(blocks).catch(() => {});
  }

  // hashAt, without a store read at or above the tip: a branch that extends the tip is applied
  // without waiting for the store, whose reads may queue behind other work on the host's threads.
  #mainHashAt(height: number): Promise<Uint8Array | undefined> | Uint8Array | undefined {
    if (height === this.#tip.height) return this.#tip.hash;
    if (height > this.#tip.height) return undefined;
    return this.hashAt(height);
  }

  // Checks the producers' signatures on the headers, all at once, and records them for
  // equivocation detection, in order up to the first bad one.
  async #checkSigned(blocks: readonly Block[]): Promise<void> {
    const unchecked = blocks.filter((block) => !this.#checkedAhead.has(block));
    const verdicts = await verifyBatch(
      unchecked.map((block) => headerMessage(block, this.params)),
      this.crypto.ed25519,
    );
    const bad = new Set(unchecked.filter((_, i) => !verdicts[i]));
    for (const block of blocks) {
      const h = block.header;
      if (bad.has(block)) {
        // Not remembered: anyone can strip a genuine block's signature, the hash stays the same.
        throw new InvalidBlockError('bad-block-signature', `block ${h.height} is not signed by its producer`);
      }
      const key = `${toHex(h.producer)}:${h.height}`;
      const seen = this.#signedAt.get(key);
      const hash = toHex(block.hash);
      if (seen === undefined) {
        this.#signedAt.set(key, { hash, signed: encode(signedHeaderCodec, { header: h, signature: block.signature }) });
        if (this.#signedAt.size > MAX_SIDE_BLOCKS) this.#signedAt.delete(this.#signedAt.keys().next().value!);
      } else if (seen.hash !== hash) {
        this.#emit({
          type: 'equivocation',
          evidence: [decode(signedHeaderCodec, seen.signed), { header: h, signature: block.signature }],
        });
      }
    }
  }

  // Remembers a block that broke a rule, so it and its descendants are refused at once.
  // A block ahead of the local clock is not remembered: it may be valid a moment later.
  // Only reached for blocks whose contents match their header and whose header its producer signed,
  // so the header hash names exactly this block and the verdict holds for every copy of it.
  #reject(block: Block, error: unknown): void {
    if (!(error instanceof InvalidBlockError) || error.verdict !== 'reject') return;
    this.#invalid.add(toHex(block.hash));
    this.#dropSide(toHex(block.hash));
  }

  // Keeps `block` aside; the oldest kept go first past MAX_SIDE_BLOCKS blocks or MAX_SIDE_BYTES.
  #keepSide(block: Block): void {
    const hash = toHex(block.hash);
    if (this.#side.has(hash)) return;
    this.#side.set(hash, block);
    this.#sideBytes += block.bytes.length;
    while (this.#side.size > MAX_SIDE_BLOCKS || (this.#sideBytes > MAX_SIDE_BYTES && this.#side.size > 1)) {
      this.#dropSide(this.#side.keys().next().value!);
    }
  }

  #dropSide(hash: string): void {
    const block = this.#side.get(hash);
    if (block === undefined) return;
    this.#side.delete(hash);
    this.#sideBytes -= block.bytes.length;
  }

  // Rewinds to `forkHeight`, applies `branch`, and commits it all in one batch — or nothing.
  async #switch(forkHeight: number, branch: readonly Block[], nowMs: number | undefined): Promise<void> {
    if (forkHeight < this.#base) {
      throw new ForkChoiceError('too-deep', `the branch forks at height ${forkHeight}, below the oldest held block ${this.#base}`);
    }
    // What was prepared of this branch against this tip, if anything; used up by this switch either way.
    const prepared = this.#takePrepared(forkHeight, branch);
    // Everything asynchronous first (reads, signature checks), so the state changes below happen
    // in one synchronous stretch that no reader can observe half-done.
    const rewind =
      forkHeight === this.#tip.height ? [] : (prepared?.rewind ?? (await this.#readRewind(forkHeight + 1, this.#tip.height, this.#rewindAhead?.steps)));
    // Read ahead for this reorganisation, or for one that no longer comes: either way done with.
    if (rewind.length > 0) this.#rewindAhead = null;
    const forkBlock = forkHeight === this.#tip.height ? this.#tip.block : prepared === null ? (await this.blockAt(forkHeight))! : null;
    // The signatures not checked ahead are checked on the other cores while this thread applies the
    // branch, concealed from every other caller until their verdict is in (below), so no reader sees
    // a block whose signatures are not known good; a bad signature is reported before any broken
    // rule, as if checked first. Every header is known good already: `#add` checked the fresh
    // blocks', and a side block was checked, or was on the main chain, before it was kept aside.
    const unchecked = branch.filter((block) => !this.#checkedAhead.has(block));
    const signatures = findInvalidSignatures(unchecked, this.params, true, this.crypto.ed25519);

    const undos = prepared === null ? rewind.map((step) => decodeUndo(step.undo)) : [];
    let disconnected: Block[] = [];
    const state = this.#state;
    const mark = state.mark();
    const applied: Applied[] = [];
    let broken: { block: Block | null; error: unknown } | null = null;
    let changes: readonly Change[] = [];
    try {
      let parent: ParentInfo;
      if (prepared !== null) {
        // The prepared state's net change, from this tip to the last prepared block, in one step.
        state.applyChanges(prepared.state.changesSince(0), 'redo');
        applied.push(...prepared.applied);
        parent = prepared.parent;
      } else {
        for (const { changes } of undos) state.applyChanges(changes, 'undo');
        parent = info(forkBlock!);
      }
      for (const block of branch.slice(applied.length)) {
        try {
          applied.push(applyVerifiedBlock(state, block, parent, this.params, nowMs));
        } catch (error) {
          broken = { block, error };
          break;
        }
        parent = info(block);
      }
      // A block on the tip (one as it arrives) changed exactly what its own undo record says.
      if (broken === null) changes = rewind.length === 0 && applied.length === 1 ? applied[0]!.changes : state.changesSince(mark);
    } catch (error) {
      broken = { block: null, error };
    }
    // Concealed rather than undone (LedgerState.conceal): no caller sees the branch before its
    // signatures pass and the store holds it, and it is undone and redone only if one comes meanwhile.
    if (broken === null) state.conceal(mark);
    else state.revert(mark);
    const tip = branch[branch.length - 1]!;
    try {
      const invalid = await signatures;
      if (invalid) {
        this.#reject(unchecked[invalid.index]!, invalid.error);
        throw invalid.error;
      }
      if (broken !== null) {
        if (broken.block !== null) this.#reject(broken.block, broken.error);
        throw broken.error;
      }

      // Readers keep seeing the stored chain until the batch is durable: the new state stays
      // concealed, and is revealed with the new tip in one synchronous step once the store has
      // taken the batch. So /status and /beacon never show a block that a crash could still take back.
      let batch: PendingBatch;
      if (prepared !== null) batch = prepared.batch;
      else {
        batch = new PendingBatch(this.#store);
        await this.#unindex(batch, rewind, undos);
      }
      for (let i = prepared?.blocks.length ?? 0; i < branch.length; i++) await this.#index(batch, branch[i]!, applied[i]!);
      for (const c of changes) {
        if (c.after === undefined) batch.del(sKey(c.key));
        else batch.put(sKey(c.key), c.after);
      }
      // Disconnected blocks stay in memory as side blocks, in case their branch grows back. Their
      // heights' index and undo entries are overwritten by the branch's up to its tip (deleted
      // too, they were 20,000 more writes in a 10,000-block switch); only those above it go.
      for (const { hash, height } of rewind) {
        batch.del(bKey(hash));
        if (height > tip.header.height) {
          batch.del(hKey(height));
          batch.del(uKey(height));
        }
      }
      batch.put(META_TIP, encode(tipCodec, { height: tip.header.height, hash: tip.hash }));
      let written: Promise<void>;
      if (prepared === null) written = this.#store.batch(batch.drain());
      else {
        prepared.staged.add(batch.drain());
        written = prepared.staged.write();
      }
      // The removed blocks, for their events and as side blocks, decoded while the store writes.
      disconnected = this.#decodeRewound(rewind);
      await written;
    } catch (error) {
      state.discard();
      prepared?.staged.discard();
      throw error;
    }
    state.reveal();
    state.commit(mark);
    this.#tip = info(tip);
    const connected = branch.map((block, i) => ({ block, effects: applied[i]!.effects }));
    for (const { block } of connected) this.#dropSide(toHex(block.hash));
    for (const block of disconnected) this.#keepSide(block);
    // Subscribers hear of the change in the same step that shows it, so the mempool never sees a
    // state its queues do not know of yet.
    for (const block of disconnected) this.#emit({ type: 'disconnected', block });
    for (const { block, effects } of connected) this.#emit({ type: 'connected', block, effects });
    // Pruning is a batch of its own, read from what was just committed: a crash in between only
    // leaves some old blocks held a little longer, and the next prune removes them.
    if (this.mode === 'light') await this.#prune(this.#tip.height);
  }

  // The preparation of `branch` (`prepareBranch`), if it was prepared against this very tip and its
  // prepared blocks begin `branch`; the preparation is dropped either way: the switch moves the tip.
  #takePrepared(forkHeight: number, branch: readonly Block[]): Prepared | null {
    const p = this.#prepared;
    const usable = p !== null && p.blocks.length > 0 && p.forkHeight === forkHeight && bytesEqual(p.tipHash, this.#tip.hash) && begins(branch, p.blocks);
    if (usable) this.#prepared = null;
    else this.#dropPrepared();
    return usable ? p : null;
  }

  // Adds to `batch` the removal of the rewound blocks' read-model entries (deleted ahead of the
  // batch's other writes: the branch's blocks may write the same keys); `undos` are the steps'
  // undo records, decoded.
  async #unindex(batch: PendingBatch, rewind: readonly RewindStep[], undos: readonly { nodes: Uint8Array[] }[]): Promise<void> {
    if (rewind.length === 0) return;
    // Highest first, as `#readRewind` gives them.
    await unindexBlocks(
      batch,
      this.#store,
      rewind[rewind.length - 1]!.height,
      rewind[0]!.height,
      undos.flatMap(({ nodes }) => nodes),
      rewind.flatMap((step) => decodeBlock(this.params.network, step.bytes, this.crypto.sha256).txs.map((t) => t.id)),
    );
  }

  // The blocks of rewind steps, decoded. Never throws (it runs while a switch's batch is written);
  // `#unindex` decoded the same bytes before the batch was built, so none is left out.
  #decodeRewound(rewind: readonly RewindStep[]): Block[] {
    return rewind.flatMap((step) => {
      try {
        return [decodeBlock(this.params.network, step.bytes, this.crypto.sha256)];
      } catch {
        return [];
      }
    });
  }

  // Adds to `batch` a connected block, its height, its undo record and its read-model entries
  // (written after the batch's other writes, and not held for `get`: nothing reads them back).
  async #index(batch: PendingBatch, block: Block, applied: Applied): Promise<void> {
    const height = block.header.height;
    const nodes = await indexBlock(
      batch,
      height,
      block.txs.map((t) => t.id),
      applied.effects,
    );
    batch.putLast(bKey(block.hash), block.bytes);
    batch.putLast(hKey(height), block.hash);
    batch.putLast(
      uKey(height),
      encode(undoCodec, {
        changes: applied.changes.map((c) => ({ key: c.key, before: c.before ?? null, after: c.after ?? null })),
        nodes,
      }),
    );
  }

  // Light mode: drops blocks, undo records and index entries below the retention window.
  async #prune(tipHeight: number): Promise<void> {
    const newBase = tipHeight - this.#retain + 1;
    if (newBase <= this.#base) return;
    const batch = new PendingBatch(this.#store);
    // What the indexed blocks (those with an undo record: not a snapshot's first) involved.
    const nodes: Uint8Array[] = [];
    const txIds: Uint8Array[] = [];
    for (let h = this.#base; h < newBase; h++) {
      const hash = await this.#store.get(hKey(h));
      const blockBytes = hash === undefined ? undefined : await this.#store.get(bKey(hash));
      if (hash !== undefined) batch.del(bKey(hash));
      batch.del(hKey(h));
      const undoBytes = await this.#store.get(uKey(h));
      if (undoBytes !== undefined) {
        nodes.push(...decode(undoCodec, undoBytes).nodes);
        if (blockBytes !== undefined) txIds.push(...decodeBlock(this.params.network, blockBytes, this.crypto.sha256).txs.map((t) => t.id));
        batch.del(uKey(h));
      }
    }
    await unindexBlocks(batch, this.#store, this.#base, newBase - 1, nodes, txIds);
    batch.put(META_BASE, h8(newBase));
    await this.#store.batch(batch.drain());
    this.#base = newBase;
  }
}
