/**
 * The host's side of the compute market (docs/jobs.md "On the host"), put together from its parts:
 * admission and reservations (host-admission.ts), supervision of the containers
 * (host-supervision.ts), heartbeat billing (host-heartbeats.ts), reports to the payer with retry
 * (host-reporting.ts), settlement (host-settlement.ts) and recovery after a restart
 * (host-recovery.ts). Each job moves through one machine (host-machine.ts): `#step` writes the
 * record it gives to the job book before it performs the effects, so a host restarted after kill -9
 * picks up where it was, and nothing is billed twice.
 */
import { decode, encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { clip } from '../encoding/text.ts';
import type { RpcRequest } from '../net/network.ts';
import { JOB_LABELS } from './executor.ts';
import { HostAdmission } from './host-admission.ts';
import { HostHeartbeats } from './host-heartbeats.ts';
import { type HostEffect, type HostEvent, hostEnded, hostTransition } from './host-machine.ts';
import { recoverJobs } from './host-recovery.ts';
import { HostReporting } from './host-reporting.ts';
import { HostSettlement } from './host-settlement.ts';
import type { HostSide, JobHostOptions } from './host-side.ts';
import { containerName, HostSupervision } from './host-supervision.ts';
import type { LogBuffer } from './log-buffer.ts';
import type { HostJobRecord } from './record.ts';
import type { JobSpec } from './spec.ts';
import { type LogEvent, outputTail } from './types.ts';
import {
  JOB_RPC,
  logsAnswerCodec,
  logsRequestCodec,
  MAX_LOG_LINE_BYTES,
  MAX_LOG_LINES_PER_ANSWER,
  MAX_LOGS_ANSWER_BYTES,
  stopAnswerCodec,
  stopRequestCodec,
} from './wire.ts';

export class JobHost {
  readonly #o: JobHostOptions;
  readonly #side: HostSide;
  readonly #admission: HostAdmission;
  readonly #supervision: HostSupervision;
  readonly #heartbeats: HostHeartbeats;
  readonly #reporting: HostReporting;
  readonly #settlement: HostSettlement;
  #engine: { ready: boolean; gpus: number } = { ready: false, gpus: 0 };
  #stopped = false;

  constructor(options: JobHostOptions) {
    this.#o = options;
    const selfHex = toHex(options.self);
    const host = this;
    this.#side = {
      o: options,
      selfHex,
      get stopped() {
        return host.#stopped;
      },
      record: (jobId) => this.#record(jobId),
      step: (jobId, event) => this.#step(jobId, event),
      labels: (jobId) => ({
        ...(jobId === null ? {} : { [JOB_LABELS.job]: jobId }),
        [JOB_LABELS.node]: selfHex,
        [JOB_LABELS.network]: options.chain.params.network,
      }),
    };
    this.#settlement = new HostSettlement(this.#side);
    this.#heartbeats = new HostHeartbeats(this.#side);
    this.#reporting = new HostReporting(this.#side);
    this.#supervision = new HostSupervision(this.#side, this.#heartbeats, this.#settlement);
    this.#admission = new HostAdmission(
      this.#side,
      () => this.#engine,
      async (record) => {
        await this.#o.book.save(record);
        void this.#supervision.start(record.jobId);
      },
    );
  }

  /** Whether the engine answered at the last check (the atlas' `docker` tag), and its GPUs. */
  get engine(): { ready: boolean; gpus: number } {
    return this.#engine;
  }

  /** Whether this host takes offers from the market (an image is allowed); directed placement needs no allow-list. */
  get takesOffers(): boolean {
    return this.#o.policy.allowImages.length > 0;
  }

  /** Jobs whose containers run now (the atlas' running_jobs). */
  get runningCount(): number {
    return this.#o.book.all().filter((r) => r.role === 'host' && r.state.kind === 'running').length;
  }

  /** Serves the host's protocols, reads the engine, and takes up the jobs of the book again. */
  async start(): Promise<void> {
    const { network } = this.#o;
    // Offers and stops are small, and run through a relay; logs are bulk and wait for a direct connection.
    network.serve(JOB_RPC.offer, (request) => this.#admission.onOffer(request), { relayed: true });
    network.serve(JOB_RPC.logs, (request) => this.#onLogs(request), { maxResponseBytes: MAX_LOGS_ANSWER_BYTES });
    network.serve(JOB_RPC.stop, (request) => this.#onStop(request), { relayed: true });
    await this.checkEngine();
    await recoverJobs({
      side: this.#side,
      engineReady: this.#engine.ready,
      supervision: this.#supervision,
      reporting: this.#reporting,
      settlement: this.#settlement,
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    // Containers go on running: a restarted host takes them up.
    this.#supervision.stop();
    await this.#o.book.flushed();
  }

  /** Asks the engine what it offers; logs a warning when it has no sandboxed runtime. */
  async checkEngine(): Promise<void> {
    const executor = this.#o.executor;
    if (executor === null) {
      this.#engine = { ready: false, gpus: 0 };
      return;
    }
    try {
      const info = await executor.info();
      if (!this.#engine.ready) {
        this.#o.log(`jobs: ${info.engine}, runtime ${info.runtime}${info.sandboxed ? ' (sandboxed)' : ''}`);
        if (!info.sandboxed) this.#o.log(`jobs: warning: no sandboxed runtime (gVisor runsc) on the engine; jobs run under ${info.runtime}`);
      }
      this.#engine = { ready: true, gpus: info.gpus };
    } catch (error) {
      if (this.#engine.ready) this.#o.log(`jobs: the container engine does not answer: ${(error as Error).message}`);
      this.#engine = { ready: false, gpus: 0 };
    }
  }

  /** A host record by job id, container id (or a prefix of 12 or more), or container name. */
  find(ref: string): HostJobRecord | undefined {
    const direct = this.#record(ref);
    if (direct !== undefined) return direct;
    for (const r of this.#o.book.all()) {
      if (r.role !== 'host' || r.containerId === null) continue;
      if (r.containerId === ref || (ref.length >= 12 && r.containerId.startsWith(ref)) || containerName(r.jobId) === ref) return r;
    }
    return undefined;
  }

  /** DELETE /jobs/:id on the host: stops the container. */
  async stopJob(record: HostJobRecord): Promise<void> {
    await this.#step(record.jobId, { kind: 'stop', cause: 'operator' });
  }

  /** /mesh-kill, once core/placement/ has authorised it: stops the container. */
  async killJob(record: HostJobRecord): Promise<void> {
    await this.#step(record.jobId, { kind: 'stop', cause: 'killed' });
  }

  /** Directed placement (core/placement/host.ts): room held for an authorised caller; every reason it does not fit, or none. */
  reserveDirected(payer: string, specBytes: Uint8Array, spec: JobSpec, bid: bigint, recheck: () => Promise<string | null>): string[] {
    return this.#admission.reserveDirected(payer, specBytes, spec, bid, recheck);
  }

  logs(record: HostJobRecord): LogBuffer | undefined {
    return this.#supervision.logs(record.jobId);
  }

  /** The manual settlement path (POST /jobs/:id/settle): the payer's signature given by hand. */
  settle(record: HostJobRecord, cost: bigint, payerSig: Uint8Array): Promise<void> {
    return this.#settlement.settle(record, cost, payerSig);
  }

  /** After a block (core/jobs/chain-facts.ts folded it in): the host's reactions to expired bids. */
  onBlock(expired: readonly string[]): void {
    for (const jobId of expired) if (this.#record(jobId) !== undefined) void this.#step(jobId, { kind: 'bid-expired' });
    // Settlements that fell out of the pool are sent again.
    for (const r of this.#o.book.all()) if (r.role === 'host' && r.payerSig !== null && r.cost === null) void this.#settlement.submit(r.jobId);
  }

  // ---- the machine ----

  #record(jobId: string): HostJobRecord | undefined {
    const record = this.#o.book.get(jobId);
    return record?.role === 'host' ? record : undefined;
  }

  /** Feeds `event` to the job's machine; the record it gives is written before its effects are performed. */
  async #step(jobId: string, event: HostEvent): Promise<void> {
    const before = this.#record(jobId);
    if (before === undefined) return;
    const { record, effects } = hostTransition(before, event);
    if (record !== before) await this.#o.book.save(record);
    for (const effect of effects) await this.#perform(jobId, effect);
  }

  async #perform(jobId: string, effect: HostEffect): Promise<void> {
    const { executor, log } = this.#o;
    // A stopped host begins nothing: a restart takes the job up from its record.
    if (this.#stopped && effect.kind !== 'log') return;
    switch (effect.kind) {
      case 'log':
        return log(effect.line);
      case 'start':
        void this.#supervision.start(jobId);
        return;
      case 'watch':
        return this.#supervision.watch(jobId);
      case 'report':
        return this.#reporting.report(jobId);
      case 'kill':
        return executor!
          .stop(effect.containerId, { graceSecs: effect.graceSecs })
          .catch((error: unknown) => log(`jobs: stopping ${effect.containerId.slice(0, 12)}: ${String(error)}`));
      case 'remove':
        return executor!.remove(effect.containerId).catch((error: unknown) => log(`jobs: removing ${effect.containerId.slice(0, 12)}: ${String(error)}`));
      case 'stop':
        return this.#step(jobId, { kind: 'stop', cause: effect.cause });
      case 'heartbeat':
        return this.#heartbeats.send(jobId, effect.epoch, effect.last, effect.previousBeatMs);
      case 'settle':
        return this.#settlement.settleAnswered(jobId, effect.cost, effect.payerSig);
      case 'submit-settle':
        return this.#settlement.submit(jobId);
    }
  }

  // ---- the payer's requests ----

  async #onLogs({ peer, data }: RpcRequest): Promise<Uint8Array> {
    const request = decode(logsRequestCodec, data);
    const record = this.#record(toHex(request.job_id));
    if (record === undefined || record.payer !== toHex(peer)) return encode(logsAnswerCodec, { known: false, lines: [], ended: true });
    const buffer = this.logs(record);
    const tail = Math.min(request.tail, MAX_LOG_LINES_PER_ANSWER);
    let lines: LogEvent[];
    if (tail > 0) lines = buffer !== undefined ? outputTail(buffer.tail(tail)) : record.outputTail.slice(-tail);
    else lines = buffer !== undefined ? buffer.after(request.after, MAX_LOG_LINES_PER_ANSWER) : record.outputTail.filter((l) => l.seq > request.after);
    return encode(logsAnswerCodec, {
      known: true,
      lines: lines.map((l) => ({ seq: l.seq, stream: l.stream === 'stderr' ? 2 : 1, text: clip(l.text, MAX_LOG_LINE_BYTES), at: l.at })),
      // More lines may follow in the buffer: ended only once the last was given.
      ended: hostEnded(record) && (tail > 0 || lines.length < MAX_LOG_LINES_PER_ANSWER),
    });
  }

  async #onStop({ peer, data }: RpcRequest): Promise<Uint8Array> {
    const request = decode(stopRequestCodec, data);
    const record = this.#record(toHex(request.job_id));
    if (record === undefined || record.payer !== toHex(peer)) return encode(stopAnswerCodec, { stopped: false });
    await this.#step(record.jobId, { kind: 'stop', cause: 'payer' });
    return encode(stopAnswerCodec, { stopped: true });
  }
}
