/**
 * Block production on the timer (`--mine`): at this node's slot after the tip (core/ledger/producer.ts
 * decides it), build a block from the mempool, add it to the chain and gossip it. A new tip
 * re-schedules; while another node is known to be ahead, the node syncs instead of producing, so it
 * does not sign blocks on a tip everyone else has left behind.
 */
import type { Chain } from '../chain/chain.ts';
import { buildBlock, nextSlot, type TxSource } from '../chain/miner.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { MeshError } from '../errors.ts';
import type { Block } from '../ledger/block.ts';
import type { Startable } from '../lifecycle.ts';
import { type Network, TOPICS } from '../net/network.ts';
import { type Clock, systemClock, type Timer } from '../time/clock.ts';

export interface BlockProducerOptions {
  readonly chain: Chain;
  /** Where the block's transactions come from (the node's mempool). */
  readonly mempool: TxSource;
  readonly key: SigningKey;
  /** Gossips a block this node made. */
  readonly publish: (block: Block) => Promise<void>;
  /** True while another node is known to be ahead. */
  readonly behind: () => boolean;
  readonly clock?: Clock;
  readonly log?: (line: string) => void;
}

export class BlockProducer {
  readonly #o: BlockProducerOptions;
  readonly #clock: Clock;
  #timer: Timer | undefined;
  #running: Promise<void> | null = null;
  #unsubscribe: (() => void) | null = null;
  #stopped = true;

  constructor(options: BlockProducerOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#unsubscribe = this.#o.chain.subscribe((event) => {
      if (event.type === 'connected') this.#schedule();
    });
    this.#schedule();
  }

  /** Stops producing; resolves once a block being made is finished. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    await this.#running;
  }

  #schedule(delayMs?: number): void {
    if (this.#stopped) return;
    this.#timer?.cancel();
    const wait = delayMs ?? Math.max(0, nextSlot(this.#o.chain, this.#o.key.publicKey) - this.#clock.now());
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
    if (this.#stopped) return;
    if (this.#o.behind()) return this.#schedule(interval);
    const slot = nextSlot(chain, key.publicKey);
    const now = this.#clock.now();
    if (now < slot) return this.#schedule(slot - now);
    try {
      const block = await buildBlock(chain, this.#o.mempool, key, Math.max(now, slot));
      if (this.#stopped) return;
      const outcome = await chain.addBlock(block, this.#clock.now());
      if (outcome === 'extended') await this.#o.publish(block);
    } catch (error) {
      // The tip moved while the block was built: the new tip has already re-scheduled.
      if (error instanceof MeshError && error.code === 'tip-moved') return;
      this.#o.log?.(`producer: ${error instanceof Error ? error.message : String(error)}`);
      this.#schedule(interval);
    }
  }
}

export interface ProductionComponents {
  readonly chain: Chain;
  readonly mempool: TxSource;
  readonly key: SigningKey;
  readonly network: Network;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  /** Production waits while sync knows of a node ahead. */
  readonly sync: { readonly behind: boolean };
}

/** Block production (`--mine`) as a service: it starts once sync has. */
export function productionService(): (components: ProductionComponents) => Startable & { readonly producer: BlockProducer } {
  return (c) => {
    const producer = new BlockProducer({
      chain: c.chain,
      mempool: c.mempool,
      key: c.key,
      publish: (block) => c.network.publish(TOPICS.blocks, block.bytes),
      behind: () => c.sync.behind,
      clock: c.clock,
      log: c.log,
    });
    return { producer, afterStart: () => producer.start(), stop: () => producer.stop() };
  };
}
