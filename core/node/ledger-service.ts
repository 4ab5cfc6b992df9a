/**
 * The ledger as a service of the node: transactions gossiped in and out, the /transactions/stream
 * feed, and what the API reads of the chain (GET /status, /history, /transactions, /beacon,
 * POST /transfer, /bond and /unbond, the block and transaction streams). Every node runs it, the
 * light node too.
 */

import { followBlocks } from '../chain/block-feed.ts';
import type { ChainEvent } from '../chain/chain.ts';
import { MempoolError } from '../chain/mempool.ts';
import type { History, TxListItem } from '../chain/readmodel.ts';
import type { TxFeedItem } from '../chain/tx-feed.ts';
import { toHex } from '../encoding/hex.ts';
import { DecodeError } from '../errors.ts';
import { LedgerRuleError, type TxEffect } from '../ledger/apply.ts';
import type { BlockEvent } from '../ledger/block.ts';
import { type LedgerStatus, ledgerStatus } from '../ledger/status.ts';
import { decodeTx, type Tx } from '../ledger/tx.ts';
import type { Startable } from '../lifecycle.ts';
import { type Recipient, recipientNode } from '../names/names.ts';
import { type GossipMessage, TOPICS, type Verdict } from '../net/network.ts';
import type { Reachability } from '../net/reachability.ts';
import type { Flow, Unsubscribe } from '../web/sse.ts';
import type { NodeComponents } from './node.ts';

/**
 * Block production, as /status shows it: 'off' without `--mine`, 'halted' once the producer
 * stopped for good (it saw its key sign a block it did not make), with the reason.
 */
export interface ProductionStatus {
  state: 'off' | 'on' | 'halted';
  reason: string | null;
}

/** GET /status: the ledger figures plus the node's identity and tip. */
export interface NodeStatus extends LedgerStatus {
  node_id: string;
  height: number;
  difficulty: 0;
  /**
   * Roughly when `unbonding` is free, in seconds since the epoch: the tip's time plus a block
   * interval per block still to come; null when nothing is unbonding.
   */
  unbond_release_secs: number | null;
  production: ProductionStatus;
  /**
   * Whether peers can open connections to this node, as its peers' dial-backs found
   * (docs/network.md, "Through NATs"): 'unknown' until one answered.
   */
  reachability: Reachability;
  /** The relay addresses it announces while it is not reachable (`…/p2p-circuit/p2p/<its id>`). */
  relay_addresses: string[];
}

/** GET /health, /status and /bootstrap. */
export interface NodeInfoService {
  /** 64-hex NodeId. */
  readonly nodeId: string;
  status(): NodeStatus;
  /** Multiaddrs a newcomer can join through: this node's own dialable addresses, then its peers'. */
  bootstrap(): string[];
}

/** The chain's routes: history, transactions, beacon, transfer, bond, unbond and the two streams. */
export interface ChainService {
  history(node: Uint8Array): Promise<History>;
  transactions(node: Uint8Array, options: { limit?: number; before?: number }): Promise<TxListItem[]>;
  beacon(): { height: number; hash: string };
  /**
   * Signs a Transfer from this node to a node or a name's holder, pools and broadcasts it; resolves
   * to its tx id (hex). Throws LedgerRuleError or MempoolError, answered as their tables say, and
   * NameError 'unknown' (404) for a name nobody holds.
   */
  transfer(to: Recipient, amount: bigint): Promise<string>;
  /**
   * Signs a HostBond of `amount` from this node's free balance, pools and broadcasts it; resolves to
   * its tx id (hex). LedgerRuleError `insufficient-free-balance` (402) when the free balance, after
   * this node's pooled transactions, is smaller.
   */
  bond(amount: bigint): Promise<string>;
  /**
   * Signs a HostUnbond of `amount` out of this node's active bond (locked for UNBOND_DELAY_BLOCKS
   * more); resolves to its tx id (hex). LedgerRuleError `unbond-exceeds-bond` (409) when the bond,
   * after this node's pooled transactions, is smaller.
   */
  unbond(amount: bigint): Promise<string>;
  /**
   * The main chain's blocks from height `from` on (null: from the next to come), the held ones read
   * from the store no faster than `flow` has room for, then live; after a reorganisation, again from
   * the fork on. `end` is called if the node cannot go on.
   */
  followBlocks(from: number | null, listener: (event: BlockEvent) => void, flow?: Flow, end?: () => void): Unsubscribe;
  /**
   * The transactions put on /transactions/stream from now on; with `after` (a Last-Event-ID), first
   * those the node still holds after that position, told first when some may be lost (tx-feed.ts).
   */
  followTransactions(after: number | null, listener: (item: TxFeedItem) => void): Unsubscribe;
}

/**
 * What the ledger service works with: part of the node's base components, and the producer where
 * the node has one (a later service, read when /status is asked).
 */
export type ChainComponents = Pick<NodeComponents, 'nodeId' | 'key' | 'chain' | 'mempool' | 'own' | 'txFeed' | 'network' | 'log'> & {
  readonly producer?: { readonly producer: { readonly halted: { readonly reason: string } | null } };
};

export class LedgerFeature implements ChainService, NodeInfoService, Startable {
  readonly nodeId: string;
  readonly #c: ChainComponents;
  #unsubscribe: (() => void) | null = null;

  constructor(components: ChainComponents) {
    this.#c = components;
    this.nodeId = components.nodeId;
  }

  start(): void {
    this.#c.network.handle(TOPICS.transactions, (m) => this.#onTransaction(m));
    this.#unsubscribe = this.#c.chain.subscribe((event) => this.#onChain(event));
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
  }

  status(): NodeStatus {
    const { tip, params } = this.#c.chain;
    const ledger = ledgerStatus(this.#c.chain.state, this.#c.key.publicKey, tip.height);
    const release = ledger.unbond_release_height;
    const releaseSecs = release === null ? null : Math.floor((tip.timestampMs + (release - tip.height) * params.blockIntervalMs) / 1000);
    const reach = this.#c.network.reachability?.() ?? { reachability: 'unknown', relayAddresses: [] };
    return {
      node_id: this.nodeId,
      height: tip.height,
      difficulty: 0,
      ...ledger,
      unbond_release_secs: releaseSecs,
      production: this.#production(),
      reachability: reach.reachability,
      relay_addresses: reach.relayAddresses,
    };
  }

  #production(): ProductionStatus {
    const producer = this.#c.producer?.producer;
    if (producer === undefined) return { state: 'off', reason: null };
    const halted = producer.halted;
    return halted === null ? { state: 'on', reason: null } : { state: 'halted', reason: halted.reason };
  }

  bootstrap(): string[] {
    return this.#c.network.bootstrapAddresses();
  }

  history(node: Uint8Array): Promise<History> {
    return this.#c.chain.history(node);
  }

  transactions(node: Uint8Array, options: { limit?: number; before?: number }): Promise<TxListItem[]> {
    return this.#c.chain.transactions(node, options);
  }

  beacon(): { height: number; hash: string } {
    return this.#c.chain.beacon();
  }

  async transfer(to: Recipient, amount: bigint): Promise<string> {
    return toHex((await this.#c.own.submit({ kind: 'Transfer', to: recipientNode(this.#c.chain, to), amount })).id);
  }

  async bond(amount: bigint): Promise<string> {
    return toHex((await this.#c.own.submit({ kind: 'HostBond', amount })).id);
  }

  async unbond(amount: bigint): Promise<string> {
    return toHex((await this.#c.own.submit({ kind: 'HostUnbond', amount })).id);
  }

  followBlocks(from: number | null, listener: (event: BlockEvent) => void, flow?: Flow, end?: () => void): Unsubscribe {
    return followBlocks(this.#c.chain, from, listener, {
      ...(flow === undefined ? {} : { flow }),
      onError: (error) => {
        this.#c.log(`blocks stream: ${String(error)}`);
        end?.();
      },
    });
  }

  followTransactions(after: number | null, listener: (item: TxFeedItem) => void): Unsubscribe {
    return this.#c.txFeed.follow(after, (item) => {
      try {
        listener(item);
      } catch (error) {
        this.#c.log(`listener: ${String(error)}`);
      }
    });
  }

  // A gossiped transaction is streamed once the pool takes it: its signature verified and the
  // ledger's rules holding on this node's tip (docs/node-api.md "When /transactions/stream emits").
  async #onTransaction(message: GossipMessage): Promise<Verdict> {
    let tx: Tx;
    try {
      tx = decodeTx(message.data, this.#c.chain.crypto.sha256);
    } catch (error) {
      if (error instanceof DecodeError) return error.verdict;
      throw error;
    }
    let effect: TxEffect;
    try {
      effect = await this.#c.mempool.add(tx);
    } catch (error) {
      // A ledger rule's verdict: valid signatures, but not applicable to this node's tip (yet, or any more).
      if (error instanceof MempoolError || error instanceof LedgerRuleError) return error.verdict;
      throw error;
    }
    this.#c.txFeed.offer(tx, effect.amount);
    return 'accept';
  }

  #onChain(event: ChainEvent): void {
    if (event.type !== 'connected') return;
    this.#c.own.regossip();
    // Transactions first seen in a block (an UptimeReward is never pooled) join the stream then.
    event.block.txs.forEach((tx, i) => this.#c.txFeed.offer(tx, event.effects[i]?.amount ?? 0n));
  }
}

/** The chain service (every node runs it). */
export function ledgerService(): (components: ChainComponents) => LedgerFeature {
  return (components) => new LedgerFeature(components);
}
