/**
 * A mesh node: its base components (key, chain, pool, own transactions, network, clock) and the
 * services it is composed of, each made by a factory from the components and the services listed
 * before it, the way js-libp2p composes its services. The node starts its services phase by
 * phase in the order they are listed and stops them in reverse (core/lifecycle.ts); it does
 * nothing else. Which services a full node and the browser's light node run: services.ts.
 *
 * @example
 * const node = await MeshNode.create({ chain, network, key, services: { ledger: ledgerService(), sync: syncService() } });
 * await node.start();
 * node.services.ledger.status();
 */
import type { Chain } from '../chain/chain.ts';
import { Mempool } from '../chain/mempool.ts';
import { OwnTransactions } from '../chain/own-transactions.ts';
import { TxFeed } from '../chain/tx-feed.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { type Random, systemRandom } from '../crypto/random.ts';
import { toHex } from '../encoding/hex.ts';
import { startAll, stopAll } from '../lifecycle.ts';
import { type Network, TOPICS } from '../net/network.ts';
import { type Clock, systemClock } from '../time/clock.ts';

/** What every service may use. */
export interface NodeComponents {
  /** 64-hex NodeId: the key's public half. */
  readonly nodeId: string;
  readonly key: SigningKey;
  readonly chain: Chain;
  readonly mempool: Mempool;
  /** This node's own transactions, of every kind: signed, pooled, streamed and gossiped in one place. */
  readonly own: OwnTransactions;
  /** What /transactions/stream tells of (docs/node-api.md). */
  readonly txFeed: TxFeed;
  readonly network: Network;
  readonly clock: Clock;
  readonly random: Random;
  readonly log: (line: string) => void;
}

/** A factory per service: it gets the components and every service listed before it (as js-libp2p's). */
export type ServiceFactories<S> = { [K in keyof S]: (components: NodeComponents & S) => S[K] | Promise<S[K]> };

export interface MeshNodeInit<S> {
  readonly chain: Chain;
  readonly network: Network;
  readonly key: SigningKey;
  /** Time and timers (default: the system clock). */
  readonly clock?: Clock;
  /** Request ids and jitter (default: the platform's CSPRNG). */
  readonly random?: Random;
  readonly log?: (line: string) => void;
  /** The services, in the order they are made and started. */
  readonly services: ServiceFactories<S>;
}

export class MeshNode<S extends object = object> {
  readonly nodeId: string;
  readonly components: NodeComponents & S;
  readonly services: S;
  readonly #order: unknown[];

  private constructor(components: NodeComponents & S, services: S, order: unknown[]) {
    this.nodeId = components.nodeId;
    this.components = components;
    this.services = services;
    this.#order = order;
  }

  /** Makes the components, then each service in the order listed. */
  static async create<S extends object>(init: MeshNodeInit<S>): Promise<MeshNode<S>> {
    const { chain, network, key } = init;
    const clock = init.clock ?? systemClock;
    const log = init.log ?? (() => {});
    const mempool = new Mempool(chain);
    const txFeed = new TxFeed(() => clock.now());
    const own = new OwnTransactions({
      key,
      chain,
      mempool,
      stream: (tx, amount) => txFeed.offer(tx, amount),
      publish: (tx) => network.publish(TOPICS.transactions, tx.bytes).catch((e: unknown) => log(`gossip: ${String(e)}`)),
    });
    const base: NodeComponents = { nodeId: toHex(key.publicKey), key, chain, mempool, own, txFeed, network, clock, random: init.random ?? systemRandom, log };
    // Each factory sees the services made before it; a later one is read when it is used, not before.
    const components = { ...base } as NodeComponents & S;
    const services = {} as S;
    const order: unknown[] = [];
    try {
      for (const [name, factory] of Object.entries(init.services) as [keyof S & string, ((c: NodeComponents & S) => unknown) | undefined][]) {
        if (factory === undefined) continue;
        if (name in base) throw new TypeError(`a service may not be named ${name}: a component has that name`);
        const service = (await factory(components)) as S[typeof name];
        services[name] = service;
        components[name] = service as (NodeComponents & S)[typeof name];
        order.push(service);
      }
    } catch (error) {
      mempool.close();
      throw error;
    }
    return new MeshNode(components, services, order);
  }

  get chain(): Chain {
    return this.components.chain;
  }

  get mempool(): Mempool {
    return this.components.mempool;
  }

  get own(): OwnTransactions {
    return this.components.own;
  }

  /**
   * Starts every service, phase by phase, in the order they were listed. When one fails, those
   * started are stopped again (startAll) and the pool closed before the failure is thrown.
   */
  async start(): Promise<void> {
    try {
      await startAll(this.#order, this.components.log);
    } catch (error) {
      await this.#closePool();
      throw error;
    }
  }

  /** Stops every service in reverse order, then closes the pool once this node's own transactions are done. */
  async stop(): Promise<void> {
    try {
      await stopAll(this.#order);
    } finally {
      await this.#closePool();
    }
  }

  async #closePool(): Promise<void> {
    this.components.mempool.close();
    await this.components.own.idle();
  }
}
