/**
 * A NodeService in memory for tests of the HTTP API (handler.test.ts, host-node/http-server):
 * fixed answers, a record of what was asked, settable failures, and listener sets to emit events
 * through and to check that subscriptions end.
 */
import type { History, TxListItem } from '../chain/readmodel.ts';
import { toHex } from '../encoding/hex.ts';
import type { BlockEvent } from '../ledger/block.ts';
import type { AtlasEntry, SignalObject } from '../signal/types.ts';
import type { NodeService, NodeStatus, SignalRequest, TxStreamEvent, Unsubscribe } from './service.ts';

export const SELF = '1a'.repeat(32);
export const BOB = 'b2'.repeat(32);
export const TX_ID = 'ab'.repeat(32);
export const SIGNAL_ID = 'cd'.repeat(32);

export const STATUS: NodeStatus = {
  node_id: SELF,
  height: 7,
  difficulty: 0,
  balance: '5000',
  free: '4000',
  locked_bids: '0',
  locked_channels: '1000',
  locked_bond: '0',
  bond: '0',
  weight: '0',
  circulating_supply: '7000',
  burned_total: '12',
};

export const SIGNAL: SignalObject = { from: BOB, to: 'broadcast', capabilities: [{ name: 'cpu', version: 4 }], payload_hex: '', nonce: 3, id: SIGNAL_ID };
export const ATLAS: AtlasEntry[] = [{ node_id: BOB, cpu_cores: 4, mem_mb: 8192, running_jobs: 1, last_seen_secs: 1_700_000_000, tags: ['linux'] }];
export const BLOCK: BlockEvent = { index: 8, hash: 'ee'.repeat(32), prev_hash: 'dd'.repeat(32), timestamp: 1_700_000_010, miner: SELF, tx_count: 1, nonce: 0 };

/** An in-memory NodeService that records what the API asked of it. */
export class FakeNode implements NodeService {
  readonly nodeId = SELF;
  transfers: { to: string; amount: bigint }[] = [];
  signalsSent: SignalRequest[] = [];
  historyAsked: string[] = [];
  pageAsked: { node: string; limit?: number; before?: number }[] = [];
  transferError: unknown = undefined;
  signalError: unknown = undefined;
  readonly blockListeners = new Set<(event: BlockEvent) => void>();
  readonly txListeners = new Set<(event: TxStreamEvent) => void>();
  readonly signalListeners = new Set<(signal: SignalObject) => void>();

  status(): NodeStatus {
    return STATUS;
  }
  history(node: Uint8Array): Promise<History> {
    this.historyAsked.push(toHex(node));
    return Promise.resolve({
      node_id: toHex(node),
      jobs_hosted: 0,
      jobs_paid: 0,
      heartbeats_hosted: 0,
      heartbeats_paid: 0,
      expiries: 0,
      earned: '0',
      spent: '0',
      first_height: 0,
      last_height: 0,
      window_blocks: 259_200,
      recent_earned: '0',
      recent_spent: '0',
      window_partial: false,
    });
  }
  transactions(node: Uint8Array, options: { limit?: number; before?: number }): Promise<TxListItem[]> {
    this.pageAsked.push({ node: toHex(node), ...options });
    return Promise.resolve([{ tx_id: TX_ID, height: 5, kind: 'Transfer', amount: '10', counterparty: BOB, direction: 'out' }]);
  }
  beacon(): { height: number; hash: string } {
    return { height: 7, hash: 'ee'.repeat(32) };
  }
  bootstrap(): string[] {
    return ['/ip4/127.0.0.1/tcp/4001/p2p/12D3KooW'];
  }
  atlas(): AtlasEntry[] {
    return ATLAS;
  }
  signals(): SignalObject[] {
    return [SIGNAL];
  }
  transfer(to: Uint8Array, amount: bigint): Promise<string> {
    if (this.transferError !== undefined) return Promise.reject(this.transferError);
    this.transfers.push({ to: toHex(to), amount });
    return Promise.resolve(TX_ID);
  }
  sendSignal(request: SignalRequest): Promise<{ id: string; nonce: number }> {
    if (this.signalError !== undefined) return Promise.reject(this.signalError);
    this.signalsSent.push(request);
    return Promise.resolve({ id: SIGNAL_ID, nonce: 4 });
  }
  onBlock(listener: (event: BlockEvent) => void): Unsubscribe {
    return subscribe(this.blockListeners, listener);
  }
  onTransaction(listener: (event: TxStreamEvent) => void): Unsubscribe {
    return subscribe(this.txListeners, listener);
  }
  onSignal(listener: (signal: SignalObject) => void): Unsubscribe {
    return subscribe(this.signalListeners, listener);
  }
}

function subscribe<T>(set: Set<T>, listener: T): Unsubscribe {
  set.add(listener);
  return () => {
    set.delete(listener);
  };
}
