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
import { TOPICS, type Network } from '../net/network.ts';
import type { KeyValueStore } from '../store/kv.ts';
import { systemClock, type Clock } from '../time/clock.ts';
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
}

// How often and how long a first start asks for the checkpoint's state before it gives up.
const SNAPSHOT_TRIES = 6;
const SNAPSHOT_TIMEOUT_MS = 10_000;
const PEER_WAIT_MS = 100;

/** The light chain in `store`: reopened when it holds one, else started from the checkpoint. */
export async function openLightChain(options: LightStartOptions): Promise<Chain> {
  for await (const _ of options.store.entries({ limit: 1 })) return Chain.open({ store: options.store, params: options.params, mode: 'light' });
  return startFromCheckpoint(options);
}

// Asks connected peers for the state at the checkpoint until one serves a state that checks.
async function startFromCheckpoint(options: LightStartOptions): Promise<Chain> {
  const { network, checkpoint } = options;
  const clock = options.clock ?? systemClock;
  const fetcher = new Segments(network, options.params, null, { clock });
  fetcher.start();
  let lastError: unknown = new SegmentError('no-peer', 'no peer answered');
  for (let attempt = 0; attempt < SNAPSHOT_TRIES; attempt++) {
    const peer = await firstServer(network, clock);
    options.onCheckpoint?.();
    try {
      const snapshot = await fetcher.fetch(peer, checkpoint, SNAPSHOT_TIMEOUT_MS);
      return await Chain.openFromSnapshot({ store: options.store, params: options.params, mode: 'light' }, snapshot, checkpoint);
    } catch (error) {
      if (error instanceof ForkChoiceError) {
        network.penalise(peer, `served a state that does not match the checkpoint (${error.code})`);
        throw new CheckpointRefusedError(
          error.code,
          `the state ${toHex(peer).slice(0, 12)}… served for checkpoint ${toHex(checkpoint).slice(0, 12)}… does not match that block's state_root: refused`,
        );
      }
      lastError = error;
      options.log?.(`checkpoint: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw lastError;
}

// The first connected peer, once a peer serving mesh-segments is known (a host that can answer).
async function firstServer(network: Network, clock: Clock): Promise<Uint8Array> {
  for (;;) {
    const peer = network.peers()[0];
    if (peer !== undefined && network.subscribers(TOPICS.segments) > 0) return peer.node;
    await new Promise<void>((resolve) => clock.setTimeout(resolve, PEER_WAIT_MS));
  }
}
