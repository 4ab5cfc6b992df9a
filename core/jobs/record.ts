/**
 * A job as this node keeps it: one record per job, the payer's or the host's (a node is never both
 * for one job: the ledger refuses it), and the job's state as a tagged union. The wire string of a
 * state (`failed: <reason>`) is made only where a view is shown (`statusOf`).
 */
import type { Billing, JobStatus, LogEvent, Refusal } from './types.ts';

/** Where a job is. settled, expired and failed are final: nothing moves a job out of them. */
export type JobState =
  | { readonly kind: 'pending' }
  | { readonly kind: 'running' }
  | { readonly kind: 'awaiting_settlement' }
  | { readonly kind: 'settled' }
  | { readonly kind: 'expired' }
  | { readonly kind: 'failed'; readonly reason: string };

export const PENDING: JobState = { kind: 'pending' };
export const RUNNING: JobState = { kind: 'running' };

/** The state as GET /jobs shows it. */
export function statusOf(state: JobState): JobStatus {
  return state.kind === 'failed' ? `failed: ${state.reason}` : state.kind;
}

/** Whether nothing can change the job's state any more. */
export function isFinal(state: JobState): boolean {
  return state.kind === 'settled' || state.kind === 'expired' || state.kind === 'failed';
}

/** Whether the job may still run, or runs (its capacity is taken on its host). */
export function isLive(state: JobState): boolean {
  return state.kind === 'pending' || state.kind === 'running';
}

/** Why the host stopped a container, so its exit is read right. */
const STOP_CAUSES = ['duration', 'payer', 'operator', 'dry', 'elsewhere', 'expired', 'killed', 'unaccepted'] as const;
export type StopCause = (typeof STOP_CAUSES)[number];

/** The report states the host sends its payer until answered. */
const REPORT_TAGS = ['Running', 'Ended', 'NotStarted'] as const;
export type ReportTag = (typeof REPORT_TAGS)[number];

/** What both sides keep. Amounts are decimal strings of base units. */
interface JobRecordCommon {
  readonly jobId: string;
  readonly payer: string;
  readonly state: JobState;
  readonly billing: Billing;
  /** The spec's canonical bytes and the signed JobBid, hex (the payer offers them again, the host checks them). */
  readonly spec: string;
  readonly bidTx: string | null;
  readonly bid: string;
  /** Unix seconds. */
  readonly createdAt: number;
  readonly containerId: string | null;
  readonly startedMs: number | null;
  readonly finishedMs: number | null;
  readonly exitCode: number | null;
  /** What the host asks (ended) and, once mined, what was paid. */
  readonly askedCost: string | null;
  readonly cost: string | null;
  /** The payer's v2 signature over askedCost, hex. */
  readonly payerSig: string | null;
  readonly refusals: readonly Refusal[];
  readonly heartbeats: { readonly count: number; readonly paid: string };
  readonly outputTail: readonly LogEvent[];
}

/** The payer's record: who it offered the job to, and who has it. */
export interface PayerJobRecord extends JobRecordCommon {
  readonly role: 'payer';
  /** The host the job is placed with; null while it waits. */
  readonly host: string | null;
  /** Hosts an offer went to that have not answered it (one may still take the job). */
  readonly unanswered: readonly string[];
  /** Hosts not asked again for this job (they took it and did not start it). */
  readonly passedOver: readonly string[];
  /** When the first offer went out (unix ms): no host can have run the job for longer since. */
  readonly firstOfferMs: number | null;
  /** When it stops waiting for a host (unix ms). */
  readonly placeBy: number;
}

/** The host's record: what it sent, and the stop it asked for. */
export interface HostJobRecord extends JobRecordCommon {
  readonly role: 'host';
  /** This node. */
  readonly host: string;
  /** The JobSettle sent, hex id. */
  readonly settleTx: string | null;
  /** Unix ms of the last heartbeat sent. */
  readonly lastBeatMs: number | null;
  /** The stop it asked for (duration, payer, operator, dry cell, …), so the exit is read right. */
  readonly stopCause: StopCause | null;
  /** The state last reported to the payer and answered (a change is sent until answered). */
  readonly reportedState: ReportTag | null;
}

export type JobRecord = PayerJobRecord | HostJobRecord;

/** The reason a failed job gives, or null. */
export function reasonOf(state: JobState): string | null {
  return state.kind === 'failed' ? state.reason : null;
}

type Start = Pick<JobRecordCommon, 'jobId' | 'payer' | 'billing' | 'spec' | 'bidTx' | 'bid' | 'createdAt'>;

const EMPTY = {
  state: PENDING,
  containerId: null,
  startedMs: null,
  finishedMs: null,
  exitCode: null,
  askedCost: null,
  cost: null,
  payerSig: null,
  refusals: [],
  heartbeats: { count: 0, paid: '0' },
  outputTail: [],
} as const;

/** A payer's new job: pending, offered to nobody yet (a heartbeat-billed one names its host). */
export function newPayerRecord(start: Start & Pick<PayerJobRecord, 'host' | 'placeBy' | 'firstOfferMs'>): PayerJobRecord {
  return { ...start, ...EMPTY, role: 'payer', unanswered: [], passedOver: [] };
}

/** A job the host took: pending until its container runs. */
export function newHostRecord(start: Start & Pick<HostJobRecord, 'host'>): HostJobRecord {
  return { ...start, ...EMPTY, role: 'host', settleTx: null, lastBeatMs: null, stopCause: null, reportedState: null };
}

// ---- the chain's facts, the same for both roles ----

/** What a connected block says about a job. */
export type ChainEvent =
  | { readonly kind: 'heartbeat-mined'; readonly amount: bigint }
  | { readonly kind: 'settle-mined'; readonly cost: bigint }
  /** Whether the chain still holds the job's lock (after each block, and when the job ends). */
  | { readonly kind: 'lock-checked'; readonly open: boolean };

/** The record after a chain fact: heartbeats paid, the settlement's cost, a lock the heartbeats spent. */
export function onChain<R extends JobRecord>(record: R, event: ChainEvent): R {
  // The ledger closes a job with its settlement: a paid job is paid once.
  if (record.cost !== null) return record;
  switch (event.kind) {
    case 'heartbeat-mined':
      return {
        ...record,
        heartbeats: { count: record.heartbeats.count + 1, paid: (BigInt(record.heartbeats.paid) + event.amount).toString() },
        state: record.state.kind === 'pending' ? RUNNING : record.state,
      };
    case 'settle-mined':
      // A job that ended abnormally keeps saying why; its cost shows what it used.
      return {
        ...record,
        cost: (BigInt(record.heartbeats.paid) + event.cost).toString(),
        state: isFinal(record.state) ? record.state : { kind: 'settled' },
      };
    case 'lock-checked':
      return event.open || !spentLock(record) ? record : closeSpent(record);
  }
}

/** An ended heartbeat-billed job whose heartbeats may have spent its whole lock (when the chain no longer holds it). */
export function spentLock(record: JobRecord): boolean {
  return record.billing === 'heartbeat' && record.finishedMs !== null && record.heartbeats.count > 0 && record.cost === null;
}

/** Paid in full by its heartbeats: nothing is left to settle. */
function closeSpent<R extends JobRecord>(record: R): R {
  return { ...record, cost: record.heartbeats.paid, state: record.state.kind === 'awaiting_settlement' ? { kind: 'settled' } : record.state };
}

// ---- the stored form ----

/**
 * Records are this node's own bookkeeping, never hashed or signed, so they are stored as JSON. The
 * first stored form (before the state was a union) kept the wire string `status` and `reason`, and
 * every field of both roles; it is read as it was written.
 */
export function encodeRecord(record: JobRecord): string {
  return JSON.stringify(record);
}

export function decodeRecord(json: string): JobRecord {
  const stored = JSON.parse(json) as Record<string, unknown>;
  if (stored.state !== undefined) return stored as unknown as JobRecord;
  return fromFirstForm(stored as unknown as FirstForm);
}

/** The record as the first stored form had it. */
interface FirstForm {
  readonly jobId: string;
  readonly role: 'payer' | 'host';
  readonly payer: string;
  readonly host: string | null;
  readonly unanswered: string[];
  readonly passedOver?: string[];
  readonly firstOfferMs?: number;
  readonly status: string;
  readonly billing: Billing;
  readonly spec: string;
  readonly bidTx: string | null;
  readonly bid: string;
  readonly createdAt: number;
  readonly placeBy: number;
  readonly containerId: string | null;
  readonly startedMs: number | null;
  readonly finishedMs: number | null;
  readonly exitCode: number | null;
  readonly reason: string | null;
  readonly askedCost: string | null;
  readonly cost: string | null;
  readonly payerSig: string | null;
  readonly settleTx: string | null;
  readonly refusals: Refusal[];
  readonly heartbeats: { count: number; paid: string };
  readonly lastBeatMs: number | null;
  readonly stopCause: string | null;
  readonly reportedState: string | null;
  readonly outputTail: LogEvent[];
}

const PLAIN_STATES = ['pending', 'running', 'awaiting_settlement', 'settled', 'expired'] as const;
const FAILED_PREFIX = 'failed: ';

/** The member of `values` that `text` is, or null. */
function oneOf<T extends string>(values: readonly T[], text: string | null): T | null {
  return values.find((v) => v === text) ?? null;
}

function stateOfStatus(status: string, reason: string | null): JobState {
  const plain = oneOf(PLAIN_STATES, status);
  return plain !== null ? { kind: plain } : { kind: 'failed', reason: reason ?? status.slice(FAILED_PREFIX.length) };
}

function fromFirstForm(old: FirstForm): JobRecord {
  const common: JobRecordCommon = {
    jobId: old.jobId,
    payer: old.payer,
    state: stateOfStatus(old.status, old.reason),
    billing: old.billing,
    spec: old.spec,
    bidTx: old.bidTx,
    bid: old.bid,
    createdAt: old.createdAt,
    containerId: old.containerId,
    startedMs: old.startedMs,
    finishedMs: old.finishedMs,
    exitCode: old.exitCode,
    askedCost: old.askedCost,
    cost: old.cost,
    payerSig: old.payerSig,
    refusals: old.refusals,
    heartbeats: old.heartbeats,
    outputTail: old.outputTail,
  };
  if (old.role === 'payer') {
    return {
      ...common,
      role: 'payer',
      host: old.host,
      unanswered: old.unanswered,
      passedOver: old.passedOver ?? [],
      firstOfferMs: old.firstOfferMs ?? null,
      placeBy: old.placeBy,
    };
  }
  return {
    ...common,
    role: 'host',
    host: old.host ?? '',
    settleTx: old.settleTx,
    lastBeatMs: old.lastBeatMs,
    stopCause: oneOf(STOP_CAUSES, old.stopCause),
    reportedState: oneOf(REPORT_TAGS, old.reportedState),
  };
}

/** What a transition gives: the next record (the same object when nothing changed), and what to do once it is written. */
export interface Step<R, E> {
  readonly record: R;
  readonly effects: readonly E[];
}
