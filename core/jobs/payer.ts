/**
 * The payer's side of the compute market (docs/jobs.md "On the payer"): it bids, finds the one host
 * that runs the job, follows what the host reports, co-signs the settlement when the host asks for
 * no more than the bid, and can stop or expire the job.
 *
 * One host per job: a settle-billed bid names no host, so the payer offers the job to one host at
 * a time and takes the first that says yes; it co-signs a settlement only for that host, and tells
 * any other host that reports the job (one that took an offer whose answer was lost) that the job
 * is placed elsewhere, so that host stops it. A heartbeat-billed bid must name its host (a heartbeat
 * debits the cell on the host's signature alone), so the payer reserves capacity on one host first
 * and signs the bid for it. Every decision goes through the job's machine (payer-machine.ts), and is
 * written to the job book before the next message goes out.
 */
import type { Chain } from '../chain/chain.ts';
import type { Mempool } from '../chain/mempool.ts';
import type { OwnTransactions } from '../chain/own-transactions.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { formatCredits } from '../encoding/amount.ts';
import { decode, encode } from '../encoding/codec.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { expiryHeight, LedgerRuleError } from '../ledger/apply.ts';
import { freeBalance } from '../ledger/state.ts';
import { settlementBytes, type Tx } from '../ledger/tx.ts';
import type { Network, RpcRequest } from '../net/network.ts';
import type { AtlasEntry } from '../signal/types.ts';
import { type Clock, sleep } from '../time/clock.ts';
import type { JobBook } from './book.ts';
import { JobError } from './errors.ts';
import { type PayerEffect, type PayerEvent, payerTransition, START_WAIT_MS } from './payer-machine.ts';
import { isFinal, newPayerRecord, type PayerJobRecord, statusOf } from './record.ts';
import { billingCode, decodeSpec, encodeSpec, type JobSpec, settleCost, specHash, specOf, termsProblems } from './spec.ts';
import { type JobRequest, type LogEvent, OUTPUT_TAIL_LINES, outputTail } from './types.ts';
import {
  JOB_RPC,
  logsAnswerCodec,
  logsRequestCodec,
  MAX_LOGS_ANSWER_BYTES,
  offerAnswerCodec,
  offerCodec,
  type Report,
  type ReportAnswer,
  reportAnswerCodec,
  reportCodec,
  stopAnswerCodec,
  stopRequestCodec,
} from './wire.ts';

/** Default time a job waits for a host before it fails (a node option). */
export const DEFAULT_QUEUE_MS = 10 * 60_000;
/** Time between rounds of offers while no host takes the job. */
export const PLACEMENT_ROUND_MS = 5_000;
/** Hosts asked in one round. */
const HOSTS_PER_ROUND = 32;
/** How long one offer waits for its answer; a host that does not answer is asked again once. */
const OFFER_TIMEOUT_MS = 15_000;
// An offer is small: it runs through a relay too (docs/network.md, "Relayed connections and hole punching").
const OFFER_OPTIONS = { timeoutMs: OFFER_TIMEOUT_MS, relayed: true } as const;
const LOGS_TIMEOUT_MS = 10_000;

export interface JobPayerOptions {
  readonly book: JobBook;
  readonly chain: Chain;
  readonly mempool: Mempool;
  readonly own: OwnTransactions;
  readonly network: Network;
  readonly key: SigningKey;
  readonly clock: Clock;
  /** The capacity map: who to offer jobs to. */
  readonly atlas: () => AtlasEntry[];
  readonly queueMs: number;
  readonly log: (line: string) => void;
}

export class JobPayer {
  readonly #o: JobPayerOptions;
  readonly #self: string;
  readonly #placing = new Set<string>();
  // The JobExpire pooled for each unaccepted bid being taken back, by job id.
  readonly #releasing = new Map<string, Uint8Array>();
  #releasingNow = false;
  #stopped = false;

  constructor(options: JobPayerOptions) {
    this.#o = options;
    this.#self = toHex(options.key.publicKey);
  }

  start(): void {
    this.#o.network.serve(JOB_RPC.report, (request) => this.#onReport(request), { relayed: true });
    // Jobs still waiting for a host when the node stopped go on being placed.
    for (const record of this.#o.book.all()) {
      if (record.role !== 'payer' || record.state.kind !== 'pending') continue;
      if (record.host === null) this.#place(record.jobId);
      else if (record.billing === 'heartbeat' && record.startedMs === null) void this.#offerReserved(record.jobId, record.host);
    }
  }

  stop(): void {
    this.#stopped = true;
  }

  /** POST /jobs/bid. */
  async bid(request: JobRequest): Promise<string> {
    const { spec, specBytes } = this.checkBid(request);
    const host = request.billing === 'heartbeat' ? await this.#reserve(specBytes, spec) : null;
    const record = await this.#submitBid(request, specBytes, host);
    if (host === null) this.#place(record.jobId);
    else void this.#offerReserved(record.jobId, host);
    return record.jobId;
  }

  /**
   * The spec of a bid whose terms hold and that the free balance covers, checked before anything
   * goes out. Throws JobError 'bad-terms', LedgerRuleError 'insufficient-free-balance'.
   */
  checkBid(request: JobRequest): { spec: JobSpec; specBytes: Uint8Array } {
    const { chain } = this.#o;
    const spec = specOf(request);
    const problems = termsProblems(spec, request.bid, chain.params.blockIntervalMs);
    if (problems.length > 0) throw new JobError('bad-terms', problems.join('; '));
    const free = freeBalance(chain.state.account(this.#o.key.publicKey), chain.tip.height);
    if (request.bid > free) {
      throw new LedgerRuleError(
        'insufficient-free-balance',
        `the bid of ${formatCredits(request.bid)} credits is above the free balance of ${formatCredits(free)} credits`,
      );
    }
    return { spec, specBytes: encodeSpec(spec) };
  }

  /**
   * Directed placement (core/placement/caller.ts): a heartbeat-billed bid for `host`, which holds
   * room for it, offered once. 'taken'; the host's refusal (the job fails); or 'no-answer', and the
   * job goes on being offered as any reserved job is.
   */
  async bidDirected(request: JobRequest, host: string): Promise<{ jobId: string; answer: 'taken' | 'no-answer' | readonly string[] }> {
    const { specBytes } = this.checkBid(request);
    const record = await this.#submitBid(request, specBytes, host);
    const offer = encode(offerCodec, { spec: specBytes, bid_tx: fromHex(record.bidTx!) });
    try {
      const answer = decode(offerAnswerCodec, await this.#o.network.request(fromHex(host, 32), JOB_RPC.offer, offer, OFFER_OPTIONS));
      if (answer.answer === 'Taken') return { jobId: record.jobId, answer: 'taken' };
      await this.#step(record.jobId, { kind: 'reserved-refused', host, reasons: answer.reasons, atMs: this.#o.clock.now() });
      return { jobId: record.jobId, answer: answer.reasons };
    } catch (error) {
      if (!(error instanceof MeshError)) throw error;
      void this.#offerReserved(record.jobId, host);
      return { jobId: record.jobId, answer: 'no-answer' };
    }
  }

  /** Signs and pools the JobBid, the job on record before the bid can lock anything. */
  async #submitBid(request: JobRequest, specBytes: Uint8Array, host: string | null): Promise<PayerJobRecord> {
    const { chain, own, book } = this.#o;
    let record: PayerJobRecord | undefined;
    const body = {
      kind: 'JobBid',
      spec_hash: specHash(chain.params.network, specBytes),
      bid: request.bid,
      duration_secs: request.durationSecs,
      cpu_cores: request.cpuCores,
      mem_mb: request.memMb,
      billing: billingCode(request.billing),
      host: host === null ? null : fromHex(host, 32),
    } as const;
    try {
      // A crash between the record and the pool leaves no locked bid unknown to the book.
      await own.submit(body, async (tx) => {
        record = this.#newRecord(tx, request, specBytes, host);
        await book.save(record);
      });
    } catch (error) {
      if (record !== undefined) await book.delete(record.jobId);
      throw error;
    }
    return record!;
  }

  #newRecord(tx: Tx, request: JobRequest, specBytes: Uint8Array, host: string | null): PayerJobRecord {
    const now = this.#o.clock.now();
    return newPayerRecord({
      jobId: toHex(tx.id),
      payer: this.#self,
      host,
      billing: request.billing,
      spec: toHex(specBytes),
      bidTx: toHex(tx.bytes),
      bid: request.bid.toString(),
      createdAt: Math.floor(now / 1000),
      placeBy: now + this.#o.queueMs,
      // A heartbeat-billed job was offered (reserved) before its bid.
      firstOfferMs: host === null ? null : now,
    });
  }

  /** DELETE /jobs/:id on the payer: stops placing it, or asks its host to stop it. */
  async stopJob(record: PayerJobRecord): Promise<void> {
    if (record.host === null) {
      await this.#step(record.jobId, { kind: 'cancel' });
      return;
    }
    if (record.finishedMs !== null || record.state.kind === 'failed') return;
    await this.#askStop(record.jobId, record.host);
  }

  /** jobs.stop to the job's host. */
  async #askStop(jobId: string, host: string): Promise<void> {
    const answer = await this.#o.network.request(fromHex(host, 32), JOB_RPC.stop, encode(stopRequestCodec, { job_id: fromHex(jobId, 32) }), {
      relayed: true,
    });
    if (!decode(stopAnswerCodec, answer).stopped) this.#o.log(`jobs: the host of ${jobId.slice(0, 16)}… does not know it`);
  }

  /**
   * The payer's JobExpire: 10 blocks after the bid while no host accepted it, else 1,440 blocks
   * after the acceptance (and the last heartbeat).
   */
  async expire(record: PayerJobRecord): Promise<string> {
    const { chain, own } = this.#o;
    const job = chain.state.job(fromHex(record.jobId, 32));
    if (job === undefined) throw new JobError('wrong-state', `the bid is not open on the chain (the job is ${statusOf(record.state)})`);
    // Its host would never be paid for the time it ran.
    if (record.state.kind === 'running') throw new JobError('wrong-state', 'the job runs on its host: stop it first (DELETE /jobs/:id), and it settles');
    const at = expiryHeight(job);
    if (chain.tip.height + 1 < at) {
      throw new JobError('not-expired', `the bid may be expired from height ${at}, ${at - chain.tip.height - 1} blocks from now`);
    }
    const tx = await own.submit({ kind: 'JobExpire', job_id: fromHex(record.jobId, 32) });
    return toHex(tx.id);
  }

  /** Output lines after `after`, from the host (or the tail kept with the job once the host is gone). */
  async logs(record: PayerJobRecord, after: number, tail = 0): Promise<{ lines: LogEvent[]; ended: boolean }> {
    const kept = { lines: record.outputTail.filter((l) => l.seq > after), ended: true };
    if (record.host === null) return { lines: [], ended: record.state.kind !== 'pending' };
    try {
      const answer = decode(
        logsAnswerCodec,
        await this.#o.network.request(fromHex(record.host, 32), JOB_RPC.logs, encode(logsRequestCodec, { job_id: fromHex(record.jobId, 32), after, tail }), {
          timeoutMs: LOGS_TIMEOUT_MS,
          maxResponseBytes: MAX_LOGS_ANSWER_BYTES,
        }),
      );
      if (!answer.known) return kept;
      return {
        lines: answer.lines.map((l) => ({ seq: l.seq, stream: l.stream === 2 ? 'stderr' : 'stdout', text: l.text, at: l.at })),
        ended: answer.ended,
      };
    } catch (error) {
      if (error instanceof MeshError && record.finishedMs !== null) return kept;
      throw error;
    }
  }

  // ---- the machine ----

  #record(jobId: string): PayerJobRecord | undefined {
    const record = this.#o.book.get(jobId);
    return record?.role === 'payer' ? record : undefined;
  }

  /**
   * Feeds `event` to the job's machine: the record it gives is written, then its effects are
   * performed. Those that answer a report are given back to the caller.
   */
  async #step(jobId: string, event: PayerEvent): Promise<PayerEffect[]> {
    const before = this.#record(jobId);
    if (before === undefined) return [];
    const { record, effects } = payerTransition(before, event);
    if (record !== before) await this.#o.book.save(record);
    const rest: PayerEffect[] = [];
    for (const effect of effects) {
      if (effect.kind === 'log') this.#o.log(effect.line);
      else if (effect.kind === 'place') this.#place(jobId);
      else if (effect.kind === 'start-wait') this.#awaitStart(jobId, effect.host);
      else if (effect.kind === 'stop-host') {
        const host = this.#record(jobId)?.host ?? null;
        const stop = (): void =>
          void this.#askStop(jobId, host!).catch((error: unknown) => this.#o.log(`jobs: stopping ${jobId.slice(0, 16)}…: ${String(error)}`));
        // After the answer that tells the host the job is its own.
        if (host !== null) this.#o.clock.setTimeout(stop, 0);
      } else rest.push(effect);
    }
    return rest;
  }

  // ---- placement ----

  /** Asks hosts with capacity, one at a time, until one takes the job or its time in the queue is up. */
  #place(jobId: string): void {
    if (this.#placing.has(jobId)) return;
    this.#placing.add(jobId);
    const waiting = (): PayerJobRecord | undefined => {
      const record = this.#record(jobId);
      return !this.#stopped && record?.state.kind === 'pending' && record.host === null ? record : undefined;
    };
    void (async () => {
      try {
        let record = waiting();
        if (record === undefined) return;
        const offer = encode(offerCodec, { spec: fromHex(record.spec), bid_tx: fromHex(record.bidTx!) });
        while (record !== undefined) {
          for (const host of this.#candidates(decodeSpecOf(record), record.passedOver)) {
            if (waiting() === undefined) return;
            if (await this.#offer(jobId, host, offer)) return;
          }
          record = waiting();
          if (record === undefined) return;
          if (this.#o.clock.now() >= record.placeBy) {
            const asked = record.refusals.length;
            const reason = `no host took the job within ${Math.round(this.#o.queueMs / 1000)} s (${asked === 0 ? 'no host to ask' : `${asked} host${asked === 1 ? '' : 's'} asked`})`;
            await this.#step(jobId, { kind: 'give-up', reason });
            return;
          }
          await sleep(this.#o.clock, PLACEMENT_ROUND_MS);
          record = waiting();
        }
      } catch (error) {
        this.#o.log(`jobs: placing ${jobId.slice(0, 16)}…: ${String(error)}`);
      } finally {
        this.#placing.delete(jobId);
      }
    })();
  }

  /** Hosts to ask, those whose advertised capacity fits first (every host is asked: its reasons are shown). */
  #candidates(spec: JobSpec, passedOver: readonly string[] = []): string[] {
    const others = this.#o.atlas().filter((e) => e.node_id !== this.#self && !passedOver.includes(e.node_id));
    const fits = (e: AtlasEntry): number => (e.tags.includes('docker') ? 2 : 0) + (e.cpu_cores >= spec.cpu_cores && e.mem_mb >= spec.mem_mb ? 1 : 0);
    return others
      .sort((a, b) => fits(b) - fits(a) || a.running_jobs - b.running_jobs)
      .slice(0, HOSTS_PER_ROUND)
      .map((e) => e.node_id);
  }

  /** One offer; true when the host took the job. A refusal's reasons are recorded. */
  async #offer(jobId: string, host: string, offer: Uint8Array): Promise<boolean> {
    const { clock } = this.#o;
    await this.#step(jobId, { kind: 'offered', host, atMs: clock.now() });
    for (let attempt = 0; attempt < 2; attempt++) {
      let answer;
      try {
        answer = decode(offerAnswerCodec, await this.#o.network.request(fromHex(host, 32), JOB_RPC.offer, offer, OFFER_OPTIONS));
      } catch (error) {
        if (!(error instanceof MeshError)) throw error;
        // No answer: the host may have taken it. It is asked once more; if it reports the job later
        // while no other host has it, it gets it.
        if (error.code === 'timeout') continue;
        await this.#step(jobId, { kind: 'refused', host, reasons: [`unreachable: ${error.message}`], atMs: clock.now(), answered: true });
        return false;
      }
      const record = this.#record(jobId);
      if (record === undefined) return false;
      if (record.host !== null) return record.host === host;
      // Cancelled while the offer was out, or the host reported it could not start it: the host is
      // not given the job (a report of it is answered "placed elsewhere" and it stops the container).
      if (record.state.kind !== 'pending' || !record.unanswered.includes(host)) return false;
      if (answer.answer === 'Taken') {
        await this.#step(jobId, { kind: 'taken', host });
        return true;
      }
      await this.#step(jobId, { kind: 'refused', host, reasons: answer.reasons, atMs: clock.now(), answered: true });
      return false;
    }
    // Still in `unanswered`: if it took the job after all, its report gets it while no other host has it.
    await this.#step(jobId, { kind: 'refused', host, reasons: ['no answer to the offer in time'], atMs: clock.now(), answered: false });
    return false;
  }

  /** A settle-billed job `host` took: if the host has not started it within START_WAIT_MS, it goes back in the queue. */
  #awaitStart(jobId: string, host: string): void {
    this.#o.clock.setTimeout(() => {
      if (!this.#stopped) void this.#step(jobId, { kind: 'start-overdue', host, atMs: this.#o.clock.now() });
    }, START_WAIT_MS);
  }

  /** Heartbeat billing: the first host that reserves capacity, or 503 with every host's reasons. */
  async #reserve(specBytes: Uint8Array, spec: JobSpec): Promise<string> {
    const offer = encode(offerCodec, { spec: specBytes, bid_tx: null });
    const reasons: string[] = [];
    for (const host of this.#candidates(spec)) {
      try {
        const answer = decode(offerAnswerCodec, await this.#o.network.request(fromHex(host, 32), JOB_RPC.offer, offer, OFFER_OPTIONS));
        if (answer.answer === 'Taken') return host;
        reasons.push(`${host.slice(0, 16)}…: ${answer.reasons.join('; ')}`);
      } catch (error) {
        if (!(error instanceof MeshError)) throw error;
        reasons.push(`${host.slice(0, 16)}…: ${error.message}`);
      }
    }
    throw new JobError('no-host', reasons.length === 0 ? 'no host to ask: the atlas lists no other node' : `no host takes the job now: ${reasons.join(' | ')}`);
  }

  /** Sends a heartbeat-billed job, with its bid, to the host that reserved capacity for it. */
  async #offerReserved(jobId: string, host: string): Promise<void> {
    const record = this.#record(jobId);
    if (record === undefined) return;
    const offer = encode(offerCodec, { spec: fromHex(record.spec), bid_tx: fromHex(record.bidTx!) });
    for (let attempt = 0; attempt < 5 && !this.#stopped; attempt++) {
      try {
        const answer = decode(offerAnswerCodec, await this.#o.network.request(fromHex(host, 32), JOB_RPC.offer, offer, OFFER_OPTIONS));
        if (answer.answer === 'Refused') await this.#step(jobId, { kind: 'reserved-refused', host, reasons: answer.reasons, atMs: this.#o.clock.now() });
        return;
      } catch (error) {
        if (!(error instanceof MeshError)) throw error;
        await sleep(this.#o.clock, 2_000 * (attempt + 1));
      }
    }
    if (this.#stopped || this.#record(jobId)?.state.kind !== 'pending') return;
    await this.#step(jobId, { kind: 'give-up', reason: 'the host that reserved room for it could not be reached with its bid' });
  }

  // ---- reports ----

  async #onReport({ peer, data }: RpcRequest): Promise<Uint8Array> {
    const report = decode(reportCodec, data);
    const answer = await this.#apply(toHex(peer), report);
    return encode(reportAnswerCodec, answer);
  }

  /** A host's report: the machine moves the job along; the tail is fetched and the cost weighed as it says. */
  async #apply(host: string, report: Report): Promise<ReportAnswer> {
    const jobId = toHex(report.job_id);
    const { chain, clock, key } = this.#o;
    if (this.#record(jobId) === undefined) return { placed_here: false, payer_sig: null };
    const job = chain.state.job(report.job_id);
    const acceptedBy = job?.accepted && job.host !== null ? toHex(job.host) : null;
    const effects = await this.#step(jobId, { kind: 'report', host, state: report.state, atMs: clock.now(), lockOpen: job !== undefined, acceptedBy });
    let answer: ReportAnswer = { placed_here: false, payer_sig: null };
    for (let i = 0; i < effects.length; i++) {
      const effect = effects[i]!;
      if (effect.kind === 'answer') answer = { placed_here: effect.placedHere, payer_sig: answer.payer_sig };
      else if (effect.kind === 'fetch-tail') {
        const record = this.#record(jobId)!;
        const lines = (await this.logs(record, 0, OUTPUT_TAIL_LINES).catch(() => ({ lines: [] as LogEvent[] }))).lines;
        await this.#step(jobId, { kind: 'tail', lines: outputTail(lines) });
      } else if (effect.kind === 'weigh-cost') {
        effects.push(...(await this.#step(jobId, { kind: 'cost-asked', cost: effect.cost, most: this.#mostOwed(this.#record(jobId)!) })));
      } else if (effect.kind === 'sign') {
        const payerSig = await key.sign(settlementBytes(chain.params.network, report.job_id, fromHex(host, 32), effect.cost));
        await this.#step(jobId, { kind: 'signed', cost: effect.cost, payerSig });
        answer = { placed_here: true, payer_sig: payerSig };
      }
    }
    return answer;
  }

  /**
   * The most a host can be owed at the end, as the payer sees it. Settle billing: the bid in
   * proportion to the time since the first offer went out (no host can have run the job longer), at
   * least one second's worth, all of it at the job's duration. Heartbeat billing: one interval's
   * rate, within what is locked.
   */
  #mostOwed(record: PayerJobRecord): bigint {
    if (record.billing === 'heartbeat') {
      const job = this.#o.chain.state.job(fromHex(record.jobId, 32));
      if (job === undefined) return 0n;
      return job.rate < job.locked ? job.rate : job.locked;
    }
    const since = this.#o.clock.now() - (record.firstOfferMs ?? record.createdAt * 1000);
    return settleCost(BigInt(record.bid), decodeSpecOf(record).duration_secs, since);
  }

  // ---- the chain ----

  /**
   * After a block (core/jobs/chain-facts.ts folded it in): expired bids end their jobs, and the bids
   * of jobs that ended before any host accepted them are taken back as soon as the ledger allows.
   */
  onBlock(expired: readonly string[]): void {
    for (const jobId of expired) {
      if (this.#record(jobId) === undefined) continue;
      this.#placing.delete(jobId);
      void this.#step(jobId, { kind: 'bid-expired' });
    }
    void this.#releaseUnaccepted();
  }

  /** JobExpires for the open, unaccepted bids of jobs that ended here (cancelled, no host, not started). */
  async #releaseUnaccepted(): Promise<void> {
    if (this.#stopped || this.#releasingNow) return;
    this.#releasingNow = true;
    try {
      await this.#release();
    } finally {
      this.#releasingNow = false;
    }
  }

  async #release(): Promise<void> {
    const { book, chain, mempool, own, log } = this.#o;
    for (const record of book.all()) {
      if (record.role !== 'payer' || !isFinal(record.state)) continue;
      const id = fromHex(record.jobId, 32);
      const job = chain.state.job(id);
      if (job === undefined || job.accepted || chain.tip.height + 1 < expiryHeight(job)) continue;
      const pooled = this.#releasing.get(record.jobId);
      if (pooled !== undefined && mempool.has(pooled)) continue;
      try {
        this.#releasing.set(record.jobId, (await own.submit({ kind: 'JobExpire', job_id: id })).id);
        log(`jobs: ${record.jobId.slice(0, 16)}… ended before any host accepted it: its bid of ${formatCredits(job.locked)} credits is taken back`);
      } catch (error) {
        if (!(error instanceof MeshError)) throw error;
        log(`jobs: taking back the bid of ${record.jobId.slice(0, 16)}…: ${error.message}`);
      }
    }
  }
}

function decodeSpecOf(record: PayerJobRecord): JobSpec {
  return decodeSpec(fromHex(record.spec));
}
