/**
 * The host's acceptance (docs/jobs.md "Accepted before it runs"): before it runs a job, the host
 * puts a JobAccept on the chain and waits for its block. From then only this host may settle the job
 * and the payer cannot expire the bid for 1,440 blocks; until then the payer may take an unaccepted
 * bid back after 10 blocks, so a host that ran sooner could work for nothing.
 */
import { fromHex, toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { stopReason } from './host-machine.ts';
import { type HostSide, shortId } from './host-side.ts';

/** How long a host waits for its acceptance (and the bid) to reach a block before it gives the job up. */
export const ACCEPT_WAIT_MS = 2 * 60_000;
/** Longest wait between looks at the chain when no block comes. */
const LOOK_MS = 1_000;

/**
 * Puts this host's acceptance of `jobId` on the chain and waits for it: null once it is in a block,
 * else why the job cannot be this host's (the reason the payer is told).
 */
export async function acceptJob(side: HostSide, jobId: string): Promise<string | null> {
  const { chain, mempool, own, clock, log } = side.o;
  const id = fromHex(jobId, 32);
  const until = clock.now() + ACCEPT_WAIT_MS;
  let sent: Uint8Array | null = null;
  let seen = false;
  while (!side.stopped) {
    const record = side.record(jobId);
    // Stopped before this host said yes on the chain: it never will.
    if (record === undefined || record.state.kind !== 'pending') return 'the job is no longer waiting to start here';
    if (record.stopCause !== null && sent === null) return stopReason(record);
    const job = chain.state.job(id);
    if (job !== undefined) {
      seen = true;
      if (job.accepted) return job.host !== null && toHex(job.host) === side.selfHex ? null : 'another host accepted the job first';
      // Sent once, and again only if it fell out of the pool unmined.
      if (sent === null || !mempool.has(sent)) {
        try {
          sent = (await own.submit({ kind: 'JobAccept', job_id: id })).id;
        } catch (error) {
          if (!(error instanceof MeshError)) throw error;
          log(`jobs: accepting ${shortId(jobId)}: ${error.message}`);
        }
      }
    } else if (seen || (await chain.txHeight(id)) !== undefined) {
      // The job's id is its bid's: mined, and no longer open.
      return 'the payer released the bid before this host accepted it';
    }
    if (clock.now() >= until) return `this host's acceptance did not reach a block within ${ACCEPT_WAIT_MS / 1000} s`;
    await nextBlock(side);
  }
  return null;
}

/** Resolves at the next block, or after LOOK_MS without one. */
function nextBlock(side: HostSide): Promise<void> {
  const { chain, clock } = side.o;
  return new Promise((resolve) => {
    const done = (): void => {
      unsubscribe();
      timer.cancel();
      resolve();
    };
    const unsubscribe = chain.subscribe((event) => {
      if (event.type === 'connected') done();
    });
    const timer = clock.setTimeout(done, LOOK_MS);
  });
}
