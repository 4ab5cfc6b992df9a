/**
 * How a light node gets its chain: the one its store already holds, or, on a first start, the state
 * at a trusted checkpoint fetched from a peer in segments (segments.ts) and accepted only if it
 * hashes to that block's state_root (`Chain.openFromSnapshot`). The browser's light node and the
 * wallet benchmark's Node baseline start this way.
 */
import { Chain, ForkChoiceError } from '../chain/chain.ts';
import { toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import type { ChainParams } from '../ledger/params.ts';
import type { Network } from '../net/network.ts';
import type { KeyValueStore } from '../store/kv.ts';
import { type Clock, systemClock } from '../time/clock.ts';
import { SegmentError, Segments } from './segments.ts';

/** The state a peer served for the checkpoint did not match the checkpoint block: refused. */
export class CheckpointRefusedError extends MeshError {}

export interface LightStartOptions {
  readonly network: Network;
  readonly store: KeyValueStore;
  readonly params: ChainParams;
  /** The trusted block to start from when the store holds no chain. */
  readonly checkpoint: Uint8Array;
  readonly clock?: Clock;
  readonly log?: (line: string) => void;
  /** Called when the first start begins to fetch the checkpoint's state. */
  readonly onCheckpoint?: () => void;
  /**
   * Called with true when a first start has had no peer to ask for a while (the page shows itself
   * offline), and with false once one is connected. The start goes on waiting: it continues when a
   * peer appears.
   */
  readonly onWaiting?: (waiting: boolean) => void;
}

// How often and how long a first start asks for the checkpoint's state before it gives up.
const SNAPSHOT_TRIES = 6;
const SNAPSHOT_TIMEOUT_MS = 10_000;
const PEER_WAIT_MS = 100;
// How long a first start waits for a peer before it reports itself waiting (offline).
const PEER_PATIENCE_MS = 3_000;

/** The light chain in `store`: reopened when it holds one, else started from the checkpoint. */
export async function openLightChain(options: LightStartOptions): Promise<Chain> {
  for await (const _ of options.store.entries({ limit: 1 })) return Chain.open({ store: options.store, params: options.params, mode: 'light' });
  return startFromCheckpoint(options);
}

// A state that fails these checks was made up (or tampered with) by the peer that served it;
// other failures (another block, no answer, a short answer) are a peer that is confused or lacks it.
const FORGED = new Set(['snapshot-root', 'snapshot-signature']);

/**
 * Asks connected peers, one after another, for the state at the checkpoint until one serves a
 * state that checks. A peer that serves a forged state is penalised; any peer that fails is not
 * asked again. Fails when every connected peer has failed: with CheckpointRefusedError if one
 * served a forged state, else with the last peer's error.
 */
async function startFromCheckpoint(options: LightStartOptions): Promise<Chain> {
  const { network, checkpoint } = options;
  const clock = options.clock ?? systemClock;
  const fetcher = new Segments(network, options.params, null, { clock });
  const failed = new Set<string>();
  let refused: CheckpointRefusedError | null = null;
  let lastError: unknown = new SegmentError('no-peer', 'no peer answered');
  for (let attempt = 0; attempt < SNAPSHOT_TRIES; attempt++) {
    const peer = await nextServer(network, clock, failed, options.onWaiting);
    if (peer === null) break;
    options.onCheckpoint?.();
    try {
      const snapshot = await fetcher.fetch(peer, checkpoint, SNAPSHOT_TIMEOUT_MS);
      return await Chain.openFromSnapshot({ store: options.store, params: options.params, mode: 'light' }, snapshot, checkpoint);
    } catch (error) {
      failed.add(toHex(peer));
      if (error instanceof ForkChoiceError && FORGED.has(error.code)) {
        network.penalise(peer, `served a state that does not match the checkpoint (${error.code})`);
        refused = new CheckpointRefusedError(
          error.code,
          `the state ${toHex(peer).slice(0, 12)}… served for checkpoint ${toHex(checkpoint).slice(0, 12)}… does not match that block's state_root: refused`,
        );
      } else lastError = error;
      options.log?.(`checkpoint from ${toHex(peer).slice(0, 12)}…: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw refused ?? lastError;
}

/**
 * The next peer to ask: a connected peer not yet failed, those that announced the highest tip
 * (a node with a chain, which serves segments) first. Waits while no peer is connected; null once
 * every connected peer has failed.
 */
async function nextServer(network: Network, clock: Clock, failed: ReadonlySet<string>, onWaiting?: (waiting: boolean) => void): Promise<Uint8Array | null> {
  const since = clock.now();
  let waiting = false;
  try {
    for (;;) {
      const peers = network.peers();
      const fresh = peers.filter((p) => !failed.has(toHex(p.node))).sort((a, b) => (b.height ?? -1) - (a.height ?? -1));
      if (peers.length > 0 && fresh.length === 0) return null;
      if (fresh[0] !== undefined) return fresh[0].node;
      if (!waiting && clock.now() - since >= PEER_PATIENCE_MS) {
        waiting = true;
        onWaiting?.(true);
      }
      await new Promise<void>((resolve) => clock.setTimeout(resolve, PEER_WAIT_MS));
    }
  } finally {
    if (waiting) onWaiting?.(false);
  }
}
