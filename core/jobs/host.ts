/**
 * The host's side of the compute market (docs/jobs.md "On the host"): it answers offers with every
 * reason a job does not fit, runs the jobs it takes in the executor's sandbox, kills them at their
 * duration, bills heartbeat-billed cells every interval and stops them as soon as the cell cannot
 * cover the next heartbeat, reports each job's state to its payer until the payer has answered, and
 * submits the JobSettle the payer co-signs.
 *
 * Every step is written to the job book before it is acted on, and containers carry labels, so a
 * host restarted after kill -9 picks up where it was: running containers go on being watched and
 * billed, exited ones are settled, containers it has no job for are removed. Nothing is billed
 * twice: heartbeat epochs strictly increase on the chain, a job settles once, and the book records
 * what was sent.
 */
import type { Chain } from '../chain/chain.ts';
import type { Mempool } from '../chain/mempool.ts';
import { verify } from '../crypto/ed25519.ts';
import { decode, encode } from '../encoding/codec.ts';
import { clip } from '../encoding/text.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { freeBalance } from '../ledger/state.ts';
import { decodeTx, settlementBytes, type Tx } from '../ledger/tx.ts';
import type { Network, RpcRequest } from '../net/network.ts';
import type { OwnTransactions } from '../chain/own-transactions.ts';
import { sleep, type Clock, type Timer } from '../time/clock.ts';
import { newRecord, type JobBook, type JobRecord } from './book.ts';
import { closeIfSpent } from './chain-facts.ts';
import { JobError } from './errors.ts';
import { ExecutorError, JOB_LABELS, type ContainerState, type Executor } from './executor.ts';
import { LogBuffer } from './log-buffer.ts';
import { refusalsOf, type HostPolicy, type InUse } from './policy.ts';
import { bidMismatch, billingName, decodeSpec, specHash, specProblem, termsProblems, type JobSpec } from './spec.ts';
import { OUTPUT_TAIL_LINES, outputTail, type LogEvent } from './types.ts';
import {
  JOB_RPC,
  logsAnswerCodec,
  logsRequestCodec,
  offerAnswerCodec,
  offerCodec,
  reportAnswerCodec,
  reportCodec,
  stopAnswerCodec,
  stopRequestCodec,
  MAX_LOG_LINES_PER_ANSWER,
  MAX_LOGS_ANSWER_BYTES,
  MAX_CONTAINER_ID_BYTES,
  MAX_LOG_LINE_BYTES,
  MAX_REASON_BYTES,
  type ReportState,
} from './wire.ts';

/** How long a reservation (asked before a heartbeat-billed bid names this host) holds capacity. */
export const RESERVATION_MS = 60_000;
/** Seconds a stopped container gets between SIGTERM and SIGKILL. */
export const STOP_GRACE_SECS = 5;
/** First and longest wait between reports the payer has not answered. */
const REPORT_RETRY_MS = [1_000, 30_000] as const;
/** Share of the offered cores and memory that reservations may hold (the rest is for bids). */
const RESERVABLE_SHARE = 0.5;
/** Wait before asking the engine again about a container whose wait failed. */
const WAIT_RETRY_MS = 5_000;
/** Ended jobs whose whole kept output stays in memory. */
const FINISHED_LOGS_KEPT = 16;
/** How long an ended job's last output may take to arrive. */
const LOG_DRAIN_MS = 2_000;
/** How long a report waits for the payer's answer. */
const REPORT_TIMEOUT_MS = 10_000;

export interface JobHostOptions {
  /** null: this node has no container runtime (it refuses every offer with that reason). */
  readonly executor: Executor | null;
  readonly policy: HostPolicy;
  readonly book: JobBook;
  readonly chain: Chain;
  readonly mempool: Mempool;
  readonly own: OwnTransactions;
  readonly network: Network;
  readonly self: Uint8Array;
  readonly clock: Clock;
  /** Time between heartbeats (HEARTBEAT_INTERVAL_SECS; shorter only on a devnet). */
  readonly heartbeatMs: number;
  readonly log: (line: string) => void;
}

interface Reservation {
  readonly payer: string;
  readonly hash: string;
  readonly cpuCores: number;
  readonly memMb: number;
  readonly until: number;
  /** Directed placement: the bid the caller was authorised for; only an offer of it gets this room. */
  readonly directedBid?: bigint;
  /** Directed placement: asked again when the bid comes; why the caller no longer may, or null. */
  readonly recheck?: () => Promise<string | null>;
}

/** What the host keeps in memory for a job it runs. */
interface Running {
  readonly logs: LogBuffer;
  readonly timers: Timer[];
  readonly abort: AbortController;
  /** Ends when the engine's log stream does (the container exited) or is aborted. */
  reader: Promise<void>;
}

type StopCause = 'duration' | 'payer' | 'operator' | 'dry' | 'elsewhere' | 'expired' | 'killed';

const STOP_REASONS: Record<StopCause, (spec: JobSpec) => string> = {
  duration: (spec) => `killed at its duration of ${spec.duration_secs} s`,
  payer: () => 'stopped by the payer',
  operator: () => 'stopped on the host',
  dry: () => 'the cell cannot cover the next heartbeat',
  elsewhere: () => 'the payer placed the job with another host',
  expired: () => 'the payer expired the bid',
  killed: () => 'killed by directed placement (/mesh-kill)',
};

export class JobHost {
  readonly #o: JobHostOptions;
  readonly #selfHex: string;
  readonly #reservations = new Map<string, Reservation>();
  // Room held for directed placement: one per authorised deploy, so a caller may have several.
  #directed: Reservation[] = [];
  readonly #running = new Map<string, Running>();
  readonly #reporting = new Set<string>();
  // Offers being answered, by job id: a second offer of the same job gets the first one's answer,
  // and their capacity counts before the record is written.
  readonly #taking = new Map<string, { readonly cpuCores: number; readonly memMb: number; readonly answer: Promise<Uint8Array> }>();
  // Jobs whose end is being recorded (an exit can be seen twice: wait and a restart's inspect).
  readonly #ending = new Set<string>();
  // Output of the jobs that ended last, for followers arriving late (older ones keep their tail only).
  readonly #finished = new Map<string, LogBuffer>();
  #engine: { ready: boolean; gpus: number } = { ready: false, gpus: 0 };
  #stopped = false;

  constructor(options: JobHostOptions) {
    this.#o = options;
    this.#selfHex = toHex(options.self);
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
    return this.#o.book.all().filter((r) => r.role === 'host' && r.status === 'running').length;
  }

  /** Serves the host's protocols, reads the engine, and takes up the jobs of the book again. */
  async start(): Promise<void> {
    const { network } = this.#o;
    network.serve(JOB_RPC.offer, (request) => this.#onOffer(request));
    network.serve(JOB_RPC.logs, (request) => this.#onLogs(request), { maxResponseBytes: MAX_LOGS_ANSWER_BYTES });
    network.serve(JOB_RPC.stop, (request) => this.#onStop(request));
    await this.checkEngine();
    await this.#resume();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const running of this.#running.values()) {
      for (const t of running.timers) t.cancel();
      running.abort.abort();
    }
    // Containers go on running: a restarted host takes them up again.
    this.#running.clear();
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
  find(ref: string): JobRecord | undefined {
    const direct = this.#o.book.get(ref);
    if (direct?.role === 'host') return direct;
    return this.#o.book.all().find(
      (r) => r.role === 'host' && r.containerId !== null && (r.containerId === ref || (ref.length >= 12 && r.containerId.startsWith(ref)) || containerName(r.jobId) === ref),
    );
  }

  /** DELETE /jobs/:id on the host: stops the container. */
  async stopJob(record: JobRecord): Promise<void> {
    await this.#stopContainer(record, 'operator');
  }

  /** /mesh-kill, once core/placement/ has authorised it: stops the container. */
  async killJob(record: JobRecord): Promise<void> {
    await this.#stopContainer(record, 'killed');
  }

  /**
   * Directed placement (core/placement/host.ts): room held for a caller that placement has
   * authorised, until its bid comes in the offer. Authority stands in for the image allow-list;
   * capacity, the engine and the terms are checked as for any job. Every reason it does not fit, or none.
   */
  reserveDirected(payer: string, specBytes: Uint8Array, spec: JobSpec, bid: bigint, recheck: () => Promise<string | null>): string[] {
    this.#dropStaleReservations();
    const reasons = [
      ...refusalsOf(spec, this.#o.policy, this.#inUse(), this.#engine, { authorised: true }),
      ...termsProblems(spec, bid, this.#o.chain.params.blockIntervalMs),
    ];
    if (reasons.length > 0) return reasons;
    const hash = toHex(specHash(this.#o.chain.params.network, specBytes));
    this.#directed.push({ payer, hash, cpuCores: spec.cpu_cores, memMb: spec.mem_mb, until: this.#o.clock.now() + RESERVATION_MS, directedBid: bid, recheck });
    return [];
  }

  logs(record: JobRecord): LogBuffer | undefined {
    return this.#running.get(record.jobId)?.logs ?? this.#finished.get(record.jobId);
  }

  /** The manual settlement path (POST /jobs/:id/settle): the payer's signature given by hand. */
  async settle(record: JobRecord, cost: bigint, payerSig: Uint8Array): Promise<void> {
    if (cost > BigInt(record.bid)) throw new JobError('cost-exceeds-bid', `cost ${cost} is above the bid of ${record.bid}`);
    const message = settlementBytes(this.#o.chain.params.network, fromHex(record.jobId, 32), this.#o.self, cost);
    if (!(await verify(fromHex(record.payer, 32), message, payerSig))) {
      throw new JobError('bad-signature', 'payer_sig does not verify over the v2 settlement of this job, this host and this cost');
    }
    if (record.finishedMs === null) throw new JobError('wrong-state', `the job is ${record.status}; it settles once its container has ended`);
    if (record.cost !== null) throw new JobError('wrong-state', 'the job is settled already');
    await this.#settle(record, cost, payerSig);
  }

  // ---- offers ----

  async #onOffer({ peer, data }: RpcRequest): Promise<Uint8Array> {
    const refuse = (...reasons: string[]): Uint8Array => encode(offerAnswerCodec, { answer: 'Refused', reasons: reasons.slice(0, 16).map((r) => clip(r, MAX_REASON_BYTES)) });
    const taken = (): Uint8Array => encode(offerAnswerCodec, { answer: 'Taken' });
    const offer = decode(offerCodec, data);
    let spec: JobSpec;
    try {
      spec = decodeSpec(offer.spec);
    } catch (error) {
      return refuse(`the spec does not decode: ${(error as Error).message}`);
    }
    const problem = specProblem(spec);
    if (problem !== null) return refuse(problem);
    const payer = toHex(peer);
    const hash = toHex(specHash(this.#o.chain.params.network, offer.spec));
    this.#dropStaleReservations();
    if (offer.bid_tx === null) return this.#reserve(payer, hash, spec, refuse, taken);
    let tx: Tx;
    try {
      tx = decodeTx(offer.bid_tx);
    } catch (error) {
      return refuse(`the bid does not decode: ${(error as Error).message}`);
    }
    if (tx.body.kind !== 'JobBid') return refuse('the offer carries no JobBid');
    const bid = tx.body;
    if (toHex(bid.sender) !== payer) return refuse('the bid is not signed by the peer offering it');
    if (toHex(bid.spec_hash) !== hash) return refuse('the spec does not match the bid\'s spec_hash');
    const mismatch = bidMismatch(spec, bid);
    if (mismatch !== null) return refuse(mismatch);
    if (bid.host !== null && toHex(bid.host) !== this.#selfHex) return refuse('the bid names another host');
    const jobId = toHex(tx.id);
    const known = this.#o.book.get(jobId);
    if (known !== undefined) {
      if (known.role !== 'host') return refuse('this node is the job\'s payer');
      // Asked again (its answer was lost): the same answer, as long as the job is still here.
      if (known.status === 'pending' || known.status === 'running') return taken();
      return refuse(`the job has ended here: ${known.status}`);
    }
    const inFlight = this.#taking.get(jobId);
    if (inFlight !== undefined) return inFlight.answer;
    // Room held for this very spec and bid by directed placement, else the payer's market reservation.
    const at = this.#directed.findIndex((r) => r.payer === payer && r.hash === hash && r.directedBid === bid.bid);
    const directed = at < 0 ? undefined : this.#directed.splice(at, 1)[0];
    const held = directed === undefined ? this.#reservations.get(payer) : undefined;
    const reserved = held?.hash === hash ? held : undefined;
    if (reserved !== undefined) this.#reservations.delete(payer);
    const reasons = [
      ...refusalsOf(spec, this.#o.policy, this.#inUse(), this.#engine, { authorised: directed !== undefined }),
      ...termsProblems(spec, bid.bid, this.#o.chain.params.blockIntervalMs),
    ];
    if (reasons.length > 0) {
      if (directed !== undefined) this.#directed.push(directed);
      if (reserved !== undefined) this.#reservations.set(payer, reserved);
      return refuse(...reasons);
    }
    // From here the job's capacity is taken, before anything is awaited.
    const answer = (async (): Promise<Uint8Array> => {
      const revoked = (await directed?.recheck?.()) ?? null;
      if (revoked !== null) return refuse(revoked);
      const bidProblem = await this.#bidProblem(tx);
      if (bidProblem !== null) return refuse(bidProblem);
      const record = this.#newRecord(jobId, payer, spec, offer.spec, offer.bid_tx!, bid.bid);
      await this.#o.book.save(record);
      void this.#start(record, spec);
      return taken();
    })();
    this.#taking.set(jobId, { cpuCores: spec.cpu_cores, memMb: spec.mem_mb, answer });
    try {
      return await answer;
    } finally {
      this.#taking.delete(jobId);
    }
  }

  /** A heartbeat-billed job asks for room before its bid names this host: held RESERVATION_MS. */
  #reserve(payer: string, hash: string, spec: JobSpec, refuse: (...reasons: string[]) => Uint8Array, taken: () => Uint8Array): Uint8Array {
    if (billingName(spec.billing) !== 'heartbeat') return refuse('only a heartbeat-billed job is reserved before its bid');
    // One reservation per payer (a new one replaces the last), from a payer with credits, and
    // reservations together hold at most half of what this host offers: free identities cannot
    // keep the host's room from paying bids.
    this.#reservations.delete(payer);
    const reasons = refusalsOf(spec, this.#o.policy, this.#inUse(), this.#engine);
    if (freeBalance(this.#o.chain.state.account(fromHex(payer, 32)), this.#o.chain.tip.height) === 0n) reasons.push('the payer has no free credits');
    let cores = spec.cpu_cores;
    let mem = spec.mem_mb;
    for (const r of this.#reservations.values()) {
      cores += r.cpuCores;
      mem += r.memMb;
    }
    const { cpuCores, memMb } = this.#o.policy;
    if (cores > cpuCores * RESERVABLE_SHARE || mem > memMb * RESERVABLE_SHARE) reasons.push('reservations hold as much of this host as they may; try again later');
    if (reasons.length > 0) return refuse(...reasons);
    this.#reservations.set(payer, { payer, hash, cpuCores: spec.cpu_cores, memMb: spec.mem_mb, until: this.#o.clock.now() + RESERVATION_MS });
    return taken();
  }

  #newRecord(jobId: string, payer: string, spec: JobSpec, specBytes: Uint8Array, bidTx: Uint8Array, bid: bigint): JobRecord {
    return newRecord({
      jobId,
      role: 'host',
      payer,
      host: this.#selfHex,
      billing: billingName(spec.billing),
      spec: toHex(specBytes),
      bidTx: toHex(bidTx),
      bid: bid.toString(),
      createdAt: Math.floor(this.#o.clock.now() / 1000),
      placeBy: 0,
    });
  }

  /** Why the bid cannot pay this host, or null: it must be on the chain or valid in the pool. */
  async #bidProblem(tx: Tx): Promise<string | null> {
    const { chain, mempool } = this.#o;
    if (chain.state.job(tx.id) !== undefined || mempool.has(tx.id)) return null;
    if ((await chain.txHeight(tx.id)) !== undefined) return 'the bid is closed (settled or expired)';
    try {
      await mempool.add(tx);
      return null;
    } catch (error) {
      if (!(error instanceof MeshError)) throw error;
      // Gossip may have pooled it while its signature was checked here.
      if (mempool.has(tx.id) || chain.state.job(tx.id) !== undefined) return null;
      return `the bid does not apply here: ${error.message}`;
    }
  }

  #inUse(): InUse {
    let cpuCores = 0;
    let memMb = 0;
    for (const r of this.#o.book.all()) {
      if (r.role !== 'host' || (r.status !== 'pending' && r.status !== 'running')) continue;
      const spec = decodeSpec(fromHex(r.spec));
      cpuCores += spec.cpu_cores;
      memMb += spec.mem_mb;
    }
    for (const r of [...this.#reservations.values(), ...this.#directed, ...this.#taking.values()]) {
      cpuCores += r.cpuCores;
      memMb += r.memMb;
    }
    return { cpuCores, memMb };
  }

  #dropStaleReservations(): void {
    const now = this.#o.clock.now();
    for (const [key, r] of this.#reservations) if (r.until <= now) this.#reservations.delete(key);
    this.#directed = this.#directed.filter((r) => r.until > now);
  }

  // ---- running ----

  async #start(record: JobRecord, spec: JobSpec): Promise<void> {
    const executor = this.#o.executor!;
    if (this.#stopped) return;
    let id: string;
    try {
      id = await executor.run({
        name: containerName(record.jobId),
        image: spec.image,
        cmd: spec.cmd,
        env: spec.env.map(({ key, value }) => [key, value] as const),
        cpuCores: spec.cpu_cores,
        memMb: spec.mem_mb,
        gpus: spec.gpus,
        labels: this.#labels(record.jobId),
      });
    } catch (error) {
      const reason = error instanceof ExecutorError ? error.message : `the container did not start: ${(error as Error).message}`;
      record.status = `failed: ${reason}`;
      record.reason = reason;
      await this.#o.book.save(record);
      this.#o.log(`jobs: ${record.jobId.slice(0, 16)}… did not start: ${reason}`);
      this.#report(record);
      return;
    }
    record.containerId = clip(id, MAX_CONTAINER_ID_BYTES);
    record.status = 'running';
    record.startedMs = this.#o.clock.now();
    await this.#o.book.save(record);
    // The host stopped meanwhile: a restart takes the container up.
    if (this.#stopped) return;
    this.#o.log(`jobs: ${record.jobId.slice(0, 16)}… running in ${id.slice(0, 12)} for ${record.payer.slice(0, 16)}…`);
    this.#watch(record, spec);
    this.#report(record);
    if (record.stopCause !== null) await this.#stopContainer(record, record.stopCause as StopCause);
  }

  /** Timers for its duration and heartbeats, its output, and its exit. */
  #watch(record: JobRecord, spec: JobSpec): void {
    if (this.#stopped) return;
    const { clock, executor } = this.#o;
    const id = record.containerId!;
    const running: Running = { logs: new LogBuffer(), timers: [], abort: new AbortController(), reader: Promise.resolve() };
    this.#running.set(record.jobId, running);
    const deadline = record.startedMs! + spec.duration_secs * 1000;
    running.timers.push(clock.setTimeout(() => void this.#stopContainer(record, 'duration'), Math.max(0, deadline - clock.now())));
    if (record.billing === 'heartbeat') {
      const every = this.#o.heartbeatMs;
      const first = Math.max(0, (record.lastBeatMs ?? record.startedMs!) + every - clock.now());
      running.timers.push(
        clock.setTimeout(() => {
          void this.#beat(record);
          running.timers.push(clock.setInterval(() => void this.#beat(record), every));
        }, first),
      );
    }
    running.reader = (async () => {
      try {
        for await (const line of executor!.logs(id, { follow: true, signal: running.abort.signal })) running.logs.push(line.stream, line.text, line.atMs);
      } catch (error) {
        if (!running.abort.signal.aborted) this.#o.log(`jobs: logs of ${id.slice(0, 12)}: ${(error as Error).message}`);
      }
    })();
    void this.#awaitExit(record, spec, running);
  }

  /** Waits for the container's exit; a failed wait (the engine restarted) asks the engine again until it answers. */
  async #awaitExit(record: JobRecord, spec: JobSpec, running: Running): Promise<void> {
    const executor = this.#o.executor!;
    const id = record.containerId!;
    while (!running.abort.signal.aborted) {
      try {
        const state = await executor.wait(id, { signal: running.abort.signal });
        await this.#ended(record, spec, state);
        return;
      } catch (error) {
        if (running.abort.signal.aborted) return;
        this.#o.log(`jobs: waiting for ${id.slice(0, 12)}: ${String(error)}`);
        const state = await executor.inspect(id).catch(() => undefined);
        if (state === null || (state !== undefined && !state.running)) {
          await this.#ended(record, spec, state ?? lostContainer(id, this.#o.clock.now()));
          return;
        }
        await sleep(this.#o.clock, WAIT_RETRY_MS);
      }
    }
  }

  async #stopContainer(record: JobRecord, cause: StopCause): Promise<void> {
    if (record.status !== 'running' && record.status !== 'pending') return;
    if (record.stopCause === null) {
      record.stopCause = cause;
      await this.#o.book.save(record);
    }
    // Asked before its container runs: #start stops it as soon as it does.
    if (record.status !== 'running' || record.containerId === null) return;
    await this.#o.executor!.stop(record.containerId, { graceSecs: cause === 'duration' || cause === 'dry' ? 0 : STOP_GRACE_SECS }).catch((error: unknown) => {
      this.#o.log(`jobs: stopping ${record.containerId!.slice(0, 12)}: ${String(error)}`);
    });
  }

  /** The container has exited: what it cost, why it ended, its output; then the report and settlement. */
  async #ended(record: JobRecord, spec: JobSpec, state: ContainerState): Promise<void> {
    if (record.finishedMs !== null || this.#ending.has(record.jobId)) return;
    this.#ending.add(record.jobId);
    try {
      await this.#recordEnd(record, spec, state);
    } finally {
      this.#ending.delete(record.jobId);
    }
  }

  async #recordEnd(record: JobRecord, spec: JobSpec, state: ContainerState): Promise<void> {
    const running = this.#running.get(record.jobId);
    if (running !== undefined) {
      for (const t of running.timers) t.cancel();
      // The engine's log stream ends with the container: its last lines are read before the buffer closes.
      await Promise.race([running.reader, sleep(this.#o.clock, LOG_DRAIN_MS)]);
      running.abort.abort();
      running.logs.end();
      this.#running.delete(record.jobId);
      this.#finished.set(record.jobId, running.logs);
      for (const old of this.#finished.keys()) {
        if (this.#finished.size <= FINISHED_LOGS_KEPT) break;
        this.#finished.delete(old);
      }
      record.outputTail = outputTail(running.logs.tail(OUTPUT_TAIL_LINES));
    }
    const now = this.#o.clock.now();
    record.finishedMs = state.finishedAtMs ?? now;
    record.exitCode = state.exitCode;
    const cause = record.stopCause as StopCause | null;
    record.reason =
      cause !== null
        ? STOP_REASONS[cause](spec)
        : state.oomKilled
          ? `memory limit of ${spec.mem_mb} MiB hit (exit ${state.exitCode ?? 137})`
          : null;
    record.askedCost = this.#costOf(record, spec).toString();
    record.status = record.reason !== null ? `failed: ${record.reason}` : 'awaiting_settlement';
    closeIfSpent(record, this.#o.chain.state);
    await this.#o.book.save(record);
    this.#o.log(`jobs: ${record.jobId.slice(0, 16)}… ended: exit ${record.exitCode ?? '?'}${record.reason === null ? '' : `, ${record.reason}`}`);
    await this.#o.executor!.remove(record.containerId!).catch((error: unknown) => this.#o.log(`jobs: removing ${record.containerId!.slice(0, 12)}: ${String(error)}`));
    this.#report(record);
  }

  /**
   * What the host asks for an ended job: for settle billing, the bid in proportion to the time it
   * ran (all of it at its duration); for heartbeat billing, the part of the interval since the
   * last heartbeat, within what the lock still holds.
   */
  #costOf(record: JobRecord, spec: JobSpec): bigint {
    const bid = BigInt(record.bid);
    const ran = Math.max(0, record.finishedMs! - record.startedMs!);
    if (record.billing === 'settle') {
      const full = spec.duration_secs * 1000;
      return (bid * BigInt(Math.min(ran, full))) / BigInt(full);
    }
    const job = this.#o.chain.state.job(fromHex(record.jobId, 32));
    if (job === undefined) return 0n;
    const since = Math.min(this.#o.heartbeatMs, Math.max(0, record.finishedMs! - (record.lastBeatMs ?? record.startedMs!)));
    const part = (job.rate * BigInt(since)) / BigInt(this.#o.heartbeatMs);
    return part < job.locked ? part : job.locked;
  }

  // ---- heartbeats ----

  async #beat(record: JobRecord): Promise<void> {
    if (record.status !== 'running' || record.stopCause !== null || this.#stopped) return;
    const { chain, mempool, own, self } = this.#o;
    const jobId = fromHex(record.jobId, 32);
    const job = chain.state.job(jobId);
    if (job === undefined) {
      // Not on the chain yet (the bid waits in the pool), or closed: only the second ends the job.
      if (mempool.has(jobId)) return;
      await this.#stopContainer(record, 'dry');
      return;
    }
    const pooled = mempool.queueOf(self).filter((tx) => tx.body.kind === 'Heartbeat');
    const mine = pooled.filter((tx) => tx.body.kind === 'Heartbeat' && toHex(tx.body.job_id) === record.jobId).length;
    const left = job.locked - job.rate * BigInt(mine);
    const cell = chain.state.account(job.payer).balance - job.rate * BigInt(mine);
    if (left < job.rate || cell < job.rate) {
      await this.#stopContainer(record, 'dry');
      return;
    }
    const lastEpoch = Math.max(
      chain.state.epoch(job.payer, self) ?? 0,
      ...pooled.map((tx) => (tx.body.kind === 'Heartbeat' && toHex(tx.body.cell) === record.payer ? tx.body.epoch : 0)),
    );
    // Written before it is sent: a crash in between loses one interval's pay, never bills one twice.
    const before = record.lastBeatMs;
    record.lastBeatMs = this.#o.clock.now();
    await this.#o.book.save(record);
    try {
      await own.submit({ kind: 'Heartbeat', job_id: jobId, cell: job.payer, epoch: lastEpoch + 1 });
    } catch (error) {
      record.lastBeatMs = before;
      // Too soon after the bid's block, or after the last beat: the next interval bills it.
      if (error instanceof MeshError) {
        this.#o.log(`jobs: heartbeat for ${record.jobId.slice(0, 16)}… not sent: ${error.message}`);
        return;
      }
      throw error;
    }
    // As soon as the cell cannot cover the next one, the container stops.
    if (left - job.rate < job.rate || cell - job.rate < job.rate) await this.#stopContainer(record, 'dry');
  }

  // ---- reports and settlement ----

  /** The job's state as the payer is told it. */
  #stateOf(record: JobRecord): ReportState | null {
    if (record.finishedMs !== null) {
      return {
        state: 'Ended',
        container_id: record.containerId ?? '',
        started_ms: record.startedMs ?? record.finishedMs,
        finished_ms: record.finishedMs,
        exit_code: record.exitCode,
        reason: record.reason === null ? null : clip(record.reason, MAX_REASON_BYTES),
        cost: BigInt(record.askedCost ?? '0'),
      };
    }
    if (record.status === 'running') return { state: 'Running', container_id: record.containerId!, started_ms: record.startedMs! };
    if (record.status.startsWith('failed')) return { state: 'NotStarted', reason: clip(record.reason ?? record.status, MAX_REASON_BYTES) };
    return null;
  }

  /** Tells the payer the job's state, again and again until it answers; acts on the answer. */
  #report(record: JobRecord): void {
    if (this.#reporting.has(record.jobId)) return;
    this.#reporting.add(record.jobId);
    void (async () => {
      let wait: number = REPORT_RETRY_MS[0];
      try {
        while (!this.#stopped) {
          const state = this.#stateOf(record);
          if (state === null) return;
          const tag = state.state;
          if (record.reportedState === tag) return;
          try {
            const answer = decode(
              reportAnswerCodec,
              await this.#o.network.request(fromHex(record.payer, 32), JOB_RPC.report, encode(reportCodec, { job_id: fromHex(record.jobId, 32), state }), {
                timeoutMs: REPORT_TIMEOUT_MS,
              }),
            );
            record.reportedState = tag;
            await this.#o.book.save(record);
            await this.#onAnswer(record, answer.placed_here, answer.payer_sig);
            wait = REPORT_RETRY_MS[0];
          } catch (error) {
            if (!(error instanceof MeshError)) throw error;
            await sleep(this.#o.clock, wait);
            wait = Math.min(wait * 2, REPORT_RETRY_MS[1]);
          }
        }
      } catch (error) {
        this.#o.log(`jobs: reporting ${record.jobId.slice(0, 16)}…: ${String(error)}`);
      } finally {
        this.#reporting.delete(record.jobId);
      }
    })();
  }

  async #onAnswer(record: JobRecord, placedHere: boolean, payerSig: Uint8Array | null): Promise<void> {
    if (!placedHere) {
      if (record.status === 'running') await this.#stopContainer(record, 'elsewhere');
      return;
    }
    if (payerSig !== null && record.askedCost !== null && record.cost === null && record.settleTx === null) {
      try {
        await this.settle(record, BigInt(record.askedCost), payerSig);
      } catch (error) {
        this.#o.log(`jobs: settling ${record.jobId.slice(0, 16)}…: ${(error as Error).message}`);
      }
    }
  }

  /** Submits the JobSettle with the payer's signature, once. */
  async #settle(record: JobRecord, cost: bigint, payerSig: Uint8Array): Promise<void> {
    record.askedCost = cost.toString();
    record.payerSig = toHex(payerSig);
    await this.#o.book.save(record);
    await this.#submitSettle(record);
  }

  async #submitSettle(record: JobRecord): Promise<void> {
    if (record.payerSig === null || record.askedCost === null || record.cost !== null) return;
    if (record.settleTx !== null && this.#o.mempool.has(fromHex(record.settleTx, 32))) return;
    if (this.#o.chain.state.job(fromHex(record.jobId, 32)) === undefined) return;
    try {
      const tx = await this.#o.own.submit({
        kind: 'JobSettle',
        job_id: fromHex(record.jobId, 32),
        payer: fromHex(record.payer, 32),
        cost: BigInt(record.askedCost),
        payer_sig: fromHex(record.payerSig, 64),
      });
      record.settleTx = toHex(tx.id);
      await this.#o.book.save(record);
    } catch (error) {
      if (error instanceof MeshError) {
        this.#o.log(`jobs: JobSettle for ${record.jobId.slice(0, 16)}… refused: ${error.message}`);
        return;
      }
      throw error;
    }
  }

  // ---- the chain ----

  /** After a block (core/jobs/chain-facts.ts folded it in): the host's reactions. */
  onBlock(expired: readonly JobRecord[]): void {
    for (const record of expired) {
      if (record.role !== 'host') continue;
      // Its host can no longer be paid: the container stops (its status then says why).
      if (record.status === 'running' || record.status === 'pending') void this.#stopContainer(record, 'expired');
      else if (!record.status.startsWith('failed') && record.status !== 'settled') {
        record.status = 'expired';
        void this.#o.book.save(record);
      }
    }
    // Settlements that fell out of the pool are sent again.
    for (const record of this.#o.book.all()) if (record.role === 'host' && record.payerSig !== null && record.cost === null) void this.#submitSettle(record);
  }

  // ---- restart ----

  async #resume(): Promise<void> {
    const { book, executor } = this.#o;
    const records = book.all().filter((r) => r.role === 'host');
    let containers: ContainerState[] = [];
    if (executor !== null && this.#engine.ready) {
      containers = await executor.list(this.#labels(null)).catch((error: unknown) => {
        this.#o.log(`jobs: cannot list containers: ${String(error)}`);
        return [];
      });
    }
    const byJob = new Map(containers.map((c) => [c.labels[JOB_LABELS.job] ?? '', c]));
    for (const record of records) {
      const spec = decodeSpec(fromHex(record.spec));
      const container = byJob.get(record.jobId);
      byJob.delete(record.jobId);
      if (record.finishedMs !== null) {
        if (container !== undefined) await executor!.remove(container.id).catch(() => {});
        this.#report(record);
        void this.#submitSettle(record);
        continue;
      }
      if (record.status !== 'pending' && record.status !== 'running') {
        // A launch failure the payer may not have heard of yet.
        this.#report(record);
        continue;
      }
      if (container !== undefined && !container.running && container.startedAtMs === null) {
        // Created, never started (the host stopped in between): nothing ran; it starts afresh.
        await executor!.remove(container.id).catch(() => {});
        record.status = 'pending';
        record.containerId = null;
        await book.save(record);
        void this.#start(record, spec);
      } else if (container !== undefined) {
        record.containerId = container.id;
        if (record.status === 'pending') {
          record.status = 'running';
          record.startedMs = container.startedAtMs ?? this.#o.clock.now();
        }
        await book.save(record);
        if (container.running) {
          this.#watch(record, spec);
          this.#report(record);
          // A stop asked for before the host went down is carried out now.
          if (record.stopCause !== null) void this.#stopContainer(record, record.stopCause as StopCause);
        } else {
          await this.#ended(record, spec, container);
        }
      } else if (record.status === 'pending') {
        void this.#start(record, spec);
      } else {
        // Its container is gone (removed by hand, or the engine lost it): it ends here, and asks nothing.
        record.finishedMs = this.#o.clock.now();
        record.reason = 'the container was lost while the host was down';
        record.status = `failed: ${record.reason}`;
        record.askedCost = '0';
        await book.save(record);
        this.#report(record);
      }
    }
    // Containers of this host with no job in the book: orphans.
    for (const orphan of byJob.values()) {
      this.#o.log(`jobs: removing orphan container ${orphan.id.slice(0, 12)}`);
      await executor!.remove(orphan.id).catch(() => {});
    }
  }

  #labels(jobId: string | null): Record<string, string> {
    return {
      ...(jobId === null ? {} : { [JOB_LABELS.job]: jobId }),
      [JOB_LABELS.node]: this.#selfHex,
      [JOB_LABELS.network]: this.#o.chain.params.network,
    };
  }

  // ---- the payer's requests ----

  async #onLogs({ peer, data }: RpcRequest): Promise<Uint8Array> {
    const request = decode(logsRequestCodec, data);
    const record = this.#o.book.get(toHex(request.job_id));
    if (record === undefined || record.role !== 'host' || record.payer !== toHex(peer)) {
      return encode(logsAnswerCodec, { known: false, lines: [], ended: true });
    }
    const buffer = this.logs(record);
    const tail = Math.min(request.tail, MAX_LOG_LINES_PER_ANSWER);
    let lines: LogEvent[];
    if (tail > 0) lines = buffer !== undefined ? outputTail(buffer.tail(tail)) : record.outputTail.slice(-tail);
    else lines = buffer !== undefined ? buffer.after(request.after, MAX_LOG_LINES_PER_ANSWER) : record.outputTail.filter((l) => l.seq > request.after);
    const ended = record.finishedMs !== null || record.status.startsWith('failed');
    return encode(logsAnswerCodec, {
      known: true,
      lines: lines.map((l) => ({ seq: l.seq, stream: l.stream === 'stderr' ? 2 : 1, text: clip(l.text, MAX_LOG_LINE_BYTES), at: l.at })),
      // More lines may follow in the buffer: ended only once the last was given.
      ended: ended && (tail > 0 || lines.length < MAX_LOG_LINES_PER_ANSWER),
    });
  }

  async #onStop({ peer, data }: RpcRequest): Promise<Uint8Array> {
    const request = decode(stopRequestCodec, data);
    const record = this.#o.book.get(toHex(request.job_id));
    if (record === undefined || record.role !== 'host' || record.payer !== toHex(peer)) return encode(stopAnswerCodec, { stopped: false });
    await this.#stopContainer(record, 'payer');
    return encode(stopAnswerCodec, { stopped: true });
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
