/**
 * The payer's side of a job as a state machine: `payerTransition(record, event)` is pure, and
 * gives the next record and what to do about it. Whoever feeds it an event writes the new record
 * to the job book first, then performs the effects (core/jobs/payer.ts): every decision is on
 * record before the next message goes out.
 *
 * | state           | event                                 | next state              | effects                          |
 * | --------------- | ------------------------------------- | ----------------------- | -------------------------------- |
 * | pending         | offered                               | pending                 |                                  |
 * | pending         | refused (a host's reasons)            | pending                 |                                  |
 * | pending         | taken (an asked host)                 | pending, placed         | start-wait (settle billing)      |
 * | pending, placed | start-overdue                         | pending, not placed     | place                            |
 * | pending         | cancel (not placed)                   | failed: cancelled       |                                  |
 * | not final       | reserved-refused                      | failed: refused         |                                  |
 * | not final       | give-up (queue time, host unreachable)| failed: reason          |                                  |
 * | not final       | report NotStarted (its host)          | failed                  | sign 0 (releases the bid)        |
 * | any             | report (host accepted on the chain)   | placed with that host   | stop-host (when given up on)     |
 * | pending         | report Running                        | running                 | answer                           |
 * | not final       | report Ended                          | awaiting_settlement or failed | fetch-tail, weigh-cost     |
 * | any             | cost-asked (within what is owed)      | same                    | sign                             |
 * | any             | signed                                | same                    |                                  |
 * | not final       | bid-expired                           | expired                 |                                  |
 * | any             | heartbeat-mined                       | pending → running       |                                  |
 * | not final       | settle-mined                          | settled                 |                                  |
 * | awaiting_settlement | lock-checked (spent)              | settled                 |                                  |
 */
import { formatCredits } from '../encoding/amount.ts';
import { toHex } from '../encoding/hex.ts';
import { type ChainEvent, isFinal, onChain, type PayerJobRecord, RUNNING, type Step } from './record.ts';
import type { LogEvent } from './types.ts';
import type { ReportState } from './wire.ts';

/** How long a host that took a job has to start it (an image pull may take minutes). */
export const START_WAIT_MS = 5 * 60_000;

export type PayerEvent =
  | ChainEvent
  | { readonly kind: 'offered'; readonly host: string; readonly atMs: number }
  | { readonly kind: 'refused'; readonly host: string; readonly reasons: readonly string[]; readonly atMs: number; readonly answered: boolean }
  | { readonly kind: 'taken'; readonly host: string }
  | { readonly kind: 'start-overdue'; readonly host: string; readonly atMs: number }
  | { readonly kind: 'cancel' }
  | { readonly kind: 'reserved-refused'; readonly host: string; readonly reasons: readonly string[]; readonly atMs: number }
  | { readonly kind: 'give-up'; readonly reason: string }
  | {
      readonly kind: 'report';
      readonly host: string;
      readonly state: ReportState;
      readonly atMs: number;
      readonly lockOpen: boolean;
      /** The host whose JobAccept the chain holds for the job; absent or null: none. */
      readonly acceptedBy?: string | null;
    }
  | { readonly kind: 'tail'; readonly lines: readonly LogEvent[] }
  /** The host asks `cost`; `most` is what the job can have earned. */
  | { readonly kind: 'cost-asked'; readonly cost: bigint; readonly most: bigint }
  | { readonly kind: 'signed'; readonly cost: bigint; readonly payerSig: Uint8Array }
  | { readonly kind: 'bid-expired' };

export type PayerEffect =
  | { readonly kind: 'place' }
  /** Settle billing: the host has START_WAIT_MS to start it. */
  | { readonly kind: 'start-wait'; readonly host: string }
  /** The answer to the host's report. */
  | { readonly kind: 'answer'; readonly placedHere: boolean }
  | { readonly kind: 'fetch-tail' }
  | { readonly kind: 'weigh-cost'; readonly cost: bigint }
  | { readonly kind: 'sign'; readonly cost: bigint }
  /** Ask the job's host to stop it (a job the payer gave up on that a host's acceptance won). */
  | { readonly kind: 'stop-host' }
  | { readonly kind: 'log'; readonly line: string };

type PayerStep = Step<PayerJobRecord, PayerEffect>;

/** `host`'s latest refusal on record; an answered offer is no longer open. */
function refuse(record: PayerJobRecord, host: string, reasons: readonly string[], atMs: number, answered = true): PayerJobRecord {
  const at = Math.floor(atMs / 1000);
  return {
    ...record,
    unanswered: answered ? record.unanswered.filter((h) => h !== host) : record.unanswered,
    refusals: [...record.refusals.filter((r) => r.host !== host), { host, reason: reasons.join('; '), at }],
  };
}

function fail(record: PayerJobRecord, reason: string): PayerJobRecord {
  return isFinal(record.state) ? record : { ...record, state: { kind: 'failed', reason } };
}

/** The job is `host`'s; a settle-billed one goes back in the queue if the host does not start it in time. */
function placed(record: PayerJobRecord, host: string): PayerStep {
  const effects: PayerEffect[] = [{ kind: 'log', line: `jobs: ${record.jobId.slice(0, 16)}… placed with ${host.slice(0, 16)}…` }];
  if (record.billing === 'settle') effects.push({ kind: 'start-wait', host });
  return { record: { ...record, host, unanswered: record.unanswered.filter((h) => h !== host) }, effects };
}

/** The payer's next record and effects for `event`; the record itself when nothing changes. */
export function payerTransition(record: PayerJobRecord, event: PayerEvent): PayerStep {
  const same = { record, effects: [] };
  const pending = record.state.kind === 'pending';
  switch (event.kind) {
    case 'heartbeat-mined':
    case 'settle-mined':
    case 'lock-checked':
      return { record: onChain(record, event), effects: [] };
    case 'offered':
      // On record before it goes out: the host's report may come before its answer.
      return {
        record: {
          ...record,
          unanswered: record.unanswered.includes(event.host) ? record.unanswered : [...record.unanswered, event.host],
          firstOfferMs: record.firstOfferMs ?? event.atMs,
        },
        effects: [],
      };
    case 'refused':
      return { record: refuse(record, event.host, event.reasons, event.atMs, event.answered), effects: [] };
    case 'taken':
      // Cancelled while the offer was out, or the host reported it could not start it: not given the job.
      if (record.host !== null || !pending || !record.unanswered.includes(event.host)) return same;
      return placed(record, event.host);
    case 'start-overdue': {
      if (record.host !== event.host || record.startedMs !== null || !pending) return same;
      const refused = refuse(record, event.host, [`took the job but did not start it within ${START_WAIT_MS / 1000} s`], event.atMs);
      return { record: { ...refused, passedOver: [...record.passedOver, event.host], host: null }, effects: [{ kind: 'place' }] };
    }
    case 'cancel':
      if (record.host !== null || !pending) return same;
      return { record: fail(record, 'cancelled by the payer before a host took it'), effects: [] };
    case 'reserved-refused':
      return { record: fail(refuse(record, event.host, event.reasons, event.atMs), `the host refused it: ${event.reasons.join('; ')}`), effects: [] };
    case 'give-up':
      return { record: fail(record, event.reason), effects: [] };
    case 'report':
      return onReport(record, event);
    case 'tail':
      return { record: { ...record, outputTail: event.lines }, effects: [] };
    case 'cost-asked':
      // The payer signs one cost per job, no more than the job can have earned, for the host that has it.
      if (event.cost <= event.most && (record.askedCost === null || record.askedCost === event.cost.toString()))
        return { record, effects: [{ kind: 'sign', cost: event.cost }] };
      return {
        record,
        effects: [
          {
            kind: 'log',
            line: `jobs: ${record.jobId.slice(0, 16)}…: the host asks ${formatCredits(event.cost)} credits, more than the ${formatCredits(event.most)} credits the job can have earned or another cost than before; not signed`,
          },
        ],
      };
    case 'signed':
      return { record: { ...record, askedCost: event.cost.toString(), payerSig: toHex(event.payerSig) }, effects: [] };
    case 'bid-expired':
      if (isFinal(record.state)) return same;
      return { record: { ...record, state: { kind: 'expired' } }, effects: [] };
  }
}

/** What a host's report of the job's state does to it. */
function onReport(record: PayerJobRecord, event: Extract<PayerEvent, { kind: 'report' }>): PayerStep {
  const { host, state, atMs } = event;
  const acceptedBy = event.acceptedBy ?? null;
  const here: PayerEffect = { kind: 'answer', placedHere: true };
  let next = record;
  const effects: PayerEffect[] = [];
  if (acceptedBy === host && next.host !== host) {
    // The chain says whose the job is: the host whose acceptance is in a block, even one the payer
    // gave up on meanwhile (cancelled while the offer was out). That host is paid for what it ran,
    // and a job given up on is stopped there.
    if (isFinal(next.state)) {
      next = { ...next, host, unanswered: next.unanswered.filter((h) => h !== host) };
      if (state.state === 'Running') effects.push({ kind: 'stop-host' });
    } else {
      const step = placed(next, host);
      next = step.record;
      effects.push(...step.effects);
    }
  } else if (next.host === null && next.unanswered.includes(host)) {
    // Before its answer to the offer: it could not start it; the offer counts as refused.
    if (state.state === 'NotStarted') return { record: refuse(next, host, [state.reason], atMs), effects: [here] };
    // A host whose offer is unanswered may have taken it: it gets the job if nobody else has it.
    if (next.state.kind === 'pending') {
      const step = placed(next, host);
      next = step.record;
      effects.push(...step.effects);
    }
  }
  if (next.host !== host) return { record: next, effects: [...effects, { kind: 'answer', placedHere: false }] };
  if (state.state === 'NotStarted') {
    next = refuse(next, host, [state.reason], atMs);
    if (acceptedBy !== null && acceptedBy !== host && !isFinal(next.state)) {
      // Another host's acceptance reached the chain first: the job is that host's.
      const step = placed({ ...next, host: null }, acceptedBy);
      return { record: step.record, effects: [...effects, ...step.effects, { kind: 'answer', placedHere: false }] };
    }
    // Nothing ran and nothing is owed: the job ends with the host's words, and a settlement of 0
    // (signed in the answer) releases the bid at once where the host holds it.
    return { record: fail(next, state.reason), effects: [...effects, { kind: 'sign', cost: 0n }, here] };
  }
  next = { ...next, containerId: state.container_id, startedMs: state.started_ms };
  if (state.state === 'Running') {
    if (next.state.kind === 'pending') next = { ...next, state: RUNNING };
    return { record: next, effects: [...effects, here] };
  }
  next = { ...next, finishedMs: state.finished_ms, exitCode: state.exit_code };
  if (next.cost === null && !isFinal(next.state)) {
    next = { ...next, state: state.reason === null ? { kind: 'awaiting_settlement' } : { kind: 'failed', reason: state.reason } };
  }
  const closed = onChain(next, { kind: 'lock-checked', open: event.lockOpen });
  if (closed !== next) return { record: closed, effects: [...effects, here] };
  if (next.outputTail.length === 0) effects.push({ kind: 'fetch-tail' });
  effects.push({ kind: 'weigh-cost', cost: state.cost }, here);
  return { record: next, effects };
}
