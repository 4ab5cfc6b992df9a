/**
 * The adversaries of `mesh sim` that act beside a node rather than inside it (docs/sim.md
 * "Adversaries"): a producer that mines a chain of its own in private and releases it to win a race
 * (selfish mining, Eyal and Sirer 2014), and a spammer that fills the mempools within their rules.
 */
import { Chain } from '../chain/chain.ts';
import { buildBlock, nextSlot } from '../chain/miner.ts';
import { SigningKey } from '../crypto/ed25519.ts';
import { toHex } from '../encoding/hex.ts';
import type { Block } from '../ledger/block.ts';
import type { ChainParams } from '../ledger/params.ts';
import { signTx } from '../ledger/tx.ts';
import { TOPICS } from '../net/network.ts';
import { MemoryStore } from '../store/kv.ts';
import type { Clock } from '../time/clock.ts';
import type { Prng } from './prng.ts';
import type { SimNetwork } from './sim-network.ts';

/** The node an adversary rides on: its key, the public chain it follows, its network while it is up. */
export interface Host {
  readonly key: SigningKey;
  readonly chain: Chain;
  readonly net: SimNetwork | null;
}

export interface PrivateMinerFigures {
  /** Blocks it signed on its private chain. */
  readonly mined: number;
  /** Blocks it released, and how many times it did. */
  readonly released: number;
  readonly releases: number;
}

/**
 * A producer with weight that mines on a private branch of its own, at its slots there, and keeps
 * its blocks back. It releases them when the public chain comes within one block of its branch:
 * with one block of lead left, the release wins the race outright; level, it starts a race. When
 * the public chain gets ahead it gives its branch up and mines on the public tip. The node it rides
 * on follows the public chain as any other.
 */
export class PrivateMiner {
  readonly #clock: Clock;
  readonly #host: Host;
  readonly #secret: Chain;
  #withheld: Block[] = [];
  #busy = false;
  readonly #figures = { mined: 0, released: 0, releases: 0 };

  private constructor(clock: Clock, host: Host, secret: Chain) {
    this.#clock = clock;
    this.#host = host;
    this.#secret = secret;
  }

  static async create(clock: Clock, host: Host, params: ChainParams, prefix: readonly Block[]): Promise<PrivateMiner> {
    const secret = await Chain.open({ store: new MemoryStore(), params });
    await secret.addBranch(prefix);
    return new PrivateMiner(clock, host, secret);
  }

  get figures(): PrivateMinerFigures {
    return { ...this.#figures };
  }

  /** One look at the two chains: give up, release, or mine. */
  async tick(): Promise<void> {
    if (this.#busy || this.#host.net === null) return;
    this.#busy = true;
    try {
      await this.#step(this.#host.net);
    } finally {
      this.#busy = false;
    }
  }

  async #step(net: SimNetwork): Promise<void> {
    const now = this.#clock.now();
    const pub = this.#host.chain;
    if (pub.tip.height > this.#secret.tip.height) await this.#adopt(pub);
    const lead = this.#secret.tip.height - pub.tip.height;
    if (this.#withheld.length > 0 && (lead === 0 || (lead === 1 && this.#withheld.length >= 2))) {
      const out = this.#withheld;
      this.#withheld = [];
      this.#figures.releases++;
      this.#figures.released += out.length;
      for (const block of out) await net.publish(TOPICS.blocks, block.bytes);
      return;
    }
    if (nextSlot(this.#secret, this.#host.key.publicKey) > now) return;
    const block = await buildBlock(this.#secret, null, this.#host.key, now);
    await this.#secret.addBlock(block, now);
    this.#withheld.push(block);
    this.#figures.mined++;
  }

  /** The public chain got ahead: the private branch is given up for it. */
  async #adopt(pub: Chain): Promise<void> {
    let fork = Math.min(pub.tip.height, this.#secret.tip.height);
    for (; fork > 0; fork--) {
      const mine = await this.#secret.hashAt(fork);
      const theirs = await pub.hashAt(fork);
      if (mine !== undefined && theirs !== undefined && toHex(mine) === toHex(theirs)) break;
    }
    const blocks = await pub.blocksFrom(fork + 1, pub.tip.height - fork);
    await this.#secret.addBranch(blocks, this.#clock.now());
    this.#withheld = [];
  }
}

/**
 * A node that sends transactions at a steady rate (`--spam`, 20 a second), within the mempools' rules: TrustGrants,
 * which cost nothing, each signed by a fresh key with nothing at stake until the pool's cap per
 * sender (64) is reached, then by the next key. It gossips them itself on `mesh-transactions`.
 */
export class Spammer {
  readonly #host: Host;
  readonly #rng: Prng;
  readonly #network: string;
  readonly #perSender: number;
  #key: SigningKey | null = null;
  #nonce = 0;
  readonly #senders = new Set<string>();
  sent = 0;

  constructor(host: Host, rng: Prng, network: string, perSender = 64) {
    this.#host = host;
    this.#rng = rng;
    this.#network = network;
    this.#perSender = perSender;
  }

  /** The keys it signed with (hex). */
  get senders(): ReadonlySet<string> {
    return this.#senders;
  }

  async send(): Promise<void> {
    const net = this.#host.net;
    if (net === null) return;
    if (this.#key === null || this.#nonce >= this.#perSender) {
      // The simulation's backend, which it made the default.
      this.#key = SigningKey.fromSeed(this.#rng.bytes(32));
      this.#senders.add(toHex(this.#key.publicKey));
      this.#nonce = 0;
    }
    const key = this.#key;
    const tx = await signTx(
      { kind: 'TrustGrant', sender: key.publicKey, nonce: ++this.#nonce, subject: this.#rng.bytes(32), trusted: true },
      key,
      this.#network,
    );
    this.sent++;
    await net.publish(TOPICS.transactions, tx.bytes);
  }
}
