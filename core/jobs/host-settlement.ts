/**
 * The host's settlement (docs/jobs.md "Settlement"): what it asks for an ended job, the payer's
 * signature checked, and the JobSettle submitted once (again only when it fell out of the pool).
 */
import { verify } from '../crypto/ed25519.ts';
import { formatCredits } from '../encoding/amount.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { settlementBytes } from '../ledger/tx.ts';
import { JobError } from './errors.ts';
import { hostEnded } from './host-machine.ts';
import { type HostSide, shortId } from './host-side.ts';
import { type HostJobRecord, statusOf } from './record.ts';
import { decodeSpec, MIN_BILLED_MS, settleCost } from './spec.ts';

export class HostSettlement {
  readonly #side: HostSide;

  constructor(side: HostSide) {
    this.#side = side;
  }

  /**
   * What the host asks for a job that ended at `finishedMs`: for settle billing, the bid in
   * proportion to the time it ran (all of it at its duration); for heartbeat billing, the part of
   * the interval since the last heartbeat, within what the lock still holds. A job that ran pays at
   * least one second of its rate (MIN_BILLED_MS).
   */
  costOf(record: HostJobRecord, finishedMs: number): bigint {
    const { chain, heartbeatMs } = this.#side.o;
    const started = record.startedMs ?? finishedMs;
    const ran = Math.max(0, finishedMs - started);
    if (record.billing === 'settle') return settleCost(BigInt(record.bid), decodeSpec(fromHex(record.spec)).duration_secs, ran);
    const job = chain.state.job(fromHex(record.jobId, 32));
    if (job === undefined) return 0n;
    // Before its first heartbeat it has been paid nothing: its first second counts.
    const least = record.lastBeatMs === null ? MIN_BILLED_MS : 0;
    const since = Math.min(heartbeatMs, Math.max(least, finishedMs - (record.lastBeatMs ?? started)));
    const part = (job.rate * BigInt(since)) / BigInt(heartbeatMs);
    return part < job.locked ? part : job.locked;
  }

  /** The payer's signature over `cost`, checked; the settlement then goes out. */
  async settle(record: HostJobRecord, cost: bigint, payerSig: Uint8Array): Promise<void> {
    const { chain, self } = this.#side.o;
    if (cost > BigInt(record.bid))
      throw new JobError('cost-exceeds-bid', `cost ${formatCredits(cost)} credits is above the bid of ${formatCredits(BigInt(record.bid))} credits`);
    const message = settlementBytes(chain.params.network, fromHex(record.jobId, 32), self, cost);
    if (!(await verify(fromHex(record.payer, 32), message, payerSig))) {
      throw new JobError('bad-signature', 'payer_sig does not verify over the v2 settlement of this job, this host and this cost');
    }
    if (!hostEnded(record)) throw new JobError('wrong-state', `the job is ${statusOf(record.state)}; it settles once its container has ended`);
    if (record.cost !== null) throw new JobError('wrong-state', 'the job is settled already');
    await this.#side.step(record.jobId, { kind: 'settle-signed', cost, payerSig });
  }

  /** The signature that came with the payer's answer to a report: a refusal is only logged. */
  async settleAnswered(jobId: string, cost: bigint, payerSig: Uint8Array): Promise<void> {
    const record = this.#side.record(jobId);
    if (record === undefined) return;
    try {
      await this.settle(record, cost, payerSig);
    } catch (error) {
      this.#side.o.log(`jobs: settling ${shortId(jobId)}: ${(error as Error).message}`);
    }
  }

  /** Submits the JobSettle with the payer's signature, unless it is paid, pooled, or its bid is closed. */
  async submit(jobId: string): Promise<void> {
    const { chain, mempool, own, log } = this.#side.o;
    const record = this.#side.record(jobId);
    if (record === undefined || record.payerSig === null || record.askedCost === null || record.cost !== null) return;
    if (record.settleTx !== null && mempool.has(fromHex(record.settleTx, 32))) return;
    if (chain.state.job(fromHex(jobId, 32)) === undefined) return;
    try {
      const tx = await own.submit({
        kind: 'JobSettle',
        job_id: fromHex(jobId, 32),
        payer: fromHex(record.payer, 32),
        cost: BigInt(record.askedCost),
        payer_sig: fromHex(record.payerSig, 64),
      });
      await this.#side.step(jobId, { kind: 'settle-sent', txId: toHex(tx.id) });
    } catch (error) {
      if (error instanceof MeshError) {
        log(`jobs: JobSettle for ${shortId(jobId)} refused: ${error.message}`);
        return;
      }
      throw error;
    }
  }
}
