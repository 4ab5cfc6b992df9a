/**
 * The node's own transactions, of every kind, made in one place: a body without sender and nonce
 * in, the signed transaction out, after it was given the next nonce (the chain's, past what this
 * node already pooled), signed with the node's key, pooled, put on /transactions/stream and
 * gossiped. One at a time, so two calls never take the same nonce.
 *
 * @example
 * const tx = await own.submit({ kind: 'Bond', amount: 10n ** 18n });
 */

import type { SigningKey } from '../crypto/ed25519.ts';
import { toHex } from '../encoding/hex.ts';
import type { TxEffect } from '../ledger/apply.ts';
import { signTx, type Tx, type TxBody } from '../ledger/tx.ts';
import type { Chain } from './chain.ts';
import type { Mempool } from './mempool.ts';

/** Blocks a pooled transaction of this node waits before it is gossiped again. */
export const REGOSSIP_BLOCKS = 2;

/** A transaction body as the node asks for it: this node is the sender, and the nonce is the next one. */
export type OwnTxBody = TxBody extends infer B ? (B extends TxBody ? Omit<B, 'sender' | 'nonce'> : never) : never;

export interface OwnTransactionsOptions {
  readonly key: SigningKey;
  readonly chain: Pick<Chain, 'state' | 'params' | 'tip' | 'crypto'>;
  readonly mempool: Pick<Mempool, 'add' | 'queueOf' | 'has'>;
  /** Puts a pooled transaction on /transactions/stream with its amount. */
  readonly stream: (tx: Tx, amount: bigint) => void;
  /** Gossips a pooled transaction; a failure to gossip does not undo it (it waits in the pool). */
  readonly publish: (tx: Tx) => Promise<void>;
}

export class OwnTransactions {
  readonly #options: OwnTransactionsOptions;
  #queue: Promise<unknown> = Promise.resolve();
  // Pooled transactions of this node by id, with the height they were last gossiped at.
  readonly #gossiped = new Map<string, { tx: Tx; height: number }>();

  constructor(options: OwnTransactionsOptions) {
    this.#options = options;
  }

  /**
   * Signs `body` from this node, pools, streams and gossips it; resolves to the transaction.
   * `prepare`, when given, runs on the signed transaction before it is pooled.
   * Throws LedgerRuleError or MempoolError (nothing pooled, nothing sent) when it does not apply.
   */
  submit(body: OwnTxBody, prepare?: (tx: Tx) => Promise<void>): Promise<Tx> {
    const next = this.#queue.then(() => this.#submit(body, prepare));
    this.#queue = next.catch(() => {});
    return next;
  }

  /**
   * Gossips again the node's transactions still pooled REGOSSIP_BLOCKS after they were last sent
   * (called on every new block). Gossip is sent once: a peer that could not take a transaction
   * then (its nonce arrived before the one below it, the peer was syncing) never hears of it
   * again, and the transaction would wait for ever in this node's pool alone.
   */
  regossip(): void {
    const height = this.#options.chain.tip.height;
    for (const [id, entry] of this.#gossiped) {
      if (!this.#options.mempool.has(entry.tx.id)) this.#gossiped.delete(id);
      else if (height - entry.height >= REGOSSIP_BLOCKS) {
        entry.height = height;
        void this.#options.publish(entry.tx);
      }
    }
  }

  /** Resolves once every submission made so far has settled (the node waits for it when it stops). */
  async idle(): Promise<void> {
    await this.#queue;
  }

  async #submit(body: OwnTxBody, prepare?: (tx: Tx) => Promise<void>): Promise<Tx> {
    const { key, chain, mempool } = this.#options;
    const sender = key.publicKey;
    const nonce = chain.state.account(sender).nonce + 1 + mempool.queueOf(sender).length;
    const tx = await signTx({ ...body, sender, nonce } as TxBody, key, chain.params.network, chain.crypto.sha256);
    // What must be on record before the transaction can take effect (a job's book entry) is written first.
    await prepare?.(tx);
    const effect: TxEffect = await mempool.add(tx);
    this.#options.stream(tx, effect.amount);
    this.#gossiped.set(toHex(tx.id), { tx, height: chain.tip.height });
    await this.#options.publish(tx);
    return tx;
  }
}
