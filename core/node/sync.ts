/**
 * Chain sync over the gossip topics mesh-heights, mesh-syncreq and mesh-syncresp.
 *
 * Nodes announce their tip (height and hash) to new peers and now and then. A node that hears of a
 * higher tip asks that node for blocks: the request carries a locator (the requester's main-chain
 * hashes from its tip back to genesis, densely near the tip, then at doubling distances), and the
 * target answers with up to 500 main-chain blocks after the highest locator hash it holds on its own
 * main chain. The requester adds them as one branch (all validated, all or nothing) and, while the
 * target is still ahead, asks for the next range before applying the current one, so the network
 * round trip overlaps the work of applying. A node whose answer does not validate is penalised.
 */
import { ForkChoiceError, MAX_BLOCKS_PER_RESPONSE, type Chain } from '../chain/chain.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { decode, encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { decodeBlock, InvalidBlockError, type Block } from '../ledger/block.ts';
import { TOPICS, type GossipMessage, type Network, type Verdict } from '../net/network.ts';
import {
  heightCodec,
  MAX_LOCATOR,
  MAX_RESPONSE_BYTES,
  syncRequestCodec,
  syncResponseCodec,
  type SyncResponse,
} from './wire.ts';

export interface SyncOptions {
  readonly chain: Chain;
  readonly network: Network;
  /** Milliseconds since the epoch (injected so tests control time). */
  readonly now?: () => number;
  /** How long to wait for an answer before asking another node. */
  readonly timeoutMs?: number;
  /** Sync requests served per requesting node per second. */
  readonly servePerSecond?: number;
  readonly log?: (line: string) => void;
}

interface Pending {
  readonly id: string;
  readonly target: string;
  readonly timer: ReturnType<typeof setTimeout>;
}

interface Known {
  readonly node: Uint8Array;
  height: number;
}

// Errors a block can show without its sender being at fault.
const BLAMELESS = new Set(['timestamp-in-future']);

export class Sync {
  readonly #chain: Chain;
  readonly #network: Network;
  readonly #now: () => number;
  readonly #timeoutMs: number;
  readonly #servePerSecond: number;
  readonly #log: (line: string) => void;
  // The best height each node has announced (bounded: nodes that announce the highest are kept).
  readonly #known = new Map<string, Known>();
  readonly #served = new Map<string, { second: number; count: number }>();
  #pending: Pending | null = null;
  #stopped = false;

  constructor(options: SyncOptions) {
    this.#chain = options.chain;
    this.#network = options.network;
    this.#now = options.now ?? Date.now;
    this.#timeoutMs = options.timeoutMs ?? 5_000;
    this.#servePerSecond = options.servePerSecond ?? 20;
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
    if (this.#pending) clearTimeout(this.#pending.timer);
    this.#pending = null;
  }

  /** The highest tip another node has announced. */
  get bestKnownHeight(): number {
    let best = 0;
    for (const k of this.#known.values()) best = Math.max(best, k.height);
    return best;
  }

  /** True while a node is known to be ahead of this one. */
  get behind(): boolean {
    return this.bestKnownHeight > this.#chain.tip.height;
  }

  /** Publishes this node's tip on mesh-heights. */
  async announce(): Promise<void> {
    const tip = this.#chain.tip;
    await this.#network.publish(TOPICS.heights, encode(heightCodec, { height: tip.height, hash: tip.hash }));
  }

  /** Asks `node` for blocks if it is known to be ahead and no request is waiting. */
  requestFrom(node: Uint8Array): void {
    if (this.#pending !== null || this.#stopped) return;
    this.#send(node, this.#locator());
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
    const known = this.#known.get(key);
    if (known) known.height = announced.height;
    else {
      this.#known.set(key, { node: message.origin, height: announced.height });
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
    const id = crypto.getRandomValues(new Uint8Array(8));
    const target = toHex(node);
    const timer = setTimeout(() => {
      if (this.#pending?.id !== toHex(id)) return;
      this.#pending = null;
      // A node that does not answer no longer counts as ahead (else a claimed height it cannot serve
      // would keep this node "behind", and not producing, for ever); its next announcement counts again.
      this.#known.delete(target);
      this.#log(`sync: no answer from ${target.slice(0, 16)}… in ${this.#timeoutMs} ms`);
      this.#retry(target);
    }, this.#timeoutMs);
    this.#pending = { id: toHex(id), target, timer };
    void Promise.resolve(locator)
      .then((hashes) =>
        this.#network.publish(
          TOPICS.syncRequest,
          encode(syncRequestCodec, { target: node, request_id: id, locator: hashes, max_blocks: MAX_BLOCKS_PER_RESPONSE }),
        ),
      )
      .catch((error: unknown) => this.#log(`sync: request failed: ${String(error)}`));
  }

  // After a timeout, asks the next node known to be ahead (not the one that did not answer).
  #retry(silent: string): void {
    const tip = this.#chain.tip.height;
    let best: Known | undefined;
    for (const [key, k] of this.#known) if (key !== silent && k.height > tip && (!best || k.height > best.height)) best = k;
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
    if (!this.#mayServe(toHex(message.origin))) return 'ignore';
    const start = await this.#forkPoint(request.locator);
    const blocks = await this.#chain.blocksFrom(start, Math.min(request.max_blocks, MAX_BLOCKS_PER_RESPONSE));
    const out: Uint8Array[] = [];
    let bytes = 0;
    for (const block of blocks) {
      if (out.length > 0 && bytes + block.bytes.length > MAX_RESPONSE_BYTES) break;
      out.push(block.bytes);
      bytes += block.bytes.length;
    }
    const response: SyncResponse = {
      requester: message.origin,
      request_id: request.request_id,
      tip_height: this.#chain.tip.height,
      blocks: out,
    };
    await this.#network.publish(TOPICS.syncResponse, encode(syncResponseCodec, response));
    // Answered here; forwarding it would only make other nodes pass it around.
    return 'ignore';
  }

  #mayServe(node: string): boolean {
    const second = Math.floor(this.#now() / 1000);
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
    clearTimeout(pending.timer);
    this.#pending = null;
    const known = this.#known.get(pending.target);
    if (known) known.height = response.tip_height;

    let blocks: Block[];
    try {
      blocks = response.blocks.map((bytes) => decodeBlock(this.#chain.params.network, bytes));
    } catch (error) {
      return this.#blame(message, `an undecodable block: ${String(error)}`);
    }
    const last = blocks[blocks.length - 1];
    // Ask for the next range at once when the target is further ahead: the answer travels while
    // this range is applied.
    if (last !== undefined && response.tip_height > last.header.height && !this.#stopped) this.#send(message.origin, [last.hash]);
    if (blocks.length === 0) return 'ignore';
    try {
      const outcome = await this.#chain.addBranch(blocks, this.#now());
      if (outcome === 'extended' || outcome === 'reorganized') {
        this.#log(`sync: ${outcome} to height ${this.#chain.tip.height} from ${pending.target.slice(0, 16)}…`);
      }
      return 'ignore';
    } catch (error) {
      if (error instanceof InvalidBlockError && !BLAMELESS.has(error.code)) {
        return this.#blame(message, `an invalid block: ${error.message}`);
      }
      if (error instanceof ForkChoiceError || error instanceof InvalidBlockError) {
        // The chain moved under the request (a reorganisation here, or there): ask afresh.
        this.#log(`sync: ${error.message}`);
        if (this.#pending === null) this.#send(message.origin, this.#locator());
        return 'ignore';
      }
      throw error;
    }
  }

  // The answer came from its signer: blame it. A relay that merely passed on an answer addressed
  // to someone else could not judge it, so it is not penalised through the gossip verdict.
  #blame(message: GossipMessage, reason: string): Verdict {
    this.#log(`sync: ${toHex(message.origin).slice(0, 16)}… sent ${reason}`);
    this.#network.penalise(message.origin, reason);
    this.#known.delete(toHex(message.origin));
    if (this.#pending?.target === toHex(message.origin)) {
      clearTimeout(this.#pending.timer);
      this.#pending = null;
    }
    return bytesEqual(message.origin, message.peer) ? 'reject' : 'ignore';
  }
}
