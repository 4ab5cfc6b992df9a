/**
 * The host's supervision of the containers it runs (docs/jobs.md "On the host"): it starts a taken
 * job in the executor's sandbox, keeps its output, kills it at its duration, bills it every
 * interval when it is heartbeat-billed, and records its end once the engine says it exited.
 */
import { fromHex } from '../encoding/hex.ts';
import { clip } from '../encoding/text.ts';
import { sleep, type Timer } from '../time/clock.ts';
import { type ContainerState, ExecutorError } from './executor.ts';
import { acceptJob, confirmAcceptance } from './host-acceptance.ts';
import type { HostHeartbeats } from './host-heartbeats.ts';
import { stopReason } from './host-machine.ts';
import type { HostSettlement } from './host-settlement.ts';
import type { HostSide } from './host-side.ts';
import { LogBuffer } from './log-buffer.ts';
import { decodeSpec } from './spec.ts';
import { OUTPUT_TAIL_LINES, outputTail } from './types.ts';
import { MAX_CONTAINER_ID_BYTES } from './wire.ts';

/** Wait before asking the engine again about a container whose wait failed. */
const WAIT_RETRY_MS = 5_000;
/** Ended jobs whose whole kept output stays in memory. */
const FINISHED_LOGS_KEPT = 16;
/** How long an ended job's last output may take to arrive. */
const LOG_DRAIN_MS = 2_000;

/** What the host keeps in memory for a job it runs. */
interface Running {
  readonly logs: LogBuffer;
  readonly timers: Timer[];
  readonly abort: AbortController;
  /** Ends when the engine's log stream does (the container exited) or is aborted. */
  reader: Promise<void>;
}

export class HostSupervision {
  readonly #side: HostSide;
  readonly #heartbeats: HostHeartbeats;
  readonly #settlement: HostSettlement;
  readonly #running = new Map<string, Running>();
  // Jobs whose end is being recorded (an exit can be seen twice: wait and a restart's inspect).
  readonly #ending = new Set<string>();
  // Output of the jobs that ended last, for followers arriving late (older ones keep their tail only).
  readonly #finished = new Map<string, LogBuffer>();

  constructor(side: HostSide, heartbeats: HostHeartbeats, settlement: HostSettlement) {
    this.#side = side;
    this.#heartbeats = heartbeats;
    this.#settlement = settlement;
  }

  /** The output kept in memory of a job running or ended lately. */
  logs(jobId: string): LogBuffer | undefined {
    return this.#running.get(jobId)?.logs ?? this.#finished.get(jobId);
  }

  /** Lets go of the containers: they go on running, and a restarted host takes them up again. */
  stop(): void {
    for (const running of this.#running.values()) {
      for (const t of running.timers) t.cancel();
      running.abort.abort();
    }
    this.#running.clear();
  }

  /**
   * Runs the job's container once its bid is in a block and this host's acceptance is sent
   * (docs/jobs.md "Accepted before it runs"); its machine hears whether it started.
   */
  async start(jobId: string): Promise<void> {
    const side = this.#side;
    if (side.stopped || side.record(jobId) === undefined) return;
    const refused = await acceptJob(side, jobId);
    const record = side.record(jobId);
    // A stopped host begins nothing: a restart takes the job up from its record.
    if (side.stopped || record === undefined || record.state.kind !== 'pending') return;
    if (refused !== null) {
      await side.step(jobId, { kind: 'start-failed', reason: refused });
      return;
    }
    // Stopped while its acceptance was on its way: nothing ran.
    if (record.stopCause !== null) {
      await side.step(jobId, { kind: 'start-failed', reason: stopReason(record) });
      return;
    }
    const spec = decodeSpec(fromHex(record.spec));
    let id: string;
    try {
      id = await side.o.executor!.run({
        name: containerName(jobId),
        image: spec.image,
        cmd: spec.cmd,
        env: spec.env.map(({ key, value }) => [key, value] as const),
        cpuCores: spec.cpu_cores,
        memMb: spec.mem_mb,
        gpus: spec.gpus,
        labels: side.labels(jobId),
      });
    } catch (error) {
      const reason = error instanceof ExecutorError ? error.message : `the container did not start: ${(error as Error).message}`;
      await side.step(jobId, { kind: 'start-failed', reason });
      return;
    }
    await side.step(jobId, { kind: 'started', containerId: clip(id, MAX_CONTAINER_ID_BYTES), atMs: side.o.clock.now() });
  }

  /** Timers for its duration and heartbeats, its output, and its exit. */
  watch(jobId: string): void {
    const side = this.#side;
    const record = side.record(jobId);
    if (side.stopped || record === undefined || record.containerId === null || record.startedMs === null) return;
    const { clock, executor, heartbeatMs } = side.o;
    const id = record.containerId;
    const running: Running = { logs: new LogBuffer(), timers: [], abort: new AbortController(), reader: Promise.resolve() };
    this.#running.set(jobId, running);
    const deadline = record.startedMs + decodeSpec(fromHex(record.spec)).duration_secs * 1000;
    running.timers.push(clock.setTimeout(() => void side.step(jobId, { kind: 'stop', cause: 'duration' }), Math.max(0, deadline - clock.now())));
    if (record.billing === 'heartbeat') {
      const first = Math.max(0, (record.lastBeatMs ?? record.startedMs) + heartbeatMs - clock.now());
      running.timers.push(
        clock.setTimeout(() => {
          void this.#heartbeats.beat(jobId);
          running.timers.push(clock.setInterval(() => void this.#heartbeats.beat(jobId), heartbeatMs));
        }, first),
      );
    }
    running.reader = (async () => {
      try {
        for await (const line of executor!.logs(id, { follow: true, signal: running.abort.signal })) running.logs.push(line.stream, line.text, line.atMs);
      } catch (error) {
        if (!running.abort.signal.aborted) side.o.log(`jobs: logs of ${id.slice(0, 12)}: ${(error as Error).message}`);
      }
    })();
    void this.#awaitExit(jobId, id, running);
    void this.#confirm(jobId, running);
  }

  /** Stops the job when its acceptance loses to another host's, or does not reach a block in time. */
  async #confirm(jobId: string, running: Running): Promise<void> {
    const cause = await confirmAcceptance(this.#side, jobId, running.abort.signal);
    if (cause !== null && !running.abort.signal.aborted) await this.#side.step(jobId, { kind: 'stop', cause });
  }

  /** Waits for the container's exit; a failed wait (the engine restarted) asks the engine again until it answers. */
  async #awaitExit(jobId: string, id: string, running: Running): Promise<void> {
    const { executor, clock, log } = this.#side.o;
    while (!running.abort.signal.aborted) {
      try {
        const state = await executor!.wait(id, { signal: running.abort.signal });
        await this.ended(jobId, state);
        return;
      } catch (error) {
        if (running.abort.signal.aborted) return;
        log(`jobs: waiting for ${id.slice(0, 12)}: ${String(error)}`);
        const state = await executor!.inspect(id).catch(() => undefined);
        if (state === null || (state !== undefined && !state.running)) {
          await this.ended(jobId, state ?? lostContainer(id, clock.now()));
          return;
        }
        await sleep(clock, WAIT_RETRY_MS);
      }
    }
  }

  /** The container has exited: its output, what it cost and why it ended go on record; then the report and settlement. */
  async ended(jobId: string, state: ContainerState): Promise<void> {
    if (this.#side.record(jobId)?.finishedMs !== null || this.#ending.has(jobId)) return;
    this.#ending.add(jobId);
    try {
      await this.#recordEnd(jobId, state);
    } finally {
      this.#ending.delete(jobId);
    }
  }

  async #recordEnd(jobId: string, state: ContainerState): Promise<void> {
    const side = this.#side;
    const running = this.#running.get(jobId);
    let tail = null;
    if (running !== undefined) {
      for (const t of running.timers) t.cancel();
      // The engine's log stream ends with the container: its last lines are read before the buffer closes.
      await Promise.race([running.reader, sleep(side.o.clock, LOG_DRAIN_MS)]);
      running.abort.abort();
      running.logs.end();
      this.#running.delete(jobId);
      this.#finished.set(jobId, running.logs);
      for (const old of this.#finished.keys()) {
        if (this.#finished.size <= FINISHED_LOGS_KEPT) break;
        this.#finished.delete(old);
      }
      tail = outputTail(running.logs.tail(OUTPUT_TAIL_LINES));
    }
    const record = side.record(jobId);
    if (record === undefined) return;
    const finishedMs = state.finishedAtMs ?? side.o.clock.now();
    await side.step(jobId, {
      kind: 'exited',
      finishedMs,
      exitCode: state.exitCode,
      oomKilled: state.oomKilled,
      outputTail: tail,
      askedCost: this.#settlement.costOf(record, finishedMs),
      lockOpen: side.o.chain.state.job(fromHex(jobId, 32)) !== undefined,
    });
  }
}

/** A container the engine no longer knows: ended, nothing known of how. */
function lostContainer(id: string, nowMs: number): ContainerState {
  return { id, name: '', labels: {}, status: 'missing', running: false, exitCode: null, oomKilled: false, startedAtMs: null, finishedAtMs: nowMs };
}

/** The container name of a job: unique per job on the engine. */
export function containerName(jobId: string): string {
  return `mesh-job-${jobId.slice(0, 16)}`;
}
