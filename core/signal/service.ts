/**
 * Signals and the atlas as a service of the node (node-api.md §2, docs/signals.md): signals
 * gossiped in and kept in the book, signals this node sends, and the atlas of capacity broadcasts
 * read from the book. A broadcast without a burn (a capacity broadcast) is passed on within the
 * node's relay budget (core/net/broadcast-pace.ts): nothing pays for it, and it reaches every node.
 */
import type { Chain } from '../chain/chain.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { toHex } from '../encoding/hex.ts';
import type { Startable } from '../lifecycle.ts';
import { RelayBudget } from '../net/broadcast-pace.ts';
import { type GossipMessage, type Network, TOPICS, type Verdict } from '../net/network.ts';
import type { Clock } from '../time/clock.ts';
import type { Unsubscribe } from '../web/sse.ts';
import { Atlas, CAPACITY_INTERVAL_MS } from './atlas.ts';
import { chainBurnLookup, type KeptSignal, SignalBook, type SignalFilter } from './book.ts';
import { SignalError } from './errors.ts';
import { decodeSignal, signSignal } from './signal.ts';
import type { AtlasEntry, SignalObject } from './types.ts';

/** A request to send a signal (POST /signals/send), validated and decoded. */
export interface SignalRequest {
  readonly to: 'broadcast' | Uint8Array;
  readonly payload: Uint8Array;
  readonly capabilities: readonly { readonly name: string; readonly version: number }[];
  /** The on-chain transaction whose burn pays for a non-empty payload. */
  readonly burnTxId: Uint8Array | null;
}

/** What the signal routes ask of the node. */
export interface SignalService {
  atlas(): AtlasEntry[];
  /** The last validated signals that pass `filter` (default: all), newest last. */
  signals(filter?: SignalFilter): SignalObject[];
  /** Signs and gossips a signal; throws SignalError (code names the rule) when it cannot be sent. */
  sendSignal(request: SignalRequest): Promise<{ id: string; nonce: number }>;
  /** The signals kept from now on that pass `filter`; with `after`, first those still kept above that position. */
  followSignals(after: number | null, filter: SignalFilter, listener: (kept: KeptSignal) => void): Unsubscribe;
}

export interface SignalsComponents {
  readonly key: SigningKey;
  readonly chain: Chain;
  readonly network: Network;
  readonly clock: Clock;
  readonly log: (line: string) => void;
}

export class SignalsFeature implements SignalService, Startable {
  readonly #c: SignalsComponents;
  readonly #book: SignalBook;
  readonly #atlas = new Atlas();
  readonly #freeRelays: RelayBudget;
  // Local signals are serialised so each takes the next nonce.
  #sending: Promise<unknown> = Promise.resolve();

  constructor(components: SignalsComponents) {
    this.#c = components;
    this.#freeRelays = new RelayBudget(components.clock, CAPACITY_INTERVAL_MS);
    this.#book = new SignalBook({
      clock: components.clock,
      network: components.chain.params.network,
      self: components.key.publicKey,
      lookupBurn: chainBurnLookup(components.chain),
      locateTx: (id) => components.chain.txHeight(id),
    });
    // Capacity broadcasts are kept signals like any other; the atlas reads them from the book.
    this.#book.subscribe((signal) => this.#atlas.observe(signal, components.clock.now()));
  }

  start(): void {
    this.#c.network.handle(TOPICS.signals, (m) => this.#onSignal(m));
  }

  async stop(): Promise<void> {
    await this.#sending;
  }

  atlas(): AtlasEntry[] {
    return this.#atlas.entries(this.#c.clock.now());
  }

  signals(filter?: SignalFilter): SignalObject[] {
    return this.#book.list(filter);
  }

  sendSignal(request: SignalRequest): Promise<{ id: string; nonce: number }> {
    return this.#serial(async () => {
      const proof = request.burnTxId === null ? null : await this.#book.burnProof(request.burnTxId);
      if (request.payload.length > 0 && proof === null) {
        throw new SignalError('burn-proof-required', 'a signal with a payload needs burn_tx_id_hex');
      }
      const signal = await signSignal(
        { to: request.to, capabilities: request.capabilities, payload: request.payload, burn_proof: proof, nonce: this.#book.nextNonce(this.#c.clock.now()) },
        this.#c.key,
        this.#c.chain.params.network,
      );
      const shown = await this.#book.accept(signal);
      await this.#c.network.publish(TOPICS.signals, signal.bytes).catch((e: unknown) => this.#c.log(`gossip: ${String(e)}`));
      return { id: shown.id, nonce: shown.nonce };
    });
  }

  /**
   * The signals the book keeps (broadcast or addressed to this node) that pass `filter`, as they are
   * kept, after those still kept above position `after`: the stream shows what GET /signals lists,
   * not signals between other nodes that pass through (docs/signals.md).
   */
  followSignals(after: number | null, filter: SignalFilter, listener: (kept: KeptSignal) => void): Unsubscribe {
    return this.#book.follow(after, filter, (kept) => {
      try {
        listener(kept);
      } catch (error) {
        this.#c.log(`listener: ${String(error)}`);
      }
    });
  }

  async #onSignal(message: GossipMessage): Promise<Verdict> {
    try {
      const signal = decodeSignal(message.data, this.#c.chain.params.network);
      await this.#book.accept(signal);
      if (signal.to === 'broadcast' && signal.burn_proof === null && !this.#freeRelays.take(toHex(message.peer))) return 'ignore';
      return 'accept';
    } catch (error) {
      if (error instanceof SignalError) return error.verdict;
      throw error;
    }
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#sending.then(work, work);
    this.#sending = next.catch(() => {});
    return next;
  }
}

/** The signals service: the book, the atlas and the signal gossip. */
export function signalsService(): (components: SignalsComponents) => SignalsFeature {
  return (components) => new SignalsFeature(components);
}
