/**
 * What the parts of the host's side share (core/jobs/host.ts puts them together): the node's
 * parts, and one way to move a job along, `step`, which writes the job's next record before it
 * performs what the machine says to do (host-machine.ts).
 */
import type { Chain } from '../chain/chain.ts';
import type { Mempool } from '../chain/mempool.ts';
import type { OwnTransactions } from '../chain/own-transactions.ts';
import type { Network } from '../net/network.ts';
import type { Clock } from '../time/clock.ts';
import type { JobBook } from './book.ts';
import type { Executor } from './executor.ts';
import type { HostEvent } from './host-machine.ts';
import type { HostPolicy } from './policy.ts';
import type { HostJobRecord } from './record.ts';

export interface JobHostOptions {
  /** null: this node has no container runtime (it refuses every offer with that reason). */
  readonly executor: Executor | null;
  readonly policy: HostPolicy;
  readonly book: JobBook;
  readonly chain: Chain;
  readonly mempool: Mempool;
  readonly own: OwnTransactions;
  readonly network: Network;
  readonly self: Uint8Array;
  readonly clock: Clock;
  /** Time between heartbeats (HEARTBEAT_INTERVAL_SECS; shorter only on a devnet). */
  readonly heartbeatMs: number;
  readonly log: (line: string) => void;
}

export interface HostSide {
  readonly o: JobHostOptions;
  readonly selfHex: string;
  /** Whether the host has stopped: nothing new is begun. */
  readonly stopped: boolean;
  /** The host record of `jobId`, as it is now. */
  record(jobId: string): HostJobRecord | undefined;
  /** Feeds `event` to the job's machine, writes the record it gives, then performs its effects. */
  step(jobId: string, event: HostEvent): Promise<void>;
  /** The labels of this host's containers (of one job, or all). */
  labels(jobId: string | null): Record<string, string>;
}

/** The first 16 hex digits of a job id, as the log shows it. */
export function shortId(jobId: string): string {
  return `${jobId.slice(0, 16)}…`;
}
