/**
 * Heartbeat billing of a running cell (docs/jobs.md "Heartbeat billing"): every interval the host
 * bills one interval's rate with the next epoch, and stops the container as soon as the cell or
 * the lock cannot cover the next heartbeat. Nothing is billed twice: epochs strictly increase on
 * the chain, and the beat is on record before it is sent.
 */
import { fromHex, toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { type HostSide, shortId } from './host-side.ts';

export class HostHeartbeats {
  readonly #side: HostSide;

  constructor(side: HostSide) {
    this.#side = side;
  }

  /** One interval is up: bill it, or stop the container when the cell cannot pay it. */
  async beat(jobId: string): Promise<void> {
    const side = this.#side;
    const record = side.record(jobId);
    if (record === undefined || record.state.kind !== 'running' || record.stopCause !== null || side.stopped) return;
    const { chain, mempool, self, clock } = side.o;
    const job = chain.state.job(fromHex(jobId, 32));
    if (job === undefined) {
      // Not on the chain yet (the bid waits in the pool), or closed: only the second ends the job.
      if (mempool.has(fromHex(jobId, 32))) return;
      await side.step(jobId, { kind: 'stop', cause: 'dry' });
      return;
    }
    const pooled = mempool.queueOf(self).filter((tx) => tx.body.kind === 'Heartbeat');
    const mine = pooled.filter((tx) => tx.body.kind === 'Heartbeat' && toHex(tx.body.job_id) === jobId).length;
    const left = job.locked - job.rate * BigInt(mine);
    const cell = chain.state.account(job.payer).balance - job.rate * BigInt(mine);
    if (left < job.rate || cell < job.rate) {
      await side.step(jobId, { kind: 'stop', cause: 'dry' });
      return;
    }
    const lastEpoch = Math.max(
      chain.state.epoch(job.payer, self) ?? 0,
      ...pooled.map((tx) => (tx.body.kind === 'Heartbeat' && toHex(tx.body.cell) === record.payer ? tx.body.epoch : 0)),
    );
    // As soon as the cell cannot cover the next one, the container stops.
    const last = left - job.rate < job.rate || cell - job.rate < job.rate;
    await side.step(jobId, { kind: 'beat', atMs: clock.now(), epoch: lastEpoch + 1, last });
  }

  /** Sends the heartbeat the record says went out. */
  async send(jobId: string, epoch: number, last: boolean, previousBeatMs: number | null): Promise<void> {
    const side = this.#side;
    const record = side.record(jobId);
    if (record === undefined) return;
    try {
      await side.o.own.submit({ kind: 'Heartbeat', job_id: fromHex(jobId, 32), cell: fromHex(record.payer, 32), epoch });
    } catch (error) {
      // Too soon after the bid's block, or after the last beat: the next interval bills it.
      if (error instanceof MeshError) {
        await side.step(jobId, { kind: 'beat-refused', lastBeatMs: previousBeatMs });
        side.o.log(`jobs: heartbeat for ${shortId(jobId)} not sent: ${error.message}`);
        return;
      }
      throw error;
    }
    if (last) await side.step(jobId, { kind: 'stop', cause: 'dry' });
  }
}
