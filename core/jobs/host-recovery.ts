/**
 * The host's recovery after a restart, even after kill -9 (docs/jobs.md "Restarts"): each job of
 * the book is matched with its container by label. Running containers go on being watched and
 * billed, exited ones are recorded and settled, a container created but never started starts
 * afresh, a job whose container is gone ends, and containers it has no job for are removed.
 */
import { type ContainerState, JOB_LABELS } from './executor.ts';
import type { HostReporting } from './host-reporting.ts';
import type { HostSettlement } from './host-settlement.ts';
import type { HostSide } from './host-side.ts';
import type { HostSupervision } from './host-supervision.ts';
import { isLive } from './record.ts';

export interface RecoveryParts {
  readonly side: HostSide;
  readonly engineReady: boolean;
  readonly supervision: HostSupervision;
  readonly reporting: HostReporting;
  readonly settlement: HostSettlement;
}

/** Takes up the jobs of the book again. */
export async function recoverJobs({ side, engineReady, supervision, reporting, settlement }: RecoveryParts): Promise<void> {
  const { book, executor, clock, log } = side.o;
  let containers: ContainerState[] = [];
  if (executor !== null && engineReady) {
    containers = await executor.list(side.labels(null)).catch((error: unknown) => {
      log(`jobs: cannot list containers: ${String(error)}`);
      return [];
    });
  }
  const byJob = new Map(containers.map((c) => [c.labels[JOB_LABELS.job] ?? '', c]));
  for (const { jobId, role } of book.all()) {
    const record = side.record(jobId);
    if (role !== 'host' || record === undefined) continue;
    const container = byJob.get(jobId);
    byJob.delete(jobId);
    if (record.finishedMs !== null) {
      if (container !== undefined) await executor!.remove(container.id).catch(() => {});
      reporting.report(jobId);
      void settlement.submit(jobId);
    } else if (!isLive(record.state)) {
      // A launch failure the payer may not have heard of yet.
      reporting.report(jobId);
    } else if (container !== undefined && !container.running && container.startedAtMs === null) {
      await executor!.remove(container.id).catch(() => {});
      await side.step(jobId, { kind: 'restarted' });
    } else if (container !== undefined) {
      await side.step(jobId, { kind: 'adopted', containerId: container.id, startedMs: container.startedAtMs ?? clock.now(), running: container.running });
      if (!container.running) await supervision.ended(jobId, container);
    } else if (record.state.kind === 'pending') {
      void supervision.start(jobId);
    } else {
      await side.step(jobId, { kind: 'lost', atMs: clock.now() });
    }
  }
  // Containers of this host with no job in the book: orphans.
  for (const orphan of byJob.values()) {
    log(`jobs: removing orphan container ${orphan.id.slice(0, 12)}`);
    await executor!.remove(orphan.id).catch(() => {});
  }
}
