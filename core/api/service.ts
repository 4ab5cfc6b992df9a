/**
 * What the node's HTTP API (node-api.md §4–§6) asks of the node behind it. The fetch-style handler
 * in `handler.ts` speaks HTTP; a class implementing this interface (core/node/node.ts) holds the
 * chain, mempool, network and signals. Tests may implement it over a memory chain.
 */
import type { History, TxListItem } from '../chain/readmodel.ts';
import type { BlockEvent } from '../ledger/block.ts';
import type { LedgerStatus } from '../ledger/status.ts';
import type { AtlasEntry, SignalObject } from '../signal/types.ts';

/** GET /status: the ledger figures plus the node's identity and tip. */
export interface NodeStatus extends LedgerStatus {
  node_id: string;
  height: number;
  difficulty: 0;
}

/** An event of /transactions/stream (node-api.md §6); amount is a decimal string of base units. */
export interface TxStreamEvent {
  id: string;
  origin: string;
  kind: string;
  amount: string;
}

/** A request to send a signal (POST /signals/send), validated and decoded. */
export interface SignalRequest {
  readonly to: 'broadcast' | Uint8Array;
  readonly payload: Uint8Array;
  readonly capabilities: readonly { readonly name: string; readonly version: number }[];
  /** The on-chain transaction whose burn pays for a non-empty payload. */
  readonly burnTxId: Uint8Array | null;
}

export type Unsubscribe = () => void;

export interface NodeService {
  /** 64-hex NodeId. */
  readonly nodeId: string;
  status(): NodeStatus;
  history(node: Uint8Array): Promise<History>;
  transactions(node: Uint8Array, options: { limit?: number; before?: number }): Promise<TxListItem[]>;
  beacon(): { height: number; hash: string };
  /** Multiaddrs a newcomer can join through: this node's own dialable addresses, then its peers'. */
  bootstrap(): string[];
  atlas(): AtlasEntry[];
  /** The last validated signals, newest last. */
  signals(): SignalObject[];
  /**
   * Signs a Transfer from this node, pools and broadcasts it; resolves to its tx id (hex).
   * Throws LedgerRuleError (code 'insufficient-free-balance' → 402) or MempoolError.
   */
  transfer(to: Uint8Array, amount: bigint): Promise<string>;
  /** Signs and gossips a signal; throws SignalError (code names the rule) when it cannot be sent. */
  sendSignal(request: SignalRequest): Promise<{ id: string; nonce: number }>;
  onBlock(listener: (event: BlockEvent) => void): Unsubscribe;
  onTransaction(listener: (event: TxStreamEvent) => void): Unsubscribe;
  onSignal(listener: (signal: SignalObject) => void): Unsubscribe;
}
