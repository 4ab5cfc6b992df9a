/**
 * Chain sync over the gossip topics mesh-heights, mesh-syncreq and mesh-syncresp.
 *
 * Nodes announce their tip (height and hash) to new peers and now and then. A node that hears of a
 * higher tip asks that node for blocks: the request carries a locator (the requester's main-chain
 * hashes from its tip back to genesis, densely near the tip, then at doubling distances), and the
 * target answers with up to 500 main-chain blocks after the highest locator hash it holds on its own
 * main chain. The requester adds them as one branch (all validated, all or nothing) and, while the
 * target is still ahead, asks for the next range as an answer arrives, so one range travels while
 * the one before it is checked and the one before that applied. A node whose answer does not
 * validate is penalised; one that claims a higher tip and does not serve it is not asked again for
 * a while, and a claim that sync makes no progress on holds block production back only briefly
 * (docs/network.md, "Sync").
 */
import { type Chain, ForkChoiceError, MAX_BLOCKS_PER_RESPONSE } from '../chain/chain.ts';
import { type Random, systemRandom } from '../crypto/random.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { decode, encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { type Block, decodeBlock, InvalidBlockError } from '../ledger/block.ts';
import { type GossipMessage, type Network, TOPICS, type Verdict } from '../net/network.ts';
import { type Clock, systemClock, type Timer } from '../time/clock.ts';
import { ServeBudget } from './serve-budget.ts';
import { heightCodec, MAX_LOCATOR, MAX_RESPONSE_BYTES, type SyncResponse, syncRequestCodec, syncResponseCodec } from './wire.ts';

export interface SyncOptions {
  readonly chain: Chain;
  readonly network: Network;
  /** Time and timers (injected so tests control time). */
  readonly clock?: Clock;
  /** Request ids come from here. */
  readonly random?: Random;
  /** How long to wait for an answer before asking another node. */
  readonly timeoutMs?: number;
  /** Sync requests served per requesting node per second. */
  readonly servePerSecond?: number;
  /**
   * Bytes of blocks answered per requesting node per second (default 4 MiB); all requesters
   * together get four times that.
   */
  readonly serveBytesPerSecond?: number;
  /**
   * How long a claimed higher tip holds block production back while sync makes no progress
   * (default 3 × timeoutMs).
   */
  readonly stallMs?: number;
  readonly log?: (line: string) => void;
}

interface Pending {
  readonly id: string;
  readonly target: string;
  readonly source: Source;
  /** Unset once the answer is in and being dealt with. */
  readonly timer?: Timer;
}

/** The node ranges are being fetched from; `failed` once it failed to serve one. */
interface Source {
  readonly target: string;
  failed: boolean;
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

export class Sync {
  readonly #chain: Chain;
  readonly #network: Network;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #timeoutMs: number;
  readonly #servePerSecond: number;
  readonly #log: (line: string) => void;
  // The best height each node has announced (bounded: nodes that announce the highest are kept).
  readonly #known = new Map<string, Known>();
  readonly #served = new Map<string, { second: number; count: number }>();
  readonly #budget: ServeBudget;
  readonly #distrusted = new Map<string, Distrust>();
  readonly #stallMs: number;
  #pending: Pending | null = null;
  #source: Source | null = null;
  // The last sync answer's application, and the answers received and not yet applied (see #onResponse).
  #applying: Promise<void> = Promise.resolve();
  #unapplied = 0;
  // The next range's request of an answer that arrived while two were ahead of it: sent once the
  // first of them is applied.
  #askOnceApplied: (() => void) | null = null;
  #stopped = false;
  // When this node first saw a higher tip (null while none), and when sync last moved its chain.
  #aheadSince: number | null = null;
  #progressAt = 0;

  constructor(options: SyncOptions) {
    this.#chain = options.chain;
    this.#network = options.network;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
    this.#timeoutMs = options.timeoutMs ?? 5_000;
    this.#servePerSecond = options.servePerSecond ?? 20;
    const serveBytes = options.serveBytesPerSecond ?? 4 * 1024 * 1024;
    this.#budget = new ServeBudget(serveBytes, 4 * serveBytes, this.#clock);
    this.#stallMs = options.stallMs ?? 3 * this.#timeoutMs;
    this.#log = options.log ?? (() => {});
  }

  /** Subscribes to the sync topics. */
  start(): void {
    this.#network.handle(TOPICS.heights, (m) => this.#onHeight(m));
    this.#network.handle(TOPICS.syncRequest, (m) => this.#onRequest(m));
    this.#network.handle(TOPICS.syncResponse, (m) => this.#onResponse(m));
  }

  stop(): void {
    this.#stopped = true;
    this.#pending?.timer?.cancel();
    this.#pending = null;
  }

  /** The tips other nodes announced (height and block hash), the latest of each, from nodes not distrusted. */
  announcedTips(): { node: Uint8Array; height: number; hash: Uint8Array }[] {
    return [...this.#known.values()].map((k) => ({ node: k.node, height: k.height, hash: k.hash }));
  }

  /** The highest tip another node has announced. */
  get bestKnownHeight(): number {
    let best = 0;
    for (const k of this.#known.values()) best = Math.max(best, k.height);
    return best;
  }

  /**
   * True while a node is known to be ahead of this one and sync is getting its blocks: since the
   * higher tip was first heard of, or since sync last moved the chain, less than `stallMs` passed.
   * A claim that nobody serves (a liar, or many, each found out only after a timeout) must not
   * keep this node from producing for longer than that.
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

  /** Asks `node` for blocks unless a request is waiting or `node` recently failed to serve. */
  requestFrom(node: Uint8Array): void {
    if (this.#pending !== null || this.#stopped || this.#isDistrusted(toHex(node))) return;
    this.#send(node, this.#locator());
  }

  #isDistrusted(node: string): boolean {
    const entry = this.#distrusted.get(node);
    return entry !== undefined && this.#clock.now() < entry.until;
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
      this.#pending.timer?.cancel();
      this.#pending = null;
    }
    if (this.#pending === null && !this.#stopped) this.#retry(node);
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
    return 'ignore';
  }

  #forgetLowest(): void {
    let lowest: string | undefined;
    let height = Infinity;
    for (const [key, k] of this.#known) if (k.height < height) [lowest, height] = [key, k.height];
    if (lowest !== undefined) this.#known.delete(lowest);
  }

  #send(node: Uint8Array, locator: Uint8Array[] | Promise<Uint8Array[]>): void {
    const id = this.#random.bytes(8);
    const target = toHex(node);
    const timer = this.#clock.setTimeout(() => {
      if (this.#pending?.id !== toHex(id)) return;
      this.#pending = null;
      this.#fail(target, `did not answer in ${this.#timeoutMs} ms`);
    }, this.#timeoutMs);
    if (this.#source?.target !== target) this.#source = { target, failed: false };
    this.#pending = { id: toHex(id), target, source: this.#source, timer };
    void Promise.resolve(locator)
      .then((hashes) =>
        this.#network.publish(
          TOPICS.syncRequest,
          encode(syncRequestCodec, { target: node, request_id: id, locator: hashes, max_blocks: MAX_BLOCKS_PER_RESPONSE }),
        ),
      )
      .catch((error: unknown) => this.#log(`sync: request failed: ${String(error)}`));
  }

  // After a failure, asks the next node known to be ahead (not the one that failed).
  #retry(failed: string): void {
    const tip = this.#chain.tip.height;
    let best: Known | undefined;
    for (const [key, k] of this.#known) {
      if (key !== failed && k.height > tip && !this.#isDistrusted(key) && (!best || k.height > best.height)) best = k;
    }
    if (best) this.#send(best.node, this.#locator());
  }

  // Main-chain hashes from the tip down: the last 16 heights, then doubling gaps, then the oldest held.
  async #locator(): Promise<Uint8Array[]> {
    const tip = this.#chain.tip;
    const hashes: Uint8Array[] = [];
    let step = 1;
    for (let h = tip.height; h > this.#chain.base && hashes.length < MAX_LOCATOR - 1; h -= step) {
      const hash = await this.#chain.hashAt(h);
      if (hash) hashes.push(hash);
      if (hashes.length >= 16) step *= 2;
    }
    const base = await this.#chain.hashAt(this.#chain.base);
    if (base) hashes.push(base);
    return hashes;
  }

  async #onRequest(message: GossipMessage): Promise<Verdict> {
    let request;
    try {
      request = decode(syncRequestCodec, message.data);
    } catch {
      return 'reject';
    }
    // Requests go to direct peers only; one addressed to another node is not passed on.
    if (!bytesEqual(request.target, this.#network.self)) return 'ignore';
    // A request costs its sender a few bytes and this node a range of blocks read from the store and
    // sent to every peer (gossip publishes to all of them): answers are held to a byte budget per
    // requester and in all, besides a count of requests.
    const requester = toHex(message.origin);
    if (!this.#mayServe(requester) || !this.#budget.reserve(requester, MAX_RESPONSE_BYTES)) return 'ignore';
    const start = await this.#forkPoint(request.locator);
    const { blocks, tipHeight } = await this.#chain.blockBytesFrom(start, Math.min(request.max_blocks, MAX_BLOCKS_PER_RESPONSE), MAX_RESPONSE_BYTES);
    this.#budget.refund(requester, MAX_RESPONSE_BYTES - blocks.reduce((sum, block) => sum + block.length, 0));
    const response: SyncResponse = { requester: message.origin, request_id: request.request_id, tip_height: tipHeight, blocks };
    await this.#network.publish(TOPICS.syncResponse, encode(syncResponseCodec, response));
    // Answered here; forwarding it would only make other nodes pass it around.
    return 'ignore';
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

  // The height after the highest locator hash on this node's main chain (the requester's genesis
  // is this node's genesis: it is fixed per network).
  async #forkPoint(locator: readonly Uint8Array[]): Promise<number> {
    for (const hash of locator) {
      const block = await this.#chain.blockByHash(hash);
      if (block === undefined) continue;
      const main = await this.#chain.hashAt(block.header.height);
      if (main !== undefined && bytesEqual(main, hash)) return block.header.height + 1;
    }
    return Math.max(1, this.#chain.base);
  }

  async #onResponse(message: GossipMessage): Promise<Verdict> {
    let response;
    try {
      response = decode(syncResponseCodec, message.data);
    } catch {
      return 'reject';
    }
    // An answer reaches its requester directly (the target publishes to its peers); passing up to
    // 500 blocks on to everyone else would cost the whole mesh bandwidth for one node's sync.
    if (!bytesEqual(response.requester, this.#network.self)) return 'ignore';
    const pending = this.#pending;
    if (pending === null || pending.id !== toHex(response.request_id) || pending.target !== toHex(message.origin)) return 'ignore';
    pending.timer?.cancel();
    // Until this answer is dealt with, it stays pending, so that no other request goes out meanwhile
    // (its answer would overlap this one).
    const answered: Pending = { id: pending.id, target: pending.target, source: pending.source };
    this.#pending = answered;
    const done = (): void => {
      if (this.#pending === answered) this.#pending = null;
    };
    const known = this.#known.get(pending.target);
    if (known) known.height = response.tip_height;

    let blocks: Block[];
    try {
      blocks = response.blocks.map((bytes) => decodeBlock(this.#chain.params.network, bytes, this.#chain.crypto.sha256));
    } catch (error) {
      return this.#blame(message, `an undecodable block: ${String(error)}`);
    }
    // An answer that claims more than this node has but gives it nothing new (no blocks, blocks it
    // holds, blocks that do not link) is a failure to serve, whoever is at fault: else a peer could
    // keep this node asking, and "behind", for ever.
    const unserved = (what: string): Verdict => {
      done();
      if (response.tip_height > this.#chain.tip.height) this.#fail(pending.target, `claims height ${response.tip_height} but sent ${what}`);
      return 'ignore';
    };
    const last = blocks[blocks.length - 1];
    if (last === undefined) return unserved('no blocks');
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
      if (asked || pending.source.failed || this.#stopped) return;
      asked = true;
      if (response.tip_height > last.header.height) {
        // The locator goes on past the last hash, so that the target answers from there although
        // this node has not applied the range yet, and finds the fork point if it reorganised.
        this.#send(
          message.origin,
          this.#locator().then((hashes) => [last.hash, ...hashes].slice(0, MAX_LOCATOR)),
        );
      } else {
        done();
      }
    };
    if (this.#unapplied <= 2) askNext();
    else this.#askOnceApplied = askNext;
    // After the request: preparing the check takes this thread a while, and the target can be
    // reading the next range meanwhile.
    const checked = this.#chain.checkSignatures(blocks);
    try {
      await previous;
      if (pending.source.failed || this.#stopped) return 'ignore';
      askNext();
      await checked;
      const outcome = await this.#chain.addBranch(blocks, this.#clock.now());
      if (outcome === 'extended' || outcome === 'reorganized') {
        this.#progressAt = this.#clock.now();
        this.#distrusted.delete(pending.target);
        this.#log(`sync: ${outcome} to height ${this.#chain.tip.height} from ${pending.target.slice(0, 16)}…`);
      }
      return outcome === 'known' ? unserved('only blocks this node holds') : 'ignore';
    } catch (error) {
      // A block its sender is to blame for (not one merely ahead of this node's clock).
      if (error instanceof InvalidBlockError && error.verdict === 'reject') {
        return this.#blame(message, `an invalid block: ${error.message}`);
      }
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
    }
  }

  // The answer came from its signer: blame it. A relay that merely passed on an answer addressed
  // to someone else could not judge it, so it is not penalised through the gossip verdict.
  #blame(message: GossipMessage, reason: string): Verdict {
    this.#log(`sync: ${toHex(message.origin).slice(0, 16)}… sent ${reason}`);
    this.#network.penalise(message.origin, reason);
    this.#fail(toHex(message.origin), 'sent invalid blocks');
    return bytesEqual(message.origin, message.peer) ? 'reject' : 'ignore';
  }
}
