/**
 * Equivocation evidence as a service of the node: what the chain detects (two headers one
 * producer signed at one height) is gossiped on mesh-evidence; what peers gossip is checked in
 * full before it is forwarded or used, and a peer that relays evidence that proves nothing is
 * blamed through the verdict. A producing node (`report`) turns each piece of evidence it holds
 * into a SlashEquivocation of its own, pooled for the next block, until the chain has punished the
 * offence (docs/ledger.md "Slashing", docs/network.md "mesh-evidence").
 *
 * One piece of evidence per producer is enough (a slash takes the whole bond), so the node keeps
 * at most one per producer, for at most MAX_PENDING producers, and relays evidence only while it
 * could still take a bond: a key without one cannot flood the topic with its own double signing.
 */
import type { ChainEvent } from '../chain/chain.ts';
import {
  checkEvidenceShape,
  checkEvidenceSignatures,
  checkEvidenceUseful,
  decodeEvidence,
  type Evidence,
  EvidenceError,
  encodeEvidence,
  evidenceOf,
} from '../chain/evidence.ts';
import { RecentSet } from '../collections/recent-set.ts';
import { toHex } from '../encoding/hex.ts';
import { DecodeError, messageOf } from '../errors.ts';
import type { Startable } from '../lifecycle.ts';
import { type GossipMessage, TOPICS, type Verdict } from '../net/network.ts';
import type { NodeComponents } from './node.ts';

/** Producers whose evidence a node holds at once; more is dropped until some is resolved. */
export const MAX_PENDING_EVIDENCE = 64;
// (producer, height) pairs whose evidence was taken: a copy heard again is not checked again.
const SEEN_EVIDENCE = 4_096;

export interface EvidenceInit {
  /** Turn evidence into SlashEquivocation transactions of this node (a producing node does). */
  readonly report?: boolean;
}

export type EvidenceComponents = Pick<NodeComponents, 'chain' | 'network' | 'own' | 'mempool' | 'log'>;

interface Pending {
  readonly evidence: Evidence;
  /** The SlashEquivocation this node pooled for it, while it is pooled. */
  txId: Uint8Array | null;
  /** Whether a failure to report it was logged already. */
  logged: boolean;
}

const offence = (evidence: Evidence): string => `${toHex(evidence.a.header.producer)}:${evidence.a.header.height}`;

export class EvidenceFeature implements Startable {
  readonly #c: EvidenceComponents;
  readonly #report: boolean;
  readonly #pending = new Map<string, Pending>();
  readonly #seen = new RecentSet<string>(SEEN_EVIDENCE);
  readonly #listeners = new Set<(evidence: Evidence) => void>();
  #unsubscribe: (() => void) | null = null;
  #reporting = false;

  constructor(components: EvidenceComponents, init: EvidenceInit = {}) {
    this.#c = components;
    this.#report = init.report ?? false;
  }

  start(): void {
    this.#c.network.handle(TOPICS.evidence, (m) => this.#onGossip(m));
    this.#unsubscribe = this.#c.chain.subscribe((event) => this.#onChain(event));
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#c.network.unsubscribe(TOPICS.evidence);
  }

  /** The evidence this node holds, one per producer, until the chain punishes it or it ages out. */
  pending(): Evidence[] {
    return [...this.#pending.values()].map((p) => p.evidence);
  }

  /** Hears every piece of evidence this node takes, detected here or heard from a peer; returns an unsubscribe. */
  onEvidence(listener: (evidence: Evidence) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #onChain(event: ChainEvent): void {
    if (event.type === 'connected') return this.#reportAll();
    if (event.type !== 'equivocation') return;
    const evidence = evidenceOf(event.evidence[0], event.evidence[1]);
    // The chain checked both signatures before it compared the headers.
    try {
      this.#judge(evidence);
    } catch (error) {
      if (error instanceof EvidenceError) return;
      throw error;
    }
    this.#take(evidence);
    this.#c.network.publish(TOPICS.evidence, encodeEvidence(evidence)).catch((e: unknown) => this.#c.log(`gossip: ${messageOf(e)}`));
  }

  async #onGossip(message: GossipMessage): Promise<Verdict> {
    const { chain } = this.#c;
    let evidence: Evidence;
    try {
      evidence = decodeEvidence(message.data);
      this.#judge(evidence);
      await checkEvidenceSignatures(evidence, chain.params.network, chain.crypto.ed25519);
    } catch (error) {
      if (error instanceof EvidenceError || error instanceof DecodeError) {
        if (error.verdict === 'reject') this.#c.log(`gossip: evidence from ${toHex(message.peer).slice(0, 16)}… is invalid: ${error.message}`);
        return error.verdict;
      }
      throw error;
    }
    // Another copy may have been taken while the signatures were checked.
    if (this.#seen.has(offence(evidence)) || this.#pending.has(toHex(evidence.a.header.producer))) return 'ignore';
    this.#take(evidence);
    return 'accept';
  }

  // Everything but the signatures, cheapest first: shape, then whether this node needs it at all.
  #judge(evidence: Evidence): void {
    checkEvidenceShape(evidence);
    const producer = toHex(evidence.a.header.producer);
    if (this.#seen.has(offence(evidence)) || this.#pending.has(producer)) {
      throw new EvidenceError('known', 'this node holds evidence against this producer already');
    }
    checkEvidenceUseful(evidence, this.#c.chain.state, this.#c.chain.tip.height);
  }

  #take(evidence: Evidence): void {
    this.#seen.add(offence(evidence));
    if (this.#pending.size < MAX_PENDING_EVIDENCE) this.#pending.set(toHex(evidence.a.header.producer), { evidence, txId: null, logged: false });
    this.#c.log(`evidence: producer ${toHex(evidence.a.header.producer).slice(0, 16)}… signed two blocks at height ${evidence.a.header.height}`);
    for (const listener of this.#listeners) listener(evidence);
    this.#reportAll();
  }

  // Drops what the chain has punished or can no longer use; a producing node pools a
  // SlashEquivocation for the rest whose height the chain has reached.
  #reportAll(): void {
    const { chain, mempool, own } = this.#c;
    for (const [producer, entry] of this.#pending) {
      try {
        checkEvidenceUseful(entry.evidence, chain.state, chain.tip.height);
      } catch (error) {
        if (!(error instanceof EvidenceError)) throw error;
        if (error.code !== 'too-far-ahead') this.#pending.delete(producer);
        continue;
      }
      if (!this.#report || this.#reporting || entry.evidence.a.header.height > chain.tip.height) continue;
      if (entry.txId !== null && mempool.has(entry.txId)) continue;
      // One submission at a time; the next block looks again.
      this.#reporting = true;
      own
        .submit({ kind: 'SlashEquivocation', a: entry.evidence.a, b: entry.evidence.b })
        .then((tx) => {
          entry.txId = tx.id;
          this.#c.log(`evidence: reported producer ${producer.slice(0, 16)}… for height ${entry.evidence.a.header.height} (tx ${toHex(tx.id).slice(0, 16)}…)`);
        })
        .catch((error: unknown) => {
          if (!entry.logged) this.#c.log(`evidence: cannot report producer ${producer.slice(0, 16)}… yet: ${messageOf(error)}`);
          entry.logged = true;
        })
        .finally(() => (this.#reporting = false));
      return;
    }
  }
}

/** The evidence service: every node gossips evidence; a producing node reports it. */
export function evidenceService(init: EvidenceInit = {}): (components: EvidenceComponents) => EvidenceFeature {
  return (components) => new EvidenceFeature(components, init);
}
