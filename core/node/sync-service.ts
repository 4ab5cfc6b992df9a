/**
 * Keeping up with the mesh, as a service of the node: blocks gossiped in, sync of missing blocks
 * (sync.ts), state segments served to light nodes (segments.ts), both answered within one serve
 * budget per peer (serve-budget.ts), and the tip announced to each new peer and on a timer. Every
 * node runs it, the light node too.
 */
import { type Chain, ForkChoiceError, type LevelBranch } from '../chain/chain.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { type Block, type BlockRuleCode, decodeBlock, InvalidBlockError } from '../ledger/block.ts';
import type { Startable } from '../lifecycle.ts';
import { type GossipMessage, type Network, TOPICS, type Verdict } from '../net/network.ts';
import type { Clock, Timer } from '../time/clock.ts';
import { Segments } from './segments.ts';
import { SERVE_BYTES_PER_SECOND, ServeBudget } from './serve-budget.ts';
import { Sync } from './sync.ts';

export interface SyncInit {
  /** How often the tip is announced on mesh-heights besides on every new peer (default 15 s). */
  readonly announceIntervalMs?: number;
  readonly syncTimeoutMs?: number;
  /** Bytes of state per light-node segment (default MAX_SEGMENT_BYTES; smaller in tests). */
  readonly segmentBytes?: number;
  /**
   * Bytes of sync ranges and segments answered per peer and second (default 4 MiB); all peers
   * together get four times that.
   */
  readonly serveBytesPerSecond?: number;
}

export interface SyncComponents {
  readonly chain: Chain;
  readonly network: Network;
  readonly clock: Clock;
  readonly log: (line: string) => void;
}

// Blocks whose parent is unknown make the node sync from the peer that sent them; this bounds how often.
const SYNC_NUDGE_MS = 1_000;
// A node announces its height to each peer that joins (node-api.md §6); again after 1 s and 3 s, in
// case the first is lost.
const JOIN_ANNOUNCE_DELAYS_MS = [1_000, 3_000];
const ANNOUNCE_INTERVAL_MS = 15_000;
// The (height, producer) pairs remembered (side blocks passed on, state faults ignored): a few heights' worth.
const PAIRS_REMEMBERED = 256;
// The block rules only its state transition shows: a competing block is passed on without one.
const STATE_RULES: ReadonlySet<string> = new Set<BlockRuleCode>(['bad-state-root', 'tx-rule', 'reward-not-first', 'known-invalid']);

export class SyncFeature implements Startable {
  readonly sync: Sync;
  /** Serves (and fetches) the state at checkpoints for light nodes. */
  readonly segments: Segments;
  /** The bytes this node answers each peer with, sync ranges and segments together, and what it sent. */
  readonly budget: ServeBudget;
  readonly #c: SyncComponents;
  readonly #announceIntervalMs: number;
  readonly #timers = new Set<Timer>();
  #unsubscribePeers: (() => void) | null = null;
  #lastNudge = 0;
  readonly #sideRelayed = new Set<string>();
  /** The (height, producer) pairs whose block failed on its state and was ignored. */
  readonly #stateFaults = new Set<string>();

  constructor(components: SyncComponents, init: SyncInit = {}) {
    this.#c = components;
    this.#announceIntervalMs = init.announceIntervalMs ?? ANNOUNCE_INTERVAL_MS;
    // Sync ranges and segments draw on one budget per peer: what a peer can make this node send.
    this.budget = ServeBudget.perRequester(init.serveBytesPerSecond ?? SERVE_BYTES_PER_SECOND, components.clock);
    this.sync = new Sync({
      chain: components.chain,
      network: components.network,
      clock: components.clock,
      budget: this.budget,
      log: components.log,
      ...(init.syncTimeoutMs === undefined ? {} : { timeoutMs: init.syncTimeoutMs }),
    });
    this.segments = new Segments(components.network, components.chain.params, components.chain, {
      clock: components.clock,
      budget: this.budget,
      ...(init.segmentBytes === undefined ? {} : { segmentBytes: init.segmentBytes }),
    });
  }

  /** True while another node is known to be ahead. */
  get behind(): boolean {
    return this.sync.behind;
  }

  /** Whether a peer's tip ever reached this node (by gossip or an answer to a request). */
  get heard(): boolean {
    return this.sync.heard;
  }

  /** A valid competing branch level with the tip (`Chain.levelBranch`): a tie the producer breaks. */
  levelBranch(): LevelBranch | null {
    return this.#c.chain.levelBranch();
  }

  /** Announces this node's tip to its peers. */
  announce(): Promise<void> {
    return this.sync.announce();
  }

  start(): void {
    this.segments.start();
    this.#unsubscribePeers = this.#c.network.onPeerJoined((peer) => {
      this.#announce();
      this.#askIfUnheard(peer);
      for (const delay of JOIN_ANNOUNCE_DELAYS_MS) {
        this.#later(delay, () => {
          this.#announce();
          this.#askIfUnheard(peer);
        });
      }
    });
  }

  // Blocks are taken, and sync begins, once every other service listens to the chain: each block
  // connected reaches them, and a block on an unknown parent finds sync ready for the answer.
  async afterStart(): Promise<void> {
    this.sync.start();
    this.#c.network.handle(TOPICS.blocks, (m) => this.#onBlock(m));
    this.#timers.add(
      this.#c.clock.setInterval(() => {
        this.#announce();
        this.#askIfUnheard(this.#c.network.peers()[0]?.node);
      }, this.#announceIntervalMs),
    );
    await this.sync.announce().catch(() => {});
    // Peers met before sync started (the bootstrap peers) are asked as newcomers are.
    this.#askIfUnheard(this.#c.network.peers()[0]?.node);
    for (const delay of JOIN_ANNOUNCE_DELAYS_MS) this.#later(delay, () => this.#askIfUnheard(this.#c.network.peers()[0]?.node));
  }

  // No announcement goes out while the other services stop.
  beforeStop(): void {
    for (const timer of this.#timers) timer.cancel();
    this.#timers.clear();
    this.#unsubscribePeers?.();
    this.#unsubscribePeers = null;
  }

  stop(): void {
    this.beforeStop();
    this.sync.stop();
    this.segments.stop();
  }

  #announce(): void {
    void this.sync.announce().catch(() => {});
  }

  // A node that has heard no peer's tip asks `peer` for blocks by request: gossip may never come (a
  // second machine with this node's key holds the gossip streams of every peer that met it first),
  // and a producer must see its key's blocks to stop (docs/network.md, "Doppelganger").
  #askIfUnheard(peer: Uint8Array | undefined): void {
    if (peer !== undefined && !this.sync.heard) this.sync.requestFrom(peer);
  }

  #later(delayMs: number, fn: () => void): void {
    const timer = this.#c.clock.setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, delayMs);
    this.#timers.add(timer);
  }

  /**
   * Whether a block kept aside is passed on: one that competes with the tip at its height, signed
   * by a producer with weight, the first of that producer there. A fork race is won by whichever
   * branch grows first, and a node that never saw the winner's first block waited a block interval
   * or more to sync it (the p99 propagation of 20 to 40 s in docs/scale.md); passed on, it is held
   * everywhere when the race ends. Its
   * signature and contents were checked, as a block is before gossip passes it on elsewhere
   * (Ethereum's gossip rules: the proposer's signature, not the state transition). A second block
   * of one producer at one height is equivocation, which evidence carries, and goes no further.
   */
  #relaysSide(block: Block): boolean {
    const height = block.header.height;
    const tip = this.#c.chain.tip;
    if (height !== tip.height) return false;
    if (bytesEqual(block.header.producer, tip.block.header.producer) || this.#sideRelayed.has(pairKey(block))) return false;
    // Any key signs a block: only a producer with weight has its competing block passed on.
    if (!this.#hasWeight(block.header.producer)) return false;
    return remember(this.#sideRelayed, pairKey(block));
  }

  // A block kept aside at the tip's height: a race, which the producer breaks once the block is
  // known valid, signatures and all (docs/chain.md, "Ties after a partition").
  async #prepareTie(block: Block): Promise<void> {
    const chain = this.#c.chain;
    if (block.header.height !== chain.tip.height || !bytesEqual(block.header.prev_hash, chain.tip.block.header.prev_hash)) return;
    await chain.checkSignatures([block]);
    this.sync.prepareTie([block]);
  }

  #hasWeight(producer: Uint8Array): boolean {
    const id = toHex(producer);
    return this.#c.chain.state.weights().some(([holder, weight]) => holder === id && weight > 0n);
  }

  async #onBlock(message: GossipMessage): Promise<Verdict> {
    const chain = this.#c.chain;
    let block: Block;
    try {
      block = decodeBlock(chain.params.network, message.data, chain.crypto.sha256);
    } catch {
      return 'reject';
    }
    try {
      const outcome = await chain.addBlock(block, this.#c.clock.now());
      if (outcome === 'extended' || outcome === 'reorganized') return 'accept';
      if (outcome !== 'side') return 'ignore';
      void this.#prepareTie(block);
      return this.#relaysSide(block) ? 'accept' : 'ignore';
    } catch (error) {
      if (error instanceof InvalidBlockError) {
        if (error.verdict !== 'reject') return error.verdict;
        this.#c.log(`gossip: block ${block.header.height} from ${toHex(message.peer).slice(0, 16)}… is invalid: ${error.message}`);
        // A weighted producer's competing block is passed on unjudged by its state (#relaysSide):
        // the fault is the producer's, and the peer that handed it over keeps its score.
        // Once per producer and height: a second is no race but a flood, and the sender answers for it.
        if (STATE_RULES.has(error.code) && this.#hasWeight(block.header.producer) && remember(this.#stateFaults, pairKey(block))) return 'ignore';
        return 'reject';
      }
      // A block on a parent this node lacks: it is behind (or forked), so it asks the peer that
      // handed the block over. That peer validated the block before passing it on, so it holds the
      // parent; the producer may be several hops away, and sync requests reach direct peers only.
      if (error instanceof ForkChoiceError && error.behind) {
        const now = this.#c.clock.now();
        if (now - this.#lastNudge >= SYNC_NUDGE_MS) {
          this.#lastNudge = now;
          this.sync.requestFrom(message.peer);
        }
        return 'ignore';
      }
      throw error;
    }
  }
}

/** The sync service (every node runs it). */
export function syncService(init: SyncInit = {}): (components: SyncComponents) => SyncFeature {
  return (components) => new SyncFeature(components, init);
}

const pairKey = (block: Block): string => `${block.header.height}:${toHex(block.header.producer)}`;

/** Adds `key` to `pairs` (the oldest go past PAIRS_REMEMBERED); false when it was there already. */
function remember(pairs: Set<string>, key: string): boolean {
  if (pairs.has(key)) return false;
  pairs.add(key);
  for (const old of pairs) {
    if (pairs.size <= PAIRS_REMEMBERED) break;
    pairs.delete(old);
  }
  return true;
}
