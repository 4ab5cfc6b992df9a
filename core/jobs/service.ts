/**
 * What the /jobs routes ask of the node's compute market (docs/jobs.md); JobMarket implements it.
 */
import type { Unsubscribe } from '../web/sse.ts';
import type { JobRequest, JobSummary, JobView, LogEvent } from './types.ts';

export interface JobsService {
  /**
   * Bids for a job: signs and pools the JobBid (carrying the hash of the job spec) and starts its
   * placement. Throws LedgerRuleError 'insufficient-free-balance' (402), JobError 'no-host' (503).
   */
  bidJob(request: JobRequest): Promise<{ job_id: string }>;
  /** Every job this node is payer or host of, newest first. */
  listJobs(): JobSummary[];
  /** One job, or undefined. */
  getJob(jobId: Uint8Array): JobView | undefined;
  /**
   * The manual settlement path, on the host: checks payer_sig over the v2 bytes (job id, this host,
   * cost) and cost ≤ bid, stores it and submits JobSettle. Throws JobError ('unknown-job' 404,
   * 'bad-signature' 400, 'cost-exceeds-bid' 400, 'wrong-state' 409).
   */
  settleJob(jobId: Uint8Array, cost: bigint, payerSig: Uint8Array): Promise<void>;
  /**
   * Force-stops a job named by its 64-hex job id or its container id (on the host: the container;
   * on the payer: tells the host, or stops placing it). Resolves false when no such job or container.
   */
  stopJob(ref: string): Promise<boolean>;
  /** The payer's JobExpire (10 blocks after an unaccepted bid, 1,440 after an acceptance): JobError 'unknown-job', 'wrong-role', 'not-expired'. */
  expireJob(jobId: Uint8Array): Promise<{ tx_id: string }>;
  /** The job's output lines after `after` (0: from the start); undefined for an unknown job. */
  jobLogs(jobId: Uint8Array, after: number): Promise<{ lines: LogEvent[]; ended: boolean } | undefined>;
  /**
   * Output lines after `after` as they come; `end` is called once the job's output is complete
   * (the container has exited and every line was delivered). Undefined for an unknown job.
   */
  followJobLogs(jobId: Uint8Array, after: number, listener: (line: LogEvent) => void, end: () => void): Unsubscribe | undefined;
}
