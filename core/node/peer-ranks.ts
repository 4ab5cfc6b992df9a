/**
 * What each peer is to this node, for the order in which connections are pruned past
 * `--max-connections` (core/net/connection-pruning.ts): `needed` while a job or a channel with it
 * is in flight, `producer` when it signed one of the last RECENT_PRODUCER_BLOCKS blocks of this
 * node's chain. (Bootstrap peers and relays holding a reservation are known to the network itself.)
 */
import type { ChannelStatus, ChannelView } from '../channels/types.ts';
import { toHex } from '../encoding/hex.ts';
import type { JobStatus, JobSummary } from '../jobs/types.ts';
import type { Startable } from '../lifecycle.ts';
import type { PeerRank } from '../net/connection-pruning.ts';
import type { NodeComponents } from './node.ts';

/** A producer counts as recent while one of its blocks is among this many at the tip (an hour at 10 s). */
export const RECENT_PRODUCER_BLOCKS = 360;

const JOBS_IN_FLIGHT: ReadonlySet<JobStatus> = new Set<JobStatus>(['pending', 'running', 'awaiting_settlement']);
const CHANNELS_IN_FLIGHT: ReadonlySet<ChannelStatus> = new Set<ChannelStatus>(['opening', 'open', 'closing']);
// The peers with work in flight are listed again at most this often: a round of pruning asks for
// every connected peer, and a stream of newcomers asks again and again.
const NEEDED_FRESH_MS = 1_000;

export type PeerRanksComponents = Pick<NodeComponents, 'nodeId' | 'chain' | 'clock'> & {
  readonly jobs: { listJobs(): JobSummary[] };
  readonly channels: { listChannels(): ChannelView[] };
};

export class PeerRanks implements Startable {
  readonly #c: PeerRanksComponents;
  /** Producer (hex) → the height of its latest block on the main chain. */
  readonly #produced = new Map<string, number>();
  #unsubscribe: (() => void) | null = null;
  #needed: { readonly at: number; readonly peers: ReadonlySet<string> } | null = null;

  constructor(components: PeerRanksComponents) {
    this.#c = components;
  }

  async start(): Promise<void> {
    const { chain } = this.#c;
    this.#unsubscribe = chain.subscribe((event) => {
      if (event.type !== 'connected') return;
      this.#produced.set(toHex(event.block.header.producer), event.block.header.height);
      // At most one entry per block of the window is recent; older ones go.
      if (this.#produced.size > 2 * RECENT_PRODUCER_BLOCKS) {
        for (const [producer, height] of this.#produced) if (height <= event.block.header.height - RECENT_PRODUCER_BLOCKS) this.#produced.delete(producer);
      }
    });
    const from = Math.max(chain.base + 1, chain.tip.height - RECENT_PRODUCER_BLOCKS + 1);
    for (const block of await chain.blocksFrom(from, chain.tip.height - from + 1)) {
      const key = toHex(block.header.producer);
      this.#produced.set(key, Math.max(this.#produced.get(key) ?? 0, block.header.height));
    }
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
  }

  /** The peer's rank, or null when it is neither needed nor a recent producer. */
  rank(node: Uint8Array): PeerRank | null {
    const key = toHex(node);
    if (this.#neededPeers().has(key)) return 'needed';
    const height = this.#produced.get(key);
    return height !== undefined && height > this.#c.chain.tip.height - RECENT_PRODUCER_BLOCKS ? 'producer' : null;
  }
  // The other side of each job and channel in flight.
  #neededPeers(): ReadonlySet<string> {
    const now = this.#c.clock.now();
    if (this.#needed !== null && now - this.#needed.at < NEEDED_FRESH_MS) return this.#needed.peers;
    const self = this.#c.nodeId;
    const peers = new Set<string>();
    const add = (payer: string, host: string | null): void => {
      const other = payer === self ? host : payer;
      if (other !== null) peers.add(other);
    };
    for (const j of this.#c.jobs.listJobs()) if (JOBS_IN_FLIGHT.has(j.status)) add(j.payer, j.host);
    for (const c of this.#c.channels.listChannels()) if (CHANNELS_IN_FLIGHT.has(c.status)) add(c.payer, c.host);
    this.#needed = { at: now, peers };
    return peers;
  }
}

export function peerRanksService(): (components: PeerRanksComponents) => PeerRanks {
  return (components) => new PeerRanks(components);
}
