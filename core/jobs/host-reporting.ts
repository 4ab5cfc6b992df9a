/**
 * The host's reports to the payer (docs/jobs.md "Reports"): each change of the job's state (running,
 * ended, or not started) is sent again and again, backing off, until the payer answers; the answer
 * (placed here or elsewhere, and the payer's signature over the cost) is fed to the job's machine.
 */
import { decode, encode } from '../encoding/codec.ts';
import { fromHex } from '../encoding/hex.ts';
import { clip } from '../encoding/text.ts';
import { MeshError } from '../errors.ts';
import { sleep } from '../time/clock.ts';
import { type HostSide, shortId } from './host-side.ts';
import { type HostJobRecord, reasonOf } from './record.ts';
import { JOB_RPC, MAX_REASON_BYTES, type ReportState, reportAnswerCodec, reportCodec } from './wire.ts';

/** First and longest wait between reports the payer has not answered. */
const REPORT_RETRY_MS = [1_000, 30_000] as const;
/** How long a report waits for the payer's answer. */
const REPORT_TIMEOUT_MS = 10_000;

/** The job's state as the payer is told it, or null while there is nothing to tell. */
export function reportStateOf(record: HostJobRecord): ReportState | null {
  const reason = reasonOf(record.state);
  if (record.finishedMs !== null) {
    return {
      state: 'Ended',
      container_id: record.containerId ?? '',
      started_ms: record.startedMs ?? record.finishedMs,
      finished_ms: record.finishedMs,
      exit_code: record.exitCode,
      reason: reason === null ? null : clip(reason, MAX_REASON_BYTES),
      cost: BigInt(record.askedCost ?? '0'),
    };
  }
  if (record.state.kind === 'running') return { state: 'Running', container_id: record.containerId ?? '', started_ms: record.startedMs ?? 0 };
  if (reason !== null) return { state: 'NotStarted', reason: clip(reason, MAX_REASON_BYTES) };
  return null;
}

export class HostReporting {
  readonly #side: HostSide;
  readonly #reporting = new Set<string>();

  constructor(side: HostSide) {
    this.#side = side;
  }

  /** Tells the payer the job's state, again and again until it answers; acts on the answer. */
  report(jobId: string): void {
    if (this.#reporting.has(jobId)) return;
    this.#reporting.add(jobId);
    void this.#loop(jobId).finally(() => this.#reporting.delete(jobId));
  }

  async #loop(jobId: string): Promise<void> {
    const side = this.#side;
    const { network, clock, log } = side.o;
    let wait: number = REPORT_RETRY_MS[0];
    try {
      while (!side.stopped) {
        const record = side.record(jobId);
        const state = record === undefined ? null : reportStateOf(record);
        if (record === undefined || state === null || record.reportedState === state.state) return;
        try {
          const request = encode(reportCodec, { job_id: fromHex(jobId, 32), state });
          const answer = decode(
            reportAnswerCodec,
            await network.request(fromHex(record.payer, 32), JOB_RPC.report, request, { timeoutMs: REPORT_TIMEOUT_MS, relayed: true }),
          );
          await side.step(jobId, { kind: 'answered', tag: state.state, placedHere: answer.placed_here, payerSig: answer.payer_sig });
          wait = REPORT_RETRY_MS[0];
        } catch (error) {
          if (!(error instanceof MeshError)) throw error;
          await sleep(clock, wait);
          wait = Math.min(wait * 2, REPORT_RETRY_MS[1]);
        }
      }
    } catch (error) {
      log(`jobs: reporting ${shortId(jobId)}: ${String(error)}`);
    }
  }
}
