/**
 * The host's side of a job as a state machine: `hostTransition(record, event)` is pure, and gives
 * the next record and what to do about it. Whoever feeds it an event writes the new record to the
 * job book first, then performs the effects (core/jobs/host.ts), so a host restarted after kill -9
 * finds on record everything it had started to do.
 *
 * | state               | event                          | next state                     | effects                        |
 * | ------------------- | ------------------------------ | ------------------------------ | ------------------------------ |
 * | pending             | started                        | running                        | watch, report (kill if a stop was asked) |
 * | pending             | start-failed                   | failed: reason                 | report                         |
 * | pending, running    | stop (cause kept once)         | same                           | kill (when running)            |
 * | pending, running    | exited                         | awaiting_settlement or failed  | remove container, report       |
 * | running             | beat (no stop asked)           | running                        | heartbeat                      |
 * | any                 | answered (placed here)         | same                           | settle (when signed and unpaid)|
 * | running             | answered (placed elsewhere)    | same                           | stop: elsewhere                |
 * | ended, unpaid       | settle-signed                  | same                           | submit settle                  |
 * | pending, running    | bid-expired                    | same                           | stop: expired                  |
 * | awaiting_settlement | bid-expired                    | expired                        |                                |
 * | pending, running    | restarted (created, not run)   | pending                        | start                          |
 * | pending, running    | adopted (container found)      | running                        | watch, report (when it runs)   |
 * | pending, running    | lost (container gone)          | failed: lost                   | report                         |
 * | any                 | heartbeat-mined                | pending → running              |                                |
 * | not final           | settle-mined                   | settled                        |                                |
 * | awaiting_settlement | lock-checked (spent)           | settled                        |                                |
 */
import { fromHex, toHex } from '../encoding/hex.ts';
import { type ChainEvent, type HostJobRecord, isFinal, isLive, onChain, type ReportTag, RUNNING, reasonOf, type Step, type StopCause } from './record.ts';
import { decodeSpec, type JobSpec } from './spec.ts';
import type { LogEvent } from './types.ts';

/** Seconds a stopped container gets between SIGTERM and SIGKILL. */
export const STOP_GRACE_SECS = 5;

export type HostEvent =
  | ChainEvent
  | { readonly kind: 'started'; readonly containerId: string; readonly atMs: number }
  | { readonly kind: 'start-failed'; readonly reason: string }
  | { readonly kind: 'stop'; readonly cause: StopCause }
  | {
      readonly kind: 'exited';
      readonly finishedMs: number;
      readonly exitCode: number | null;
      readonly oomKilled: boolean;
      /** Its last lines, when this host saw them. */
      readonly outputTail: readonly LogEvent[] | null;
      readonly askedCost: bigint;
      readonly lockOpen: boolean;
    }
  /** A heartbeat is due: the epoch it carries, and whether the cell can cover none after it. */
  | { readonly kind: 'beat'; readonly atMs: number; readonly epoch: number; readonly last: boolean }
  | { readonly kind: 'beat-refused'; readonly lastBeatMs: number | null }
  | { readonly kind: 'answered'; readonly tag: ReportTag; readonly placedHere: boolean; readonly payerSig: Uint8Array | null }
  | { readonly kind: 'settle-signed'; readonly cost: bigint; readonly payerSig: Uint8Array }
  | { readonly kind: 'settle-sent'; readonly txId: string }
  | { readonly kind: 'bid-expired' }
  | { readonly kind: 'restarted' }
  | { readonly kind: 'adopted'; readonly containerId: string; readonly startedMs: number; readonly running: boolean }
  | { readonly kind: 'lost'; readonly atMs: number };

export type HostEffect =
  | { readonly kind: 'start' }
  | { readonly kind: 'watch' }
  | { readonly kind: 'report' }
  | { readonly kind: 'kill'; readonly containerId: string; readonly graceSecs: number }
  | { readonly kind: 'remove'; readonly containerId: string }
  /** The next event: a stop for this cause. */
  | { readonly kind: 'stop'; readonly cause: StopCause }
  /** Sends the heartbeat; a refused one puts `previousBeatMs` back. */
  | { readonly kind: 'heartbeat'; readonly epoch: number; readonly last: boolean; readonly previousBeatMs: number | null }
  | { readonly kind: 'settle'; readonly cost: bigint; readonly payerSig: Uint8Array }
  | { readonly kind: 'submit-settle' }
  | { readonly kind: 'log'; readonly line: string };

const STOP_REASONS: Record<StopCause, (spec: JobSpec) => string> = {
  duration: (spec) => `killed at its duration of ${spec.duration_secs} s`,
  payer: () => 'stopped by the payer',
  operator: () => 'stopped on the host',
  dry: () => 'the cell cannot cover the next heartbeat',
  elsewhere: () => 'the payer withdrew the job from this host (cancelled, or placed elsewhere)',
  expired: () => 'the payer expired the bid',
  killed: () => 'killed by directed placement (/mesh-kill)',
  unaccepted: () => "the host's acceptance did not reach a block before the payer could take the bid back",
};

const LOST = 'the container was lost while the host was down';

/** Why the job ended, as its stop cause says (a job stopped by its host or payer). */
export function stopReason(record: HostJobRecord): string {
  return record.stopCause === null ? 'stopped' : STOP_REASONS[record.stopCause](decodeSpec(fromHex(record.spec)));
}

function kill(containerId: string, cause: StopCause): HostEffect {
  // Past its time, or unpaid: no grace.
  return { kind: 'kill', containerId, graceSecs: cause === 'duration' || cause === 'dry' ? 0 : STOP_GRACE_SECS };
}

function short(record: HostJobRecord): string {
  return `${record.jobId.slice(0, 16)}…`;
}

/** The host's next record and effects for `event`; the record itself when nothing changes. */
export function hostTransition(record: HostJobRecord, event: HostEvent): Step<HostJobRecord, HostEffect> {
  const same = { record, effects: [] };
  const { state } = record;
  switch (event.kind) {
    case 'heartbeat-mined':
    case 'settle-mined':
    case 'lock-checked':
      return { record: onChain(record, event), effects: [] };
    case 'started': {
      if (state.kind !== 'pending') return same;
      const next: HostJobRecord = { ...record, containerId: event.containerId, state: RUNNING, startedMs: event.atMs };
      const effects: HostEffect[] = [
        { kind: 'log', line: `jobs: ${short(record)} running in ${event.containerId.slice(0, 12)} for ${record.payer.slice(0, 16)}…` },
        { kind: 'watch' },
        { kind: 'report' },
      ];
      // A stop asked for before the container ran is carried out now.
      if (record.stopCause !== null) effects.push(kill(event.containerId, record.stopCause));
      return { record: next, effects };
    }
    case 'start-failed':
      if (state.kind !== 'pending') return same;
      // Nothing ran, nothing is owed: a settlement of 0, which the payer signs, releases the bid at once.
      return {
        record: { ...record, state: { kind: 'failed', reason: event.reason }, askedCost: '0' },
        effects: [{ kind: 'log', line: `jobs: ${short(record)} did not start: ${event.reason}` }, { kind: 'report' }],
      };
    case 'stop': {
      if (!isLive(state)) return same;
      const next = record.stopCause === null ? { ...record, stopCause: event.cause } : record;
      // Asked before its container runs: the start stops it as soon as it does.
      if (state.kind !== 'running' || record.containerId === null) return { record: next, effects: [] };
      return { record: next, effects: [kill(record.containerId, event.cause)] };
    }
    case 'exited': {
      if (record.finishedMs !== null || !isLive(state)) return same;
      const spec = decodeSpec(fromHex(record.spec));
      const reason =
        record.stopCause !== null
          ? STOP_REASONS[record.stopCause](spec)
          : event.oomKilled
            ? `memory limit of ${spec.mem_mb} MiB hit (exit ${event.exitCode ?? 137})`
            : null;
      const ended: HostJobRecord = {
        ...record,
        outputTail: event.outputTail ?? record.outputTail,
        finishedMs: event.finishedMs,
        exitCode: event.exitCode,
        askedCost: event.askedCost.toString(),
        state: reason === null ? { kind: 'awaiting_settlement' } : { kind: 'failed', reason },
      };
      const effects: HostEffect[] = [
        { kind: 'log', line: `jobs: ${short(record)} ended: exit ${event.exitCode ?? '?'}${reason === null ? '' : `, ${reason}`}` },
      ];
      if (record.containerId !== null) effects.push({ kind: 'remove', containerId: record.containerId });
      effects.push({ kind: 'report' });
      return { record: onChain(ended, { kind: 'lock-checked', open: event.lockOpen }), effects };
    }
    case 'beat':
      if (state.kind !== 'running' || record.stopCause !== null) return same;
      // Written before it is sent: a crash in between loses one interval's pay, never bills one twice.
      return {
        record: { ...record, lastBeatMs: event.atMs },
        effects: [{ kind: 'heartbeat', epoch: event.epoch, last: event.last, previousBeatMs: record.lastBeatMs }],
      };
    case 'beat-refused':
      return { record: { ...record, lastBeatMs: event.lastBeatMs }, effects: [] };
    case 'answered': {
      const next = { ...record, reportedState: event.tag };
      if (!event.placedHere) return { record: next, effects: state.kind === 'running' ? [{ kind: 'stop', cause: 'elsewhere' }] : [] };
      if (event.payerSig !== null && record.askedCost !== null && record.cost === null && record.settleTx === null) {
        return { record: next, effects: [{ kind: 'settle', cost: BigInt(record.askedCost), payerSig: event.payerSig }] };
      }
      return { record: next, effects: [] };
    }
    case 'settle-signed':
      // Settled once: a cost on record is never asked again.
      if (!hostEnded(record) || record.cost !== null) return same;
      return { record: { ...record, askedCost: event.cost.toString(), payerSig: toHex(event.payerSig) }, effects: [{ kind: 'submit-settle' }] };
    case 'settle-sent':
      return { record: { ...record, settleTx: event.txId }, effects: [] };
    case 'bid-expired':
      // Its host can no longer be paid: the container stops (its state then says why).
      if (isLive(state)) return { record, effects: [{ kind: 'stop', cause: 'expired' }] };
      if (isFinal(state)) return same;
      return { record: { ...record, state: { kind: 'expired' } }, effects: [] };
    case 'restarted':
      // Created, never started (the host stopped in between): nothing ran; it starts afresh.
      if (!isLive(state)) return same;
      return { record: { ...record, state: { kind: 'pending' }, containerId: null }, effects: [{ kind: 'start' }] };
    case 'adopted': {
      if (!isLive(state)) return same;
      const next: HostJobRecord =
        state.kind === 'pending'
          ? { ...record, containerId: event.containerId, state: RUNNING, startedMs: event.startedMs }
          : { ...record, containerId: event.containerId };
      if (!event.running) return { record: next, effects: [] };
      const effects: HostEffect[] = [{ kind: 'watch' }, { kind: 'report' }];
      // A stop asked for before the host went down is carried out now.
      if (record.stopCause !== null) effects.push(kill(event.containerId, record.stopCause));
      return { record: next, effects };
    }
    case 'lost':
      // Its container is gone (removed by hand, or the engine lost it): it ends here, and asks nothing.
      if (!isLive(state) || record.finishedMs !== null) return same;
      return { record: { ...record, finishedMs: event.atMs, state: { kind: 'failed', reason: LOST }, askedCost: '0' }, effects: [{ kind: 'report' }] };
  }
}

/** Whether the host's side of the job is over: its container ended, or it never ran. */
export function hostEnded(record: HostJobRecord): boolean {
  return record.finishedMs !== null || reasonOf(record.state) !== null;
}
