/**
 * The light node in the page: the core's MeshNode on a light chain in IndexedDB, joined to hosts by
 * the browser network. It never mines, offers no compute, and keeps the last 2,880 blocks.
 *
 * First start: the chain begins at a trusted checkpoint (a block hash; docs/browser.md says where it
 * comes from). The state at that block is fetched in segments from a host and used only if it hashes
 * to the block's state_root (`Chain.openFromSnapshot`); a peer whose state does not is penalised and
 * the start fails with CheckpointRefusedError. Blocks after the checkpoint come by ordinary sync and
 * are validated like a full node's. Later starts reopen the chain kept in IndexedDB.
 */
import { Chain, ForkChoiceError } from '../core/chain/chain.ts';
import type { SigningKey } from '../core/crypto/ed25519.ts';
import { toHex } from '../core/encoding/hex.ts';
import { MeshError } from '../core/errors.ts';
import type { ChainParams } from '../core/ledger/params.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { TOPICS } from '../core/net/network.ts';
import { MeshNode } from '../core/node/node.ts';
import { SegmentError, Segments } from '../core/node/segments.ts';
import { IndexedDbStore } from './indexeddb-store.ts';
import { startBrowserNetwork } from './network.ts';

/** The state a peer served for the checkpoint did not match the checkpoint block: refused. */
export class CheckpointRefusedError extends MeshError {}

export interface LightNodeOptions {
  readonly key: SigningKey;
  readonly params: ChainParams;
  /** Hosts' WebSocket multiaddrs with /p2p/<peer id>. */
  readonly hosts: readonly string[];
  /** The trusted block to start from, when the page holds no chain yet. */
  readonly checkpoint: Uint8Array;
  readonly allowPrivateAddresses?: boolean;
  /** The IndexedDB database of the chain (default `mesh-chain-<network>`). */
  readonly storeName?: string;
  readonly log?: (line: string) => void;
  /** Told what start-up is doing, for the page to show. */
  readonly onStage?: (stage: 'connecting' | 'checkpoint' | 'syncing') => void;
}

// How often and how long the first start asks for the checkpoint's state before it gives up.
const SNAPSHOT_TRIES = 6;
const SNAPSHOT_TIMEOUT_MS = 10_000;
const PEER_WAIT_MS = 250;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class LightNode {
  readonly node: MeshNode;
  readonly network: Libp2pNetwork;
  readonly #store: IndexedDbStore;

  private constructor(node: MeshNode, network: Libp2pNetwork, store: IndexedDbStore) {
    this.node = node;
    this.network = network;
    this.#store = store;
  }

  static async start(options: LightNodeOptions): Promise<LightNode> {
    const log = options.log ?? (() => {});
    const store = await IndexedDbStore.open(options.storeName ?? `mesh-chain-${options.params.network}`);
    let network: Libp2pNetwork | null = null;
    try {
      options.onStage?.('connecting');
      network = await startBrowserNetwork({
        key: options.key,
        hosts: options.hosts,
        log,
        ...(options.allowPrivateAddresses === undefined ? {} : { allowPrivateAddresses: options.allowPrivateAddresses }),
      });
      const chain = (await hasChain(store))
        ? await Chain.open({ store, params: options.params, mode: 'light' })
        : await startFromCheckpoint(network, store, options);
      options.onStage?.('syncing');
      const node = new MeshNode({ chain, network, key: options.key, mine: false, log });
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

  async stop(): Promise<void> {
    await this.node.stop();
    await this.network.stop();
    await this.#store.close();
  }
}

async function hasChain(store: IndexedDbStore): Promise<boolean> {
  for await (const _ of store.entries({ limit: 1 })) return true;
  return false;
}

// Asks connected peers for the state at the checkpoint until one serves a state that checks.
async function startFromCheckpoint(network: Libp2pNetwork, store: IndexedDbStore, options: LightNodeOptions): Promise<Chain> {
  const fetcher = new Segments(network, options.params, null);
  fetcher.start();
  let lastError: unknown = new SegmentError('no-peer', 'no host answered');
  for (let attempt = 0; attempt < SNAPSHOT_TRIES; attempt++) {
    const peer = await firstHost(network);
    options.onStage?.('checkpoint');
    try {
      const snapshot = await fetcher.fetch(peer, options.checkpoint, SNAPSHOT_TIMEOUT_MS);
      return await Chain.openFromSnapshot({ store, params: options.params, mode: 'light' }, snapshot, options.checkpoint);
    } catch (error) {
      if (error instanceof ForkChoiceError) {
        network.penalise(peer, `served a state that does not match the checkpoint (${error.code})`);
        throw new CheckpointRefusedError(
          error.code,
          `the state ${toHex(peer).slice(0, 12)}… served for checkpoint ${toHex(options.checkpoint).slice(0, 12)}… does not match that block's state_root: refused`,
        );
      }
      lastError = error;
      (options.log ?? (() => {}))(`checkpoint: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw lastError;
}

// The first connected peer that has joined the segments topic (a host that can answer).
async function firstHost(network: Libp2pNetwork): Promise<Uint8Array> {
  for (;;) {
    const peer = network.peers()[0];
    if (peer !== undefined && network.subscribers(TOPICS.segments) > 0) return peer.node;
    await sleep(PEER_WAIT_MS);
  }
}
