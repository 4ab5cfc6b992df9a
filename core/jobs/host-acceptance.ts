/**
 * The host's acceptance (docs/jobs.md "Accepted before it runs"): once the bid is in a block, the
 * host puts a JobAccept on the chain and starts the job. From the acceptance's block only this host
 * may settle the job and the payer cannot expire the bid for 1,440 blocks; until then the payer may
 * take an unaccepted bid back UNACCEPTED_EXPIRY_BLOCKS after the bid, so a host whose acceptance is
 * not in a block ACCEPT_MARGIN_BLOCKS before that stops the job rather than work on for nothing.
 */
import { fromHex, toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { UNACCEPTED_EXPIRY_BLOCKS } from '../ledger/params.ts';
import { stopReason } from './host-machine.ts';
import { type HostSide, shortId } from './host-side.ts';
import type { StopCause } from './record.ts';

/** How long a host waits for the bid to reach a block before it gives the job up. */
export const ACCEPT_WAIT_MS = 2 * 60_000;
/**
 * Blocks before the payer could take an unaccepted bid back at which a host still unaccepted stops
 * the job: its acceptance normally reaches the next block, so only a censored one gets this far.
 */
export const ACCEPT_MARGIN_BLOCKS = 3;
/** The height from which a host whose acceptance is not in a block must not run the job. */
const startBy = (bidHeight: number): number => bidHeight + UNACCEPTED_EXPIRY_BLOCKS - ACCEPT_MARGIN_BLOCKS;
/** Longest wait between looks at the chain when no block comes. */
const LOOK_MS = 1_000;

/**
 * Waits for the bid of `jobId` in a block and puts this host's acceptance of it in the pool: null
 * once sent while the payer's early release is still ACCEPT_MARGIN_BLOCKS away, or once in a
 * block; else why the job cannot be this host's (the reason the payer is told).
 */
export async function acceptJob(side: HostSide, jobId: string): Promise<string | null> {
  const { chain, clock } = side.o;
  const id = fromHex(jobId, 32);
  const until = clock.now() + ACCEPT_WAIT_MS;
  let sent: Uint8Array | null = null;
  while (!side.stopped) {
    const record = side.record(jobId);
    // Stopped before this host said yes: it never will.
    if (record === undefined || record.state.kind !== 'pending') return 'the job is no longer waiting to start here';
    if (record.stopCause !== null) return stopReason(record);
    const job = chain.state.job(id);
    if (job !== undefined) {
      if (job.accepted) return job.host !== null && toHex(job.host) === side.selfHex ? null : 'another host accepted the job first';
      // A refused one (the pool may hold this host's acceptance from before a restart) is tried again.
      if (sent === null || !side.o.mempool.has(sent)) sent = await submitAcceptance(side, jobId, sent);
      // Far from the payer's early release, the host starts now and its acceptance follows in a
      // block; nearer (a job placed late, after other hosts), it starts only once it is in one.
      if (sent !== null && chain.tip.height < startBy(job.bid_height)) return null;
    } else if ((await chain.txHeight(id)) !== undefined) {
      // The job's id is its bid's: mined, and no longer open.
      return 'the payer released the bid before this host accepted it';
    }
    if (clock.now() >= until) return `the bid and this host's acceptance were not in a block within ${ACCEPT_WAIT_MS / 1000} s`;
    await nextBlock(side);
  }
  return null;
}

/**
 * Watches a running job's acceptance until it is in a block: null then (or when `signal` ends the
 * watch), else the cause to stop the job for: another host's acceptance won, or this one's did not
 * reach a block ACCEPT_MARGIN_BLOCKS before the payer could take the bid back.
 */
export async function confirmAcceptance(side: HostSide, jobId: string, signal: AbortSignal): Promise<StopCause | null> {
  const { chain, mempool } = side.o;
  const id = fromHex(jobId, 32);
  let sent: Uint8Array | null = null;
  while (!side.stopped && !signal.aborted) {
    const job = chain.state.job(id);
    // Closed meanwhile: the chain's events stop the job (bid-expired, settled).
    if (job === undefined) return null;
    if (job.accepted) return job.host !== null && toHex(job.host) === side.selfHex ? null : 'elsewhere';
    if (chain.tip.height >= startBy(job.bid_height)) return 'unaccepted';
    // Sent again only if it fell out of the pool unmined.
    if (sent === null || !mempool.has(sent)) sent = await submitAcceptance(side, jobId, sent);
    await nextBlock(side);
  }
  return null;
}

/** Submits this host's JobAccept of `jobId`: its id, or `previous` when the pool refused it (logged). */
async function submitAcceptance(side: HostSide, jobId: string, previous: Uint8Array | null): Promise<Uint8Array | null> {
  try {
    return (await side.o.own.submit({ kind: 'JobAccept', job_id: fromHex(jobId, 32) })).id;
  } catch (error) {
    if (!(error instanceof MeshError)) throw error;
    side.o.log(`jobs: accepting ${shortId(jobId)}: ${error.message}`);
    return previous;
  }
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
