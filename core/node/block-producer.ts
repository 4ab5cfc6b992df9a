/**
 * Block production on the timer (`--mine`): at this node's slot after the tip (core/ledger/producer.ts
 * decides it), build a block from the mempool, add it to the chain and gossip it. A new tip
 * re-schedules; while another node is known to be ahead, the node syncs instead of producing, so it
 * does not sign blocks on a tip everyone else has left behind.
 *
 * It never signs two blocks at one height: the slashing-protection record is asked before a block
 * is built and records it before it leaves the node (docs/chain.md "Slashing protection"). And it
 * stops for good, saying why, when it sees its own key sign a block it did not make (doppelganger
 * detection: another machine runs the same key, and both would be slashed).
 */
import type { Chain, ChainEvent, LevelBranch } from '../chain/chain.ts';
import type { Evidence } from '../chain/evidence.ts';
import { buildBlock, nextSlot, type TxSource } from '../chain/miner.ts';
import { SlashingProtection } from '../chain/slashing-protection.ts';
import { goesFirst } from '../chain/tie.ts';
import { RecentSet } from '../collections/recent-set.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { MeshError, messageOf } from '../errors.ts';
import type { Block } from '../ledger/block.ts';
import { blockHash, type Header } from '../ledger/header.ts';
import { scheduleAfter } from '../ledger/producer.ts';
import type { Startable } from '../lifecycle.ts';
import { type Network, TOPICS } from '../net/network.ts';
import { type KeyValueStore, MemoryStore } from '../store/kv.ts';
import { type Clock, systemClock, type Timer } from '../time/clock.ts';

// How often a producer waiting for its slot looks for a tie it could break sooner.
const TIE_WATCH_MS = 2_000;

/** How long past its watch a producer that has peers but heard none of them waits to hear one. */
export const UNHEARD_WATCH_MS = 60_000;

// Hashes of the blocks this run signed, to tell them from a doppelganger's.
const SIGNED_REMEMBERED = 4_096;

/** Why a producer stopped for good: what it saw, and when (ms). */
export interface ProducerHalt {
  readonly reason: string;
  readonly atMs: number;
}

export interface BlockProducerOptions {
  readonly chain: Chain;
  /** Where the block's transactions come from (the node's mempool). */
  readonly mempool: TxSource;
  readonly key: SigningKey;
  /** Gossips a block this node made. */
  readonly publish: (block: Block) => Promise<void>;
  /** True while another node is known to be ahead. */
  readonly behind: () => boolean;
  /** The record that keeps this key from signing twice at one height (default: in memory, this run only). */
  readonly protection?: SlashingProtection;
  /** Evidence heard from peers: evidence against this node's key stops it (doppelganger). */
  readonly evidence?: { onEvidence(listener: (evidence: Evidence) => void): () => void };
  /**
   * How long it only watches after it starts, signing nothing (default 0): a machine already
   * running this key shows itself by a block meanwhile, before this one signs at the same height.
   */
  readonly doppelgangerWaitMs?: number;
  /** True while the node has peers and has heard the tip of none: the watch goes on meanwhile. */
  readonly unheard?: () => boolean;
  /** A valid competing branch level with the tip (`Chain.levelBranch`): a tie to break. */
  readonly levelBranch?: () => LevelBranch | null;
  readonly clock?: Clock;
  readonly log?: (line: string) => void;
}

export class BlockProducer {
  readonly #o: BlockProducerOptions;
  readonly #clock: Clock;
  #timer: Timer | undefined;
  #running: Promise<void> | null = null;
  readonly #protection: SlashingProtection;
  readonly #signed = new RecentSet<string>(SIGNED_REMEMBERED);
  #unsubscribe: (() => void)[] = [];
  #stopped = true;
  #startedAt = 0;
  #halt: ProducerHalt | null = null;
  #producedThisRun = false;
  // The height it last said it would not sign at, so it says so once.
  #refusedAt = -1;

  constructor(options: BlockProducerOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.#protection = options.protection ?? new SlashingProtection(new MemoryStore(), options.chain.params.network);
  }

  /** Set once the producer has stopped for good (it saw its key sign a block it did not make). */
  get halted(): ProducerHalt | null {
    return this.#halt;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#startedAt = this.#clock.now();
    this.#unsubscribe.push(this.#o.chain.subscribe((event) => this.#onChain(event)));
    const evidence = this.#o.evidence;
    if (evidence !== undefined) this.#unsubscribe.push(evidence.onEvidence((e) => this.#onEvidence(e)));
    this.#schedule();
  }

  /** Stops producing; resolves once a block being made is finished. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer?.cancel();
    for (const unsubscribe of this.#unsubscribe) unsubscribe();
    this.#unsubscribe = [];
    await this.#running;
  }

  #onChain(event: ChainEvent): void {
    if (event.type === 'connected') {
      const { header, hash } = event.block;
      if (this.#foreign(header, hash)) {
        this.#stopFor(`block ${header.height} (${toHex(hash).slice(0, 16)}…) is signed with this node's key, but this node did not make it`);
      }
      this.#schedule();
    } else if (event.type === 'equivocation') {
      this.#onEvidence({ a: event.evidence[0], b: event.evidence[1] });
    }
  }

  #onEvidence(evidence: Evidence): void {
    const { network } = this.#o.chain.params;
    const sha = this.#o.chain.crypto.sha256;
    if (![evidence.a, evidence.b].some((h) => this.#foreign(h.header, blockHash(network, h.header, sha)))) return;
    this.#stopFor(`two blocks at height ${evidence.a.header.height} are signed with this node's key`);
  }

  // A block of this key made since this producer started that it did not sign. One from before is
  // history: its own from before a restart, or an incident already dealt with.
  #foreign(header: Header, hash: Uint8Array): boolean {
    return bytesEqual(header.producer, this.#o.key.publicKey) && header.timestamp_ms >= this.#startedAt && !this.#signed.has(toHex(hash));
  }

  // Another machine runs this key: producing on would only add evidence against it.
  #stopFor(what: string): void {
    if (this.#halt !== null) return;
    this.#halt = { reason: `${what}: another machine is producing with this key; this node stopped producing`, atMs: this.#clock.now() };
    this.#timer?.cancel();
    this.#o.log?.(
      `producer: STOPPED. ${this.#halt.reason}. Make sure only one machine runs this key (its bond is slashed for double signing), then restart this node.`,
    );
  }

  #schedule(delayMs?: number): void {
    if (this.#stopped || this.#halt !== null) return;
    this.#timer?.cancel();
    // A tie comes to light between slots (sync applies the rival ahead): looked for at least this often.
    const wait = delayMs ?? Math.min(TIE_WATCH_MS, Math.max(0, nextSlot(this.#o.chain, this.#o.key.publicKey) - this.#clock.now()));
    this.#timer = this.#clock.setTimeout(() => {
      // A timer that fires while a block is being made waits for it, then looks again.
      if (this.#running !== null) {
        void this.#running.then(() => this.#schedule());
        return;
      }
      this.#running = this.#produce().finally(() => (this.#running = null));
    }, wait);
  }

  async #produce(): Promise<void> {
    const { chain, key } = this.#o;
    const interval = chain.params.blockIntervalMs;
    if (this.#stopped || this.#halt !== null) return;
    if (this.#o.behind()) return this.#schedule(interval);
    const now = this.#clock.now();
    const watched = this.#startedAt + (this.#o.doppelgangerWaitMs ?? 0);
    if (now < watched) return this.#schedule(watched - now);
    // Peers, and no tip heard from any, before it has signed anything: a machine with this key may
    // hold their gossip streams. It watches on until sync hears one (it asks them by request), for
    // UNHEARD_WATCH_MS at most. Once it has produced, peers that come later change nothing.
    if (!this.#producedThisRun && this.#o.doppelgangerWaitMs !== undefined && this.#o.unheard?.() === true && now < watched + UNHEARD_WATCH_MS) {
      return this.#schedule(interval);
    }
    const rival = this.#rival();
    const slot = rival === null ? nextSlot(chain, key.publicKey) : scheduleAfter(rival.state, rival.tip, interval).earliest(key.publicKey);
    if (now < slot) return this.#schedule(Math.min(slot - now, TIE_WATCH_MS));
    try {
      const tip = chain.tip;
      const last = await this.#protection.last(key.publicKey);
      if (last !== null && last.height > tip.height) {
        // Signed, recorded, and then not stored (a crash in between): that very block goes out again.
        if (last.height === tip.height + 1 && bytesEqual(last.block.header.prev_hash, tip.hash)) return await this.#emit(last.block);
        if (this.#refusedAt !== tip.height + 1) {
          this.#refusedAt = tip.height + 1;
          this.#o.log?.(`producer: this key signed block ${last.height} already; it signs nothing at height ${tip.height + 1} (slashing protection)`);
        }
        return this.#schedule(interval);
      }
      // On a rival, a block of the reward alone: the pool's transactions were checked against this tip.
      const block = await (rival === null
        ? buildBlock(chain, this.#o.mempool, key, Math.max(now, slot))
        : buildBlock(chain, null, key, Math.max(now, slot), rival));
      if (this.#stopped || this.#halt !== null) return;
      // The rival changed while the block was built (sync applies it ahead): the block is dropped unrecorded.
      if (rival !== null && this.#rival()?.tip !== rival.tip) return this.#schedule(0);
      await this.#protection.record(block);
      await this.#emit(block, rival);
    } catch (error) {
      // The tip moved while the block was built: the new tip has already re-scheduled.
      if (error instanceof MeshError && error.code === 'tip-moved') return;
      this.#o.log?.(`producer: ${messageOf(error)}`);
      this.#schedule(interval);
    }
  }

  // A tie: a valid competing branch level with the tip (a race, or the two halves of a healed
  // partition). Each side's producers would follow their own branch's schedule, and a heal could
  // wait intervals for a producer ranked on its side, or both sides sign at once, height after
  // height. Every producer builds on the tip that goes first (`goesFirst`: the earlier timestamp,
  // then the lower hash): its own, or the rival, on which its block makes a longer branch that fork
  // choice adopts (docs/chain.md, "Ties after a partition").
  #rival(): LevelBranch | null {
    const rival = this.#o.levelBranch?.() ?? null;
    return rival !== null && goesFirst(rival.tip, this.#o.chain.tip) ? rival : null;
  }

  async #emit(block: Block, on: LevelBranch | null = null): Promise<void> {
    this.#signed.add(toHex(block.hash));
    this.#producedThisRun = true;
    const chain = this.#o.chain;
    const outcome = on === null ? await chain.addBlock(block, this.#clock.now()) : await chain.addBranch([...on.blocks, block], this.#clock.now());
    if (outcome === (on === null ? 'extended' : 'reorganized')) await this.#o.publish(block);
  }
}

export interface ProductionComponents {
  readonly chain: Chain;
  readonly mempool: TxSource;
  readonly key: SigningKey;
  readonly network: Network;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  /** Production waits while sync knows of a node ahead, and watches on while it has heard no peer. */
  readonly sync: { readonly behind: boolean; readonly heard: boolean; levelBranch(): LevelBranch | null };
  /** Evidence heard from peers, for doppelganger detection. */
  readonly evidence?: BlockProducerOptions['evidence'];
}

export interface ProductionInit {
  /** Where the slashing-protection record is kept (default: memory, for this run only). */
  readonly store?: KeyValueStore;
  /** How long the producer only watches for its key's blocks after it starts (default 0). */
  readonly doppelgangerWaitMs?: number;
}

/** Block production (`--mine`) as a service: it starts once sync has. */
export function productionService(init: ProductionInit = {}): (components: ProductionComponents) => Startable & { readonly producer: BlockProducer } {
  return (c) => {
    const producer = new BlockProducer({
      chain: c.chain,
      mempool: c.mempool,
      key: c.key,
      publish: (block) => c.network.publish(TOPICS.blocks, block.bytes),
      behind: () => c.sync.behind,
      // Peers it dialled (its bootstrap and routing peers) count: one that dialled in, a wallet
      // page announcing no height, holds nothing up.
      unheard: () => !c.sync.heard && c.network.peers().some((p) => p.direction === 'outbound'),
      levelBranch: () => c.sync.levelBranch(),
      ...(init.store === undefined ? {} : { protection: new SlashingProtection(init.store, c.chain.params.network) }),
      ...(c.evidence === undefined ? {} : { evidence: c.evidence }),
      ...(init.doppelgangerWaitMs === undefined ? {} : { doppelgangerWaitMs: init.doppelgangerWaitMs }),
      clock: c.clock,
      log: c.log,
    });
    return { producer, afterStart: () => producer.start(), stop: () => producer.stop() };
  };
}
