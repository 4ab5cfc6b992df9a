/**
 * The light node in the page: the core's MeshNode on a light chain in IndexedDB, joined to hosts by
 * the browser network. It never mines, offers no compute, and keeps the last 2,880 blocks.
 *
 * First start: the chain begins at a trusted checkpoint (a block hash; docs/browser.md says where it
 * comes from), whose state is used only if it hashes to the block's state_root (core/node/light-start.ts;
 * a peer whose state does not is penalised and the start fails with CheckpointRefusedError). Blocks after
 * the checkpoint come by ordinary sync and are validated like a full node's. Later starts reopen the
 * chain kept in IndexedDB.
 */
import type { SigningKey } from '../core/crypto/ed25519.ts';
import { toHex } from '../core/encoding/hex.ts';
import type { ChainParams } from '../core/ledger/params.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { openLightChain } from '../core/node/light-start.ts';
import { MeshNode } from '../core/node/node.ts';
import { type LightNodeServices, lightNodeServices } from '../core/node/services.ts';
import { IndexedDbStore } from './indexeddb-store.ts';
import { startBrowserNetwork } from './network.ts';

export interface LightNodeOptions {
  readonly key: SigningKey;
  readonly params: ChainParams;
  /** Hosts' WebSocket multiaddrs with /p2p/<peer id>. */
  readonly hosts: readonly string[];
  /** The trusted block to start from, when the page holds no chain yet. */
  readonly checkpoint: Uint8Array;
  /** The IndexedDB database of the chain (default `mesh-chain-<network>`). */
  readonly storeName?: string;
  readonly log?: (line: string) => void;
  /** Told what start-up is doing, for the page to show. */
  readonly onStage?: (stage: 'connecting' | 'checkpoint' | 'syncing') => void;
  /** Told when a first start has no peer to ask (true) and when one appears (false). */
  readonly onWaiting?: (waiting: boolean) => void;
}

/** The IndexedDB database of a network's light chain. */
export const chainStoreName = (params: ChainParams): string => `mesh-chain-${params.network}`;

/** Whether this browser already holds a light chain of the network (a start would reopen it, not use a checkpoint). */
export async function holdsChain(params: ChainParams): Promise<boolean> {
  const store = await IndexedDbStore.open(chainStoreName(params));
  try {
    for await (const _ of store.entries({ limit: 1 })) return true;
    return false;
  } finally {
    await store.close();
  }
}

/** Deletes a network's light chain from this browser (the key is kept elsewhere and stays). */
export function deleteChainStore(params: ChainParams): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(chainStoreName(params));
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
    // "blocked" only says a connection is still closing; the deletion goes on once it has closed.
  });
}

export class LightNode {
  readonly node: MeshNode<LightNodeServices>;
  readonly network: Libp2pNetwork;
  readonly #store: IndexedDbStore;

  private constructor(node: MeshNode<LightNodeServices>, network: Libp2pNetwork, store: IndexedDbStore) {
    this.node = node;
    this.network = network;
    this.#store = store;
  }

  static async start(options: LightNodeOptions): Promise<LightNode> {
    const log = options.log ?? (() => {});
    const store = await IndexedDbStore.open(options.storeName ?? chainStoreName(options.params));
    let network: Libp2pNetwork | null = null;
    try {
      options.onStage?.('connecting');
      network = await startBrowserNetwork({
        key: options.key,
        hosts: options.hosts,
        log,
      });
      const chain = await openLightChain({
        network,
        store,
        params: options.params,
        checkpoint: options.checkpoint,
        log,
        onCheckpoint: () => options.onStage?.('checkpoint'),
        ...(options.onWaiting ? { onWaiting: options.onWaiting } : {}),
      });
      options.onStage?.('syncing');
      const node = await MeshNode.create({ chain, network, key: options.key, log, services: lightNodeServices() });
      await node.start();
      return new LightNode(node, network, store);
    } catch (error) {
      await network?.stop().catch(() => {});
      await store.close();
      throw error;
    }
  }

  /** The highest tip a connected peer announced (at least this node's own). */
  targetHeight(): number {
    return Math.max(this.node.chain.tip.height, ...this.network.peers().map((p) => p.height ?? 0));
  }

  /**
   * How the tips connected peers announced stand to the held chain: some on it (a block held),
   * some ahead of its tip (sync fetches them; whether they extend it shows then), some on another
   * chain (another block at a height held).
   */
  async peerTips(): Promise<{ held: boolean; ahead: boolean; other: boolean }> {
    const connected = new Set(this.network.peers().map((p) => toHex(p.node)));
    const chain = this.node.chain;
    const standing = { held: false, ahead: false, other: false };
    for (const tip of this.node.services.sync.sync.announcedTips()) {
      if (!connected.has(toHex(tip.node)) || tip.height < chain.base) continue;
      if (tip.height > chain.tip.height) standing.ahead = true;
      else if ((await this.checkpointOnChain(tip.height, toHex(tip.hash))) === 'held') standing.held = true;
      else standing.other = true;
    }
    return standing;
  }

  /**
   * Whether the block `hash` at `height` (a host's checkpoint) is on the held chain: 'held', 'other'
   * when the chain holds another block there (it does not connect to that host's chain), or
   * 'unknown' when the height is outside the blocks held.
   */
  async checkpointOnChain(height: number, hash: string): Promise<'held' | 'other' | 'unknown'> {
    const chain = this.node.chain;
    if (height < chain.base || height > chain.tip.height) return 'unknown';
    const held = await chain.hashAt(height);
    if (held === undefined) return 'unknown';
    return toHex(held) === hash.toLowerCase() ? 'held' : 'other';
  }

  async stop(): Promise<void> {
    try {
      await this.node.stop();
      await this.network.stop();
    } finally {
      await this.#store.close();
    }
  }
}
