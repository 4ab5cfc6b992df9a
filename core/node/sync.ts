/**
 * Chain sync: heights announced on the gossip topic mesh-heights, blocks asked for with the RPC
 * protocol `sync.blocks` and answered to the requester only.
 *
 * Nodes announce their tip (height and hash) to new peers and now and then. A node that hears of a
 * higher tip asks that node for blocks with a locator: its main-chain blocks by height, densely near
 * the tip, then at doubling distances. The target says which entry it holds on its own main chain;
 * when the entry above that one is one height higher, the fork point is exact and the target
 * answers with up to 500 blocks after it. Otherwise the fork lies in the gap between two entries,
 * and the requester asks again with a locator dense in that gap, narrowing it 63-fold per round
 * trip until it is exact (docs/chain.md, "Finding the fork point"). The requester holds the blocks
 * of a branch that does not yet outgrow its own chain, and hands the branch to the chain once it
 * does, so a fork of any depth heals. While the target is still ahead, the next range is asked for
 * as an answer arrives, so one range travels while the one before it is checked and the one before
 * that applied. A node whose answer does not validate is penalised; one that claims a higher tip
 * and does not serve it is not asked again for a while; one that is busy is asked again later; a
 * claim that sync makes no progress on holds block production back only briefly (docs/network.md,
 * "Sync").
 */

import { type AddOutcome, type Chain, ForkChoiceError, MAX_BLOCKS_PER_RESPONSE } from '../chain/chain.ts';
import { goesFirst, tieTip } from '../chain/tie.ts';
import { RecentSet } from '../collections/recent-set.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { decode, encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { messageOf } from '../errors.ts';
import { type Block, decodeBlock, InvalidBlockError } from '../ledger/block.ts';
import { PeerBusyError, RequestTimeoutError } from '../net/errors.ts';
import { type GossipMessage, type Network, type RpcRequest, TOPICS, type Verdict } from '../net/network.ts';
import { type Clock, systemClock, type Timer } from '../time/clock.ts';
import { SERVE_BYTES_PER_SECOND, ServeBudget } from './serve-budget.ts';
import {
  forkOf,
  heightCodec,
  type LocatorEntry,
  MAX_LOCATOR,
  MAX_RESPONSE_BYTES,
  MAX_SYNC_ANSWER_BYTES,
  SYNC_PROTOCOL,
  type SyncRequest,
  type SyncResponse,
  syncRequestCodec,
  syncResponseCodec,
} from './wire.ts';

export interface SyncOptions {
  readonly chain: Chain;
  readonly network: Network;
  /** Time and timers (injected so tests control time). */
  readonly clock?: Clock;
  /** How long to wait for an answer before asking another node. */
  readonly timeoutMs?: number;
  /** Sync requests served per requesting node per second. */
  readonly servePerSecond?: number;
  /**
   * The bytes this node answers with per requester and in all (shared with the light-node segments
   * it serves); default: a budget of its own of `serveBytesPerSecond` per requester.
   */
  readonly budget?: ServeBudget;
  /** Bytes answered per requesting node per second when no `budget` is given (default 4 MiB; all requesters four times that). */
  readonly serveBytesPerSecond?: number;
  /**
   * How long a claimed higher tip holds block production back while sync makes no progress
   * (default 3 × timeoutMs).
   */
  readonly stallMs?: number;
  /** Encoded bytes of a competing branch held while it is fetched and not yet longer than the chain (default 64 MiB). */
  readonly maxBranchBytes?: number;
  readonly log?: (line: string) => void;
}

interface Pending {
  readonly target: string;
  readonly source: Source;
  /** Abandons the request (the node stops, or the target failed meanwhile). */
  readonly abort: AbortController;
}

/**
 * The node ranges are being fetched from: `failed` once it failed to serve one; the blocks of its
 * branch held until they outgrow this node's chain; the narrowing round trips since its last
 * range; its answers in a row that gave nothing new.
 */
interface Source {
  readonly target: string;
  failed: boolean;
  branch: Block[];
  branchBytes: number;
  narrowings: number;
  idle: number;
}

interface Known {
  readonly node: Uint8Array;
  height: number;
  hash: Uint8Array;
}

interface Distrust {
  until: number;
  strikes: number;
}

// A node that claimed a higher tip and then did not serve it is not asked again for a while:
// twice the timeout after its first failure, doubling with each further one, at most 10 minutes.
const MAX_DISTRUST_MS = 10 * 60_000;
const MAX_DISTRUSTED = 4_096;
// A busy node (its serve budget for this one spent) is asked again after this long: budgets refill per second.
const BUSY_BACKOFF_MS = 1_000;
// Narrowing rounds before a range: 63-fold each, so five find a fork in a 10^9-block gap.
const MAX_NARROWINGS = 8;
// Answers in a row with only blocks this node holds before the target counts as not serving: one
// is a race (gossip brought the blocks meanwhile), several are a peer keeping this node asking.
const MAX_IDLE_ANSWERS = 3;
// The locator's dense part: the last heights below the tip, one by one.
const DENSE_LOCATOR = 16;
// A held branch in encoded bytes; decoded, blocks take about ten times as much memory.
const MAX_BRANCH_BYTES = 64 * 1024 * 1024;
// Sync answers queued (one being read, the rest waiting) before more requests are refused as busy.
const MAX_ANSWERS_QUEUED = 4;
// An equal tip of another branch is asked for at most this often (a peer could announce made-up
// ones), and each tip hash once.
const TIE_PROBE_MS = 5_000;
const TIE_PROBES_REMEMBERED = 1_024;
// Heights of the chain read ahead per block of a held branch, towards the fork point it will rewind
// to. Reading one back costs a fraction of what the held block did (its signatures checked on the
// other cores), so four keep what a peer can make this node do in proportion to what it sent, and
// the switch is prepared from a quarter of the branch on, while most of it is still being fetched.
const REWIND_AHEAD_RATIO = 4;
// A sync request: 64 locator entries of 40 bytes, and a few more.
const MAX_SYNC_REQUEST_BYTES = 4 * 1024;

export class Sync {
  readonly #chain: Chain;
  readonly #network: Network;
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #servePerSecond: number;
  readonly #maxBranchBytes: number;
  readonly #log: (line: string) => void;
  // The best height each node has announced (bounded: nodes that announce the highest are kept).
  readonly #known = new Map<string, Known>();
  readonly #served = new Map<string, { second: number; count: number }>();
  readonly #budget: ServeBudget;
  readonly #distrusted = new Map<string, Distrust>();
  readonly #busyUntil = new Map<string, number>();
  readonly #stallMs: number;
  #pending: Pending | null = null;
  #source: Source | null = null;
  #retryTimer: Timer | null = null;
  #unserve: (() => void) | null = null;
  // The answers being read or waiting their turn (see #inTurn), and the last of them.
  #answering = 0;
  #answers: Promise<void> = Promise.resolve();
  // The last sync answer's application, and the answers received and not yet applied (see #onAnswer).
  #applying: Promise<void> = Promise.resolve();
  #unapplied = 0;
  // The next range's request of an answer that arrived while two were ahead of it: sent once the
  // first of them is applied.
  #askOnceApplied: (() => void) | null = null;
  // A node to ask once the answers being applied are in (it announced a higher tip meanwhile).
  #askWhenApplied: Uint8Array | null = null;
  #stopped = false;
  // When this node first saw a higher tip (null while none), and when sync last moved its chain.
  #aheadSince: number | null = null;
  #heard = false;
  #progressAt = 0;
  // Equal tips of other branches asked for, and when each peer was last asked for one.
  readonly #tiesProbed = new RecentSet<string>(TIE_PROBES_REMEMBERED);
  readonly #tieProbedAt = new Map<string, number>();
  // The height a tie was last applied ahead at: one a height, whoever offers them.
  #tieHeight = -1;

  constructor(options: SyncOptions) {
    this.#chain = options.chain;
    this.#network = options.network;
    this.#clock = options.clock ?? systemClock;
    this.#timeoutMs = options.timeoutMs ?? 5_000;
    this.#servePerSecond = options.servePerSecond ?? 20;
    this.#budget = options.budget ?? ServeBudget.perRequester(options.serveBytesPerSecond ?? SERVE_BYTES_PER_SECOND, this.#clock);
    this.#stallMs = options.stallMs ?? 3 * this.#timeoutMs;
    this.#maxBranchBytes = options.maxBranchBytes ?? MAX_BRANCH_BYTES;
    this.#log = options.log ?? (() => {});
  }

  /** Subscribes to mesh-heights and serves `sync.blocks`. */
  start(): void {
    this.#network.handle(TOPICS.heights, (m) => this.#onHeight(m));
    this.#unserve = this.#network.serve(SYNC_PROTOCOL, (request) => this.#serve(request), {
      maxRequestBytes: MAX_SYNC_REQUEST_BYTES,
      maxResponseBytes: MAX_SYNC_ANSWER_BYTES,
    });
  }

  stop(): void {
    this.#stopped = true;
    this.#pending?.abort.abort(new Error('sync stopped'));
    this.#pending = null;
    this.#retryTimer?.cancel();
    this.#unserve?.();
    this.#unserve = null;
  }

  /** The tips other nodes announced (height and block hash), the latest of each, from nodes not distrusted. */
  announcedTips(): { node: Uint8Array; height: number; hash: Uint8Array }[] {
    return [...this.#known.values()].map((k) => ({ node: k.node, height: k.height, hash: k.hash }));
  }

  /** The highest tip another node has announced. */
  /** Whether a peer's tip ever reached this node: an announcement taken, or an answer to a request. */
  get heard(): boolean {
    return this.#heard;
  }

  get bestKnownHeight(): number {
    let best = 0;
    for (const k of this.#known.values()) best = Math.max(best, k.height);
    return best;
  }

  /**
   * True while a node is known to be ahead of this one and sync is getting its blocks: since the
   * higher tip was first heard of, or since sync last moved the chain or grew the branch it holds,
   * less than `stallMs` passed. A claim that nobody serves (a liar, or many, each found out only
   * after a timeout) must not keep this node from producing for longer than that.
   */
  get behind(): boolean {
    if (this.bestKnownHeight <= this.#chain.tip.height) {
      this.#aheadSince = null;
      return false;
    }
    const now = this.#clock.now();
    this.#aheadSince ??= now;
    return now - Math.max(this.#aheadSince, this.#progressAt) < this.#stallMs;
  }

  /** Publishes this node's tip on mesh-heights. */
  async announce(): Promise<void> {
    const tip = this.#chain.tip;
    await this.#network.publish(TOPICS.heights, encode(heightCodec, { height: tip.height, hash: tip.hash }));
  }

  /** Asks `node` for blocks unless a request is waiting or `node` recently failed to serve or is busy. */
  requestFrom(node: Uint8Array): void {
    const key = toHex(node);
    if (this.#pending !== null || this.#stopped || this.#isDistrusted(key) || this.#isBusy(key)) return;
    // Ranges still being applied would be asked for again: asked once they are in, if still behind.
    if (this.#unapplied > 0) {
      this.#askWhenApplied = node;
      return;
    }
    this.#send(node, this.#locatorFor(key));
  }

  // The locator of a new request to `target`: past the branch held of it, if any (asked again after
  // it was busy, the ranges already held are not fetched anew), else from this node's tip.
  #locatorFor(target: string): Promise<LocatorEntry[]> {
    const held = this.#source?.target === target ? this.#source.branch[this.#source.branch.length - 1] : undefined;
    return held === undefined ? this.#locator() : this.#after(held);
  }

  #isDistrusted(node: string): boolean {
    const entry = this.#distrusted.get(node);
    return entry !== undefined && this.#clock.now() < entry.until;
  }

  #isBusy(node: string): boolean {
    const until = this.#busyUntil.get(node);
    return until !== undefined && this.#clock.now() < until;
  }

  // `node` claimed a higher tip and did not serve it (no answer, nothing new, or invalid blocks):
  // it no longer counts as ahead, its announcements are ignored for a while (longer each time), and
  // another node known to be ahead is asked instead.
  #fail(node: string, why: string): void {
    const entry = this.#distrusted.get(node) ?? { until: 0, strikes: 0 };
    entry.strikes++;
    entry.until = this.#clock.now() + Math.min(2 * this.#timeoutMs * 2 ** (entry.strikes - 1), MAX_DISTRUST_MS);
    this.#distrusted.delete(node);
    this.#distrusted.set(node, entry);
    if (this.#distrusted.size > MAX_DISTRUSTED) this.#distrusted.delete(this.#distrusted.keys().next().value!);
    this.#known.delete(node);
    // Ranges of it still waiting to be applied are dropped: those before them did not apply.
    if (this.#source?.target === node) {
      this.#source.failed = true;
      this.#source = null;
    }
    this.#log(`sync: ${node.slice(0, 16)}… ${why}; not asked again for ${Math.round((entry.until - this.#clock.now()) / 1000)} s`);
    if (this.#pending?.target === node) {
      this.#pending.abort.abort(new Error('the target failed'));
      this.#pending = null;
    }
    if (this.#pending === null && !this.#stopped) this.#retry(node);
  }

  // `node` refused for load (its serve budget for this node is spent): no fault. Another node ahead
  // is asked meanwhile; with none, this one again once its budget has refilled.
  #busy(node: Uint8Array, why: string): void {
    const key = toHex(node);
    this.#busyUntil.set(key, this.#clock.now() + BUSY_BACKOFF_MS);
    if (this.#busyUntil.size > MAX_DISTRUSTED) this.#busyUntil.delete(this.#busyUntil.keys().next().value!);
    this.#log(`sync: ${key.slice(0, 16)}… is busy (${why}); asking again in ${BUSY_BACKOFF_MS} ms`);
    if (this.#retry(key)) return;
    this.#retryTimer?.cancel();
    this.#retryTimer = this.#clock.setTimeout(() => {
      this.#retryTimer = null;
      if ((this.#known.get(key)?.height ?? 0) > this.#chain.tip.height) this.requestFrom(node);
    }, BUSY_BACKOFF_MS);
  }

  async #onHeight(message: GossipMessage): Promise<Verdict> {
    let announced;
    try {
      announced = decode(heightCodec, message.data);
    } catch {
      return 'reject';
    }
    const key = toHex(message.origin);
    // Heights are news about a link: only a direct peer's own announcement counts, and none is
    // forwarded (a node syncs from its neighbours, they from theirs).
    if (bytesEqual(message.origin, this.#network.self) || !bytesEqual(message.origin, message.peer)) return 'ignore';
    if (this.#isDistrusted(key)) return 'ignore';
    this.#heard = true;
    this.#network.reportHeight(message.origin, announced.height);
    const known = this.#known.get(key);
    if (known) {
      known.height = announced.height;
      known.hash = announced.hash;
    } else {
      this.#known.set(key, { node: message.origin, height: announced.height, hash: announced.hash });
      if (this.#known.size > 1_024) this.#forgetLowest();
    }
    const tip = this.#chain.tip;
    if (announced.height > tip.height) this.requestFrom(message.origin);
    else if (announced.height === tip.height && !bytesEqual(announced.hash, tip.hash)) this.#probeTie(message.origin, announced.hash);
    return 'ignore';
  }

  // A peer's tip at this node's height on another branch: its blocks are fetched, held and applied
  // ahead (#take), so the producer knows the tie is real (`Chain.levelBranch`) and the switch is
  // ready once that branch grows. Both halves of a healed partition stand so (docs/chain.md, "Ties
  // after a partition").
  #probeTie(node: Uint8Array, hash: Uint8Array): void {
    const key = toHex(hash);
    const peer = toHex(node);
    const now = this.#clock.now();
    if (this.#tiesProbed.has(key) || now - (this.#tieProbedAt.get(peer) ?? -Infinity) < TIE_PROBE_MS || this.#pending !== null) return;
    this.#tiesProbed.add(key);
    this.#tieProbedAt.delete(peer);
    this.#tieProbedAt.set(peer, now);
    if (this.#tieProbedAt.size > TIE_PROBES_REMEMBERED) this.#tieProbedAt.delete(this.#tieProbedAt.keys().next().value!);
    this.requestFrom(node);
  }

  /**
   * Applies ahead `branch` (its signatures checked), level with the tip and going first
   * (`goesFirst`): a tie the producer breaks by building on it. A new one once a height, whoever
   * offers them, since each costs a copy of the state; none while a deeper branch is being synced,
   * whose preparation and read-ahead it would take the place of.
   */
  prepareTie(branch: readonly Block[]): void {
    const tip = this.#chain.tip;
    const last = branch[branch.length - 1];
    if (last === undefined || last.header.height !== tip.height || !goesFirst(tieTip(last), tip) || this.behind) return;
    if (this.#tieHeight === tip.height && !this.#chain.preparing) return;
    this.#tieHeight = tip.height;
    if (!this.#chain.preparing) this.#chain.readRewindAhead(branch[0]!.header.height - 1, tip.height);
    void this.#chain.prepareBranch(branch, this.#clock.now());
  }

  #forgetLowest(): void {
    let lowest: string | undefined;
    let height = Infinity;
    for (const [key, k] of this.#known) if (k.height < height) [lowest, height] = [key, k.height];
    if (lowest !== undefined) this.#known.delete(lowest);
  }

  #send(node: Uint8Array, locator: Promise<LocatorEntry[]>): void {
    const target = toHex(node);
    if (this.#source?.target !== target) this.#source = { target, failed: false, branch: [], branchBytes: 0, narrowings: 0, idle: 0 };
    const pending: Pending = { target, source: this.#source, abort: new AbortController() };
    this.#pending = pending;
    void (async () => {
      let entries: LocatorEntry[];
      let answer: Uint8Array;
      try {
        entries = await locator;
        const request = encode(syncRequestCodec, { locator: entries, max_blocks: MAX_BLOCKS_PER_RESPONSE });
        answer = await this.#network.request(node, SYNC_PROTOCOL, request, {
          timeoutMs: this.#timeoutMs,
          signal: pending.abort.signal,
          maxRequestBytes: MAX_SYNC_REQUEST_BYTES,
          maxResponseBytes: MAX_SYNC_ANSWER_BYTES,
        });
      } catch (error) {
        if (this.#pending !== pending || this.#stopped) return;
        this.#pending = null;
        if (error instanceof PeerBusyError) this.#busy(node, error.message);
        else if (error instanceof RequestTimeoutError) this.#fail(target, `did not answer in ${this.#timeoutMs} ms`);
        else this.#fail(target, `could not be asked: ${messageOf(error)}`);
        return;
      }
      if (this.#pending !== pending || this.#stopped) return;
      this.#heard = true;
      await this.#onAnswer(node, pending, entries, answer);
    })().catch((error: unknown) => this.#log(`sync: ${messageOf(error)}`));
  }

  // After a failure, asks the next node known to be ahead (not the one that failed); whether it did.
  #retry(failed: string): boolean {
    const tip = this.#chain.tip.height;
    let best: Known | undefined;
    for (const [key, k] of this.#known) {
      if (key !== failed && k.height > tip && !this.#isDistrusted(key) && !this.#isBusy(key) && (!best || k.height > best.height)) best = k;
    }
    if (best) this.#send(best.node, this.#locatorFor(toHex(best.node)));
    return best !== undefined;
  }

  // Main-chain blocks from the tip down: the last 16 heights, then doubling gaps, then the oldest held.
  async #locator(): Promise<LocatorEntry[]> {
    const tip = this.#chain.tip;
    const entries: LocatorEntry[] = [];
    let step = 1;
    for (let h = tip.height; h > this.#chain.base && entries.length < MAX_LOCATOR - 1; h -= step) {
      const hash = await this.#mainHashAt(h);
      if (hash) entries.push({ height: h, hash });
      if (entries.length >= DENSE_LOCATOR) step *= 2;
    }
    const base = await this.#chain.hashAt(this.#chain.base);
    if (base) entries.push({ height: this.#chain.base, hash: base });
    return entries;
  }

  // The locator of a gap: `above` (a block the target does not hold), heights strictly between it
  // and `below` (one it holds), evenly spread and at most 62 of them, then `below`, so that the
  // target's answer pins the fork to one of 63 parts of the gap (to the block, once it is short).
  async #between(below: LocatorEntry, above: LocatorEntry): Promise<LocatorEntry[]> {
    const inside = above.height - below.height - 1;
    const count = Math.min(inside, MAX_LOCATOR - 2);
    const entries: LocatorEntry[] = [above];
    for (let i = count; i >= 1; i--) {
      const height = below.height + Math.ceil((i * (inside + 1)) / (count + 1));
      const hash = await this.#mainHashAt(height);
      if (hash) entries.push({ height, hash });
    }
    entries.push(below);
    return entries;
  }

  // The locator of the next range after `last`: it first, then this node's own entries below it,
  // in case the target reorganised away from it meanwhile.
  async #after(last: Block): Promise<LocatorEntry[]> {
    const own = (await this.#locator()).filter((e) => e.height < last.header.height);
    return [{ height: last.header.height, hash: last.hash }, ...own].slice(0, MAX_LOCATOR);
  }

  // hashAt, from memory at the tip: the store may not hold the tip's index entry yet.
  async #mainHashAt(height: number): Promise<Uint8Array | undefined> {
    const tip = this.#chain.tip;
    if (height === tip.height) return tip.hash;
    if (height > tip.height) return undefined;
    return this.#chain.hashAt(height);
  }

  // ---- serving ----

  async #serve({ peer, data }: RpcRequest): Promise<Uint8Array> {
    let request;
    try {
      request = decode(syncRequestCodec, data);
    } catch (error) {
      this.#network.penalise(peer, 'sent an undecodable sync request');
      throw error;
    }
    // A request costs its sender a few bytes and this node a range of blocks read from the store and
    // sent: answers are held to a byte budget per requester and in all, besides a count of
    // requests. A request over budget is refused as busy, so the requester knows to ask elsewhere.
    const requester = toHex(peer);
    if (!this.#mayServe(requester)) throw new PeerBusyError(`this node serves each peer at most ${this.#servePerSecond} sync requests a second`);
    if (!this.#budget.reserve(requester, MAX_SYNC_ANSWER_BYTES)) throw new PeerBusyError(this.#budget.refusal(requester));
    let answer: Uint8Array | null = null;
    try {
      answer = await this.#inTurn(() => this.#answer(request));
      return answer;
    } finally {
      this.#budget.refund(requester, MAX_SYNC_ANSWER_BYTES - (answer?.length ?? 0));
    }
  }

  // Answers are read from the store one at a time, a few waiting, the rest refused as busy: a
  // range's reads hold the chain (it reads while no block is added), so block production, which
  // adds its block to the same chain, waits behind one range at most, however many peers ask.
  async #inTurn(read: () => Promise<Uint8Array>): Promise<Uint8Array> {
    if (this.#answering >= MAX_ANSWERS_QUEUED) throw new PeerBusyError(`this node answers sync requests one at a time and has ${this.#answering} waiting`);
    this.#answering++;
    const turn = this.#answers.then(read);
    this.#answers = turn.then(
      () => {},
      () => {},
    );
    try {
      return await turn;
    } finally {
      this.#answering--;
    }
  }

  // The answer to `request`: which locator entry this node holds, and the blocks after it when that
  // pins the fork point.
  async #answer(request: SyncRequest): Promise<Uint8Array> {
    const matched = await this.#match(request.locator);
    const fork = forkOf(request.locator, matched);
    if (!fork.exact || fork.below === null) return encode(syncResponseCodec, { tip_height: this.#chain.tip.height, matched, blocks: [] });
    const count = Math.min(request.max_blocks, MAX_BLOCKS_PER_RESPONSE);
    const { blocks, tipHeight } = await this.#chain.blockBytesFrom(fork.below.height + 1, count, MAX_RESPONSE_BYTES);
    return encode(syncResponseCodec, { tip_height: tipHeight, matched, blocks });
  }

  #mayServe(node: string): boolean {
    const second = Math.floor(this.#clock.now() / 1000);
    const entry = this.#served.get(node);
    if (!entry || entry.second !== second) {
      this.#served.set(node, { second, count: 1 });
      if (this.#served.size > 4_096) this.#served.delete(this.#served.keys().next().value!);
      return true;
    }
    entry.count++;
    return entry.count <= this.#servePerSecond;
  }

  // The index of the first (highest) locator entry on this node's main chain, or null. The
  // requester's genesis is this node's genesis: it is fixed per network.
  async #match(locator: readonly LocatorEntry[]): Promise<number | null> {
    for (let i = 0; i < locator.length; i++) {
      const entry = locator[i]!;
      if (i > 0 && entry.height >= locator[i - 1]!.height) return null;
      const main = await this.#mainHashAt(entry.height);
      if (main !== undefined && bytesEqual(main, entry.hash)) return i;
    }
    return null;
  }

  // ---- answers ----

  async #onAnswer(node: Uint8Array, pending: Pending, locator: readonly LocatorEntry[], bytes: Uint8Array): Promise<void> {
    const { target, source } = pending;
    let response: SyncResponse;
    try {
      response = decode(syncResponseCodec, bytes);
      if (response.matched !== null && response.matched >= locator.length) throw new RangeError(`entry ${response.matched} of a locator of ${locator.length}`);
    } catch (error) {
      this.#pending = null;
      return this.#blame(node, `an undecodable answer: ${messageOf(error)}`);
    }
    // Until this answer is dealt with, it stays pending, so that no other request goes out meanwhile
    // (its answer would overlap this one).
    const answered: Pending = { target, source, abort: pending.abort };
    this.#pending = answered;
    const done = (): void => {
      if (this.#pending === answered) this.#pending = null;
    };
    const known = this.#known.get(target);
    if (known) known.height = response.tip_height;

    let blocks: Block[];
    try {
      blocks = response.blocks.map((b) => decodeBlock(this.#chain.params.network, b, this.#chain.crypto.sha256));
    } catch (error) {
      done();
      return this.#blame(node, `an undecodable block: ${messageOf(error)}`);
    }
    // An answer that claims more than this node has but gives it nothing new (no blocks, blocks
    // that do not link) is a failure to serve, whoever is at fault: else a peer could keep this
    // node asking, and "behind", for ever.
    const unserved = (what: string): void => {
      done();
      if (response.tip_height > this.#chain.tip.height) this.#fail(target, `claims height ${response.tip_height} but sent ${what}`);
    };
    const last = blocks[blocks.length - 1];
    if (last === undefined) {
      done();
      // A level tip is narrowed to its fork too: a tie is probed for the branch (#probeTie).
      if (response.tip_height < this.#chain.tip.height) return;
      const fork = forkOf(locator, response.matched);
      if (fork.exact) return unserved('no blocks');
      if (fork.below === null) return this.#fail(target, 'holds none of the blocks of the locator');
      // The fork lies in a gap of the locator: ask again, densely inside it.
      if (++source.narrowings > MAX_NARROWINGS) return this.#fail(target, `left the fork point unknown after ${MAX_NARROWINGS} narrowings`);
      this.#send(node, this.#between(fork.below, fork.above!));
      return;
    }
    source.narrowings = 0;
    // Three ranges are under way at most: one applied, the next one's signatures checked on the
    // other cores meanwhile, and the one after it travelling. A range that arrives while two are
    // ahead of it asks for the next once the first of them is applied (not the second: then the
    // next range would only start travelling, and its signatures being checked, when this one is
    // checked already, and the cores would take turns instead of working together), so a target
    // that answers faster than this node applies does not pile decoded ranges up in memory.
    const previous = this.#applying;
    let applied!: () => void;
    this.#applying = new Promise<void>((resolve) => (applied = resolve));
    this.#unapplied++;
    let asked = false;
    const askNext = (): void => {
      // Stopped, or the target failed meanwhile (a range before this one did not apply).
      if (asked || source.failed || this.#stopped) return;
      asked = true;
      // The locator goes on past the last block, so that the target answers from there although
      // this node has not applied the range yet, and finds the fork point if it reorganised.
      if (response.tip_height > last.header.height) this.#send(node, this.#after(last));
      else done();
    };
    if (this.#unapplied <= 2) askNext();
    else this.#askOnceApplied = askNext;
    // After the request: preparing the check takes this thread a while, and the target can be
    // reading the next range meanwhile.
    const checked = this.#chain.checkSignatures(blocks);
    try {
      await previous;
      if (source.failed || this.#stopped) return;
      askNext();
      await checked;
      const outcome = await this.#take(source, blocks, response.tip_height);
      if (outcome === 'known') {
        // Blocks this node holds already (gossip brought them meanwhile, or the target answered
        // from below): no fault of the target's, unless it keeps doing it.
        if (++source.idle >= MAX_IDLE_ANSWERS) unserved(`only blocks this node holds, ${source.idle} times in a row`);
        return;
      }
      source.idle = 0;
      this.#progressAt = this.#clock.now();
      this.#distrusted.delete(target);
      if (outcome === 'extended' || outcome === 'reorganized') {
        this.#log(`sync: ${outcome} to height ${this.#chain.tip.height} from ${target.slice(0, 16)}…`);
      } else if (outcome === 'held') {
        this.#log(`sync: holding a branch of ${source.branch.length} blocks from ${target.slice(0, 16)}… until it outgrows height ${this.#chain.tip.height}`);
      }
    } catch (error) {
      // A block its sender is to blame for (not one merely ahead of this node's clock).
      if (error instanceof InvalidBlockError && error.verdict === 'reject') {
        return this.#blame(node, `an invalid block: ${error.message}`);
      }
      if (error instanceof ForkChoiceError && error.code === 'branch-too-long')
        return unserved(`a branch deeper than this node holds aside (${error.message})`);
      if (error instanceof ForkChoiceError || error instanceof InvalidBlockError) {
        // The chain moved under the request (a reorganisation here, or there), or the blocks do not
        // link: ask someone afresh.
        this.#log(`sync: ${error.message}`);
        return unserved("blocks that do not link to this node's chain");
      }
      throw error;
    } finally {
      this.#unapplied--;
      applied();
      const ask = this.#askOnceApplied;
      this.#askOnceApplied = null;
      ask?.();
      const later = this.#askWhenApplied;
      if (later !== null && this.#unapplied === 0) {
        this.#askWhenApplied = null;
        if ((this.#known.get(toHex(later))?.height ?? 0) > this.#chain.tip.height) this.requestFrom(later);
      }
    }
  }

  /**
   * Adds a range to the chain, or holds it: blocks past a fork are held, joined to the ones before
   * them, until their branch is higher than this node's tip, and then handed to the chain as one
   * branch (validated and adopted all together). The chain keeps only a few thousand blocks aside,
   * so a branch as deep as a long partition would never come together there. 'held' when the
   * range joined the held branch.
   */
  async #take(source: Source, blocks: readonly Block[], claimed: number): Promise<AddOutcome | 'held'> {
    // Blocks already on the main chain (an answer may overlap what gossip brought) are dropped.
    let start = 0;
    while (start < blocks.length) {
      const main = await this.#mainHashAt(blocks[start]!.header.height);
      if (main === undefined || !bytesEqual(main, blocks[start]!.hash)) break;
      start++;
    }
    const fresh = blocks.slice(start);
    if (fresh.length === 0) return 'known';
    const first = fresh[0]!;
    const held = source.branch[source.branch.length - 1];
    let branch: Block[];
    if (held !== undefined && bytesEqual(first.header.prev_hash, held.hash)) branch = source.branch.concat(fresh);
    else {
      branch = fresh;
      source.branch = [];
      source.branchBytes = 0;
    }
    const tip = branch[branch.length - 1]!;
    if (tip.header.height > this.#chain.tip.height) {
      const outcome = await this.#chain.addBranch(branch, this.#clock.now());
      // Kept aside when this node's tip moved past it meanwhile: held on, for the next range.
      if (outcome !== 'side') {
        source.branch = [];
        source.branchBytes = 0;
        return outcome;
      }
    } else if (branch === fresh) {
      // The start of a branch links to the main chain, or it is no branch of this chain at all.
      const parent = await this.#mainHashAt(first.header.height - 1);
      if (parent === undefined || !bytesEqual(parent, first.header.prev_hash)) {
        throw new ForkChoiceError('no-common-ancestor', `block ${first.header.height} builds on a block this node does not hold`);
      }
    }
    // Held blocks are not the chain's yet: their headers still count as signed, for equivocation.
    await this.#chain.noteHeaders(fresh);
    source.branch = branch;
    source.branchBytes += fresh.reduce((sum, block) => sum + block.bytes.length, 0);
    if (source.branchBytes > this.#maxBranchBytes) {
      source.branch = [];
      source.branchBytes = 0;
      throw new ForkChoiceError('branch-too-long', `a competing branch of more than ${this.#maxBranchBytes} bytes`);
    }
    // The blocks the branch would replace, four times as many as it holds, are read from the store
    // meanwhile, and once they reach back to the fork point the branch is applied ahead to a copy
    // of the state there, so that the switch, once the branch outgrows the chain, need neither read
    // nor apply (docs/chain.md, "Deep forks"). The peer claims a higher tip, and what this costs
    // stays in proportion to the blocks it sent. A level one is a tie (#probeTie, prepareTie).
    const forkHeight = branch[0]!.header.height - 1;
    if (claimed > this.#chain.tip.height) {
      this.#chain.readRewindAhead(forkHeight, forkHeight + REWIND_AHEAD_RATIO * branch.length);
      void this.#chain.prepareBranch(branch, this.#clock.now());
    } else this.prepareTie(branch);
    return 'held';
  }

  // The answer came from `node`, the peer the request went to: blame it.
  #blame(node: Uint8Array, reason: string): void {
    this.#log(`sync: ${toHex(node).slice(0, 16)}… sent ${reason}`);
    this.#network.penalise(node, reason);
    this.#fail(toHex(node), 'sent invalid blocks');
  }
}
