/**
 * The compute market of one node: its payer side and its host side over one job book, as the
 * /jobs routes ask for it (JobsService). A node is the payer of the jobs it bids for and the host of
 * the jobs it takes; the ledger never lets it be both for one job.
 */

import type { Chain } from '../chain/chain.ts';
import type { Mempool } from '../chain/mempool.ts';
import type { OwnTransactions } from '../chain/own-transactions.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { HEARTBEAT_INTERVAL_SECS } from '../ledger/params.ts';
import type { Network } from '../net/network.ts';
import type { AtlasEntry } from '../signal/types.ts';
import { type KeyValueStore, MemoryStore } from '../store/kv.ts';
import type { Clock } from '../time/clock.ts';
import type { Unsubscribe } from '../web/sse.ts';
import { JobBook } from './book.ts';
import { foldBlock } from './chain-facts.ts';
import { JobError } from './errors.ts';
import type { Executor } from './executor.ts';
import { JobHost } from './host.ts';
import { DEFAULT_QUEUE_MS, JobPayer } from './payer.ts';
import type { HostPolicy } from './policy.ts';
import { isLive, type JobRecord, statusOf } from './record.ts';
import type { JobsService } from './service.ts';
import { decodeSpec } from './spec.ts';
import type { JobRequest, JobSummary, JobView, LogEvent } from './types.ts';

/** How a node takes part in the market: what it hosts, where it keeps its jobs. */
export interface JobsConfig {
  /** The job book's store (a LevelDB of its own on the Node host). Default: memory. */
  readonly store?: KeyValueStore;
  /** null or absent: this node runs no jobs (it may still bid). */
  readonly executor?: Executor | null;
  /** Default: no image allowed (hosts nothing). */
  readonly policy?: HostPolicy;
  /** How long a job waits for a host (default 10 minutes). */
  readonly queueMs?: number;
  /** Time between heartbeats (default 30 s; shorter only on a devnet). */
  readonly heartbeatMs?: number;
  /** How often a following log reader asks the host for new lines (default 1 s). */
  readonly logPollMs?: number;
}

/** The node parts the market works with. */
export interface MarketParts {
  readonly chain: Chain;
  readonly mempool: Mempool;
  readonly own: OwnTransactions;
  readonly network: Network;
  readonly key: SigningKey;
  readonly clock: Clock;
  readonly atlas: () => AtlasEntry[];
  readonly log: (line: string) => void;
}

export class JobMarket implements JobsService {
  /** The job book, and the two sides directed placement (core/placement/) places jobs through. */
  readonly book: JobBook;
  readonly host: JobHost;
  readonly payer: JobPayer;
  readonly #clock: Clock;
  readonly #logPollMs: number;
  readonly #chain: Chain;
  #unsubscribe: (() => void) | null = null;

  private constructor(book: JobBook, host: JobHost, payer: JobPayer, chain: Chain, clock: Clock, logPollMs: number) {
    this.book = book;
    this.#chain = chain;
    this.host = host;
    this.payer = payer;
    this.#clock = clock;
    this.#logPollMs = logPollMs;
  }

  /** Opens the job book; `start` then serves the protocols and takes up the jobs it holds. */
  static async open(parts: MarketParts, config: JobsConfig = {}): Promise<JobMarket> {
    const book = await JobBook.open(config.store ?? new MemoryStore());
    const common = { book, chain: parts.chain, own: parts.own, network: parts.network, clock: parts.clock, log: parts.log };
    const host = new JobHost({
      ...common,
      executor: config.executor ?? null,
      policy: config.policy ?? { allowImages: [], cpuCores: 0, memMb: 0 },
      mempool: parts.mempool,
      self: parts.key.publicKey,
      heartbeatMs: config.heartbeatMs ?? HEARTBEAT_INTERVAL_SECS * 1000,
    });
    const payer = new JobPayer({ ...common, mempool: parts.mempool, key: parts.key, atlas: parts.atlas, queueMs: config.queueMs ?? DEFAULT_QUEUE_MS });
    return new JobMarket(book, host, payer, parts.chain, parts.clock, config.logPollMs ?? 1_000);
  }

  async start(): Promise<void> {
    this.#unsubscribe = this.#chain.subscribe((event) => {
      if (event.type !== 'connected') return;
      const expired = foldBlock(this.book, event, this.#chain.state);
      this.host.onBlock(expired);
      this.payer.onBlock(expired);
    });
    this.payer.start();
    await this.host.start();
  }

  async stop(): Promise<void> {
    this.#unsubscribe?.();
    this.payer.stop();
    await this.host.stop();
  }

  /**
   * The engine's answer at the last check, as the atlas' `docker` and `gpu` tags show it: only a node
   * that takes offers (an image allowed) advertises it. Directed placement uses the engine either way.
   */
  get engine(): { ready: boolean; gpus: number } {
    return this.host.takesOffers ? this.host.engine : { ready: false, gpus: 0 };
  }

  /** Asks the engine again (before each capacity broadcast). */
  checkEngine(): Promise<void> {
    return this.host.checkEngine();
  }

  get runningJobs(): number {
    return this.host.runningCount;
  }

  // ---- JobsService ----

  async bidJob(request: JobRequest): Promise<{ job_id: string }> {
    return { job_id: await this.payer.bid(request) };
  }

  listJobs(): JobSummary[] {
    return this.book.all().map(summaryOf);
  }

  getJob(jobId: Uint8Array): JobView | undefined {
    const record = this.book.get(toHex(jobId));
    return record === undefined ? undefined : viewOf(record);
  }

  async settleJob(jobId: Uint8Array, cost: bigint, payerSig: Uint8Array): Promise<void> {
    const record = this.book.get(toHex(jobId));
    if (record === undefined) throw new JobError('unknown-job', `no job ${toHex(jobId)} on this node`);
    if (record.role !== 'host') throw new JobError('wrong-role', "this node is the job's payer: settle on its host");
    await this.host.settle(record, cost, payerSig);
  }

  async stopJob(ref: string): Promise<boolean> {
    const hosted = this.host.find(ref);
    if (hosted !== undefined) {
      await this.host.stopJob(hosted);
      return true;
    }
    const paid =
      this.book.get(ref) ??
      this.book
        .all()
        .find((r) => r.role === 'payer' && r.containerId !== null && (r.containerId === ref || (ref.length >= 12 && r.containerId.startsWith(ref))));
    if (paid === undefined || paid.role !== 'payer') return false;
    await this.payer.stopJob(paid);
    return true;
  }

  async expireJob(jobId: Uint8Array): Promise<{ tx_id: string }> {
    const record = this.book.get(toHex(jobId));
    if (record === undefined) throw new JobError('unknown-job', `no job ${toHex(jobId)} on this node`);
    if (record.role !== 'payer') throw new JobError('wrong-role', 'only the payer expires its bid');
    return { tx_id: await this.payer.expire(record) };
  }

  async jobLogs(jobId: Uint8Array, after: number): Promise<{ lines: LogEvent[]; ended: boolean } | undefined> {
    const record = this.book.get(toHex(jobId));
    if (record === undefined) return undefined;
    if (record.role === 'payer') return this.payer.logs(record, after);
    const buffer = this.host.logs(record);
    if (buffer !== undefined) return { lines: buffer.after(after), ended: buffer.ended };
    return { lines: record.outputTail.filter((l) => l.seq > after), ended: !isLive(record.state) };
  }

  followJobLogs(jobId: Uint8Array, after: number, listener: (line: LogEvent) => void, end: () => void): Unsubscribe | undefined {
    const record = this.book.get(toHex(jobId));
    if (record === undefined) return undefined;
    if (record.role === 'host') {
      const buffer = this.host.logs(record);
      if (buffer !== undefined) return buffer.follow(after, listener, end);
    }
    // The payer (or a host whose buffer is gone) reads in rounds: every line once, in order.
    let stopped = false;
    let position = after;
    void (async () => {
      while (!stopped) {
        // A failed read (the host is briefly unreachable) is tried again next round.
        const page = await this.jobLogs(jobId, position).catch(() => null);
        if (stopped) return;
        if (page === undefined) break;
        for (const line of page?.lines ?? []) {
          position = Math.max(position, line.seq);
          listener(line);
        }
        if (page?.ended && page.lines.length === 0) break;
        if (page === null || page.lines.length === 0) await new Promise<void>((resolve) => this.#clock.setTimeout(resolve, this.#logPollMs));
      }
      if (!stopped) end();
    })();
    return () => {
      stopped = true;
    };
  }
}

function summaryOf(record: JobRecord): JobSummary {
  return {
    job_id: record.jobId,
    status: statusOf(record.state),
    payer: record.payer,
    host: record.host,
    role: record.role,
    container_id: record.containerId,
    cost: record.cost,
    bid: record.bid,
  };
}

function viewOf(record: JobRecord): JobView {
  const spec = decodeSpec(fromHex(record.spec));
  const seconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1000));
  return {
    ...summaryOf(record),
    billing: record.billing,
    image: spec.image,
    cmd: spec.cmd,
    cpu_cores: spec.cpu_cores,
    mem_mb: spec.mem_mb,
    duration_secs: spec.duration_secs,
    gpus: spec.gpus,
    created_at: record.createdAt,
    started_at: seconds(record.startedMs),
    finished_at: seconds(record.finishedMs),
    exit_code: record.exitCode,
    refusals: [...record.refusals],
    heartbeats: record.billing === 'heartbeat' ? { ...record.heartbeats } : null,
    output_tail: [...record.outputTail],
  };
}

export interface JobsComponents {
  readonly key: SigningKey;
  readonly chain: Chain;
  readonly mempool: Mempool;
  readonly own: OwnTransactions;
  readonly network: Network;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  /** Where the payer finds hosts to offer a job to. */
  readonly signals: { atlas(): AtlasEntry[] };
}

/** The job market: bids, offers, hosting, heartbeats and settlement. */
export function jobsService(config: JobsConfig = {}): (components: JobsComponents) => Promise<JobMarket> {
  return (c) =>
    JobMarket.open(
      { chain: c.chain, mempool: c.mempool, own: c.own, network: c.network, key: c.key, clock: c.clock, atlas: () => c.signals.atlas(), log: c.log },
      config,
    );
}
