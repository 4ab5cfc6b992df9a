/**
 * What the jobs feature shows and takes (node-api.md §3 "Job status", §4 the /jobs routes,
 * docs/jobs.md): the validated bid, the job as GET /jobs and GET /jobs/:id show it, and its log lines.
 * Amounts are decimal strings of base units on the wire, bigint inside.
 */

/** How a job is paid: one co-signed settlement at the end, or a Heartbeat every 30 s while it runs. */
export type Billing = 'settle' | 'heartbeat';

/** A bid as POST /jobs/bid asks for it, validated. */
export interface JobRequest {
  readonly image: string;
  /** null: the image's own entrypoint and command. */
  readonly cmd: readonly string[] | null;
  readonly env: readonly (readonly [string, string])[];
  readonly cpuCores: number;
  readonly memMb: number;
  readonly durationSecs: number;
  readonly gpus: number;
  /** Base units; the most the payer will spend, locked at bid time. */
  readonly bid: bigint;
  readonly billing: Billing;
}

/**
 * A job's status: pending, running, awaiting_settlement, settled, expired, or `failed: <reason>`.
 * (expired: the payer's JobExpire released the bid; the spec leaves that status open.)
 */
export type JobStatus = 'pending' | 'running' | 'awaiting_settlement' | 'settled' | 'expired' | `failed: ${string}`;

/** Which side of the job this node is on. */
export type JobRole = 'payer' | 'host';

/** One row of GET /jobs (node-api.md §4), plus the host and this node's role. */
export interface JobSummary {
  job_id: string;
  status: JobStatus;
  payer: string;
  /** null while no host has taken it. */
  host: string | null;
  role: JobRole;
  container_id: string | null;
  /** Decimal base units; null until settled. */
  cost: string | null;
  bid: string;
}

/** Why one host did not take the job (the latest answer of each host asked). */
export interface Refusal {
  host: string;
  reason: string;
  /** Unix seconds. */
  at: number;
}

/** GET /jobs/:id: the summary, the spec, and what happened to it. */
export interface JobView extends JobSummary {
  billing: Billing;
  image: string;
  cmd: string[] | null;
  cpu_cores: number;
  mem_mb: number;
  duration_secs: number;
  gpus: number;
  /** Unix seconds: when it was bid, started, and ended; null until then. */
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  exit_code: number | null;
  /** Every host's latest reason for not taking it, while it waits or once no host did. */
  refusals: Refusal[];
  /** Heartbeat-billed jobs: heartbeats sent and what they paid (decimal base units); null for settled billing. */
  heartbeats: { count: number; paid: string } | null;
  /** The last lines of its output (at most OUTPUT_TAIL_LINES), kept with the job. */
  output_tail: LogEvent[];
}

/** One line of a job's output, as GET /jobs/:id/logs and its stream give it. */
export interface LogEvent {
  /** Position in the job's output, from 1: the SSE event id, and where a reconnect resumes. */
  seq: number;
  stream: 'stdout' | 'stderr';
  text: string;
  /** Unix ms. */
  at: number;
}

/** Lines of output kept with a job once it has ended, and at most this many bytes of them. */
export const OUTPUT_TAIL_LINES = 100;
export const OUTPUT_TAIL_BYTES = 64 * 1024;

/** The last lines of `lines` within OUTPUT_TAIL_LINES and OUTPUT_TAIL_BYTES. */
export function outputTail(lines: readonly LogEvent[]): LogEvent[] {
  const tail: LogEvent[] = [];
  let bytes = 0;
  for (let i = lines.length - 1; i >= 0 && tail.length < OUTPUT_TAIL_LINES; i--) {
    bytes += lines[i]!.text.length * 3;
    if (bytes > OUTPUT_TAIL_BYTES && tail.length > 0) break;
    tail.unshift(lines[i]!);
  }
  return tail;
}
