/**
 * The host's admission (docs/jobs.md "On the host"): it answers each offer with every reason the job
 * does not fit, holds room for a heartbeat-billed job before its bid names this host (and for
 * directed placement), and takes a job only once its bid can pay: on the chain or valid in the pool.
 */
import { decode, encode } from '../encoding/codec.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { clip } from '../encoding/text.ts';
import { MeshError } from '../errors.ts';
import { freeBalance } from '../ledger/state.ts';
import { decodeTx, type Tx } from '../ledger/tx.ts';
import type { RpcRequest } from '../net/network.ts';
import type { HostSide } from './host-side.ts';
import { type InUse, refusalsOf } from './policy.ts';
import { type HostJobRecord, isLive, newHostRecord, statusOf } from './record.ts';
import { bidMismatch, billingName, decodeSpec, type JobSpec, specHash, specProblem, termsProblems } from './spec.ts';
import { MAX_REASON_BYTES, offerAnswerCodec, offerCodec } from './wire.ts';

/** How long a reservation (asked before a heartbeat-billed bid names this host) holds capacity. */
export const RESERVATION_MS = 60_000;
/** Share of the offered cores and memory that reservations may hold (the rest is for bids). */
const RESERVABLE_SHARE = 0.5;

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

export class HostAdmission {
  readonly #side: HostSide;
  readonly #engine: () => { ready: boolean; gpus: number };
  /** Writes a taken job's record, and starts it. */
  readonly #take: (record: HostJobRecord) => Promise<void>;
  readonly #reservations = new Map<string, Reservation>();
  // Room held for directed placement: one per authorised deploy, so a caller may have several.
  #directed: Reservation[] = [];
  // Offers being answered, by job id: a second offer of the same job gets the first one's answer,
  // and their capacity counts before the record is written.
  readonly #taking = new Map<string, { readonly cpuCores: number; readonly memMb: number; readonly answer: Promise<Uint8Array> }>();

  constructor(side: HostSide, engine: () => { ready: boolean; gpus: number }, take: (record: HostJobRecord) => Promise<void>) {
    this.#side = side;
    this.#engine = engine;
    this.#take = take;
  }

  /**
   * Directed placement (core/placement/host.ts): room held for a caller that placement has
   * authorised, until its bid comes in the offer. Authority stands in for the image allow-list;
   * capacity, the engine and the terms are checked as for any job. Every reason it does not fit, or none.
   */
  reserveDirected(payer: string, specBytes: Uint8Array, spec: JobSpec, bid: bigint, recheck: () => Promise<string | null>): string[] {
    const { policy, chain, clock } = this.#side.o;
    this.#dropStaleReservations();
    const reasons = [
      ...refusalsOf(spec, policy, this.#inUse(), this.#engine(), { authorised: true }),
      ...termsProblems(spec, bid, chain.params.blockIntervalMs),
    ];
    if (reasons.length > 0) return reasons;
    const hash = toHex(specHash(chain.params.network, specBytes));
    this.#directed.push({ payer, hash, cpuCores: spec.cpu_cores, memMb: spec.mem_mb, until: clock.now() + RESERVATION_MS, directedBid: bid, recheck });
    return [];
  }

  async onOffer({ peer, data }: RpcRequest): Promise<Uint8Array> {
    const { chain, policy, book } = this.#side.o;
    const refuse = (...reasons: string[]): Uint8Array =>
      encode(offerAnswerCodec, { answer: 'Refused', reasons: reasons.slice(0, 16).map((r) => clip(r, MAX_REASON_BYTES)) });
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
    const hash = toHex(specHash(chain.params.network, offer.spec));
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
    if (toHex(bid.spec_hash) !== hash) return refuse("the spec does not match the bid's spec_hash");
    const mismatch = bidMismatch(spec, bid);
    if (mismatch !== null) return refuse(mismatch);
    if (bid.host !== null && toHex(bid.host) !== this.#side.selfHex) return refuse('the bid names another host');
    const jobId = toHex(tx.id);
    const known = book.get(jobId);
    if (known !== undefined) {
      if (known.role !== 'host') return refuse("this node is the job's payer");
      // Asked again (its answer was lost): the same answer, as long as the job is still here.
      if (isLive(known.state)) return taken();
      return refuse(`the job has ended here: ${statusOf(known.state)}`);
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
      ...refusalsOf(spec, policy, this.#inUse(), this.#engine(), { authorised: directed !== undefined }),
      ...termsProblems(spec, bid.bid, chain.params.blockIntervalMs),
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
      await this.#take(this.#newRecord(jobId, payer, spec, offer.spec, offer.bid_tx!, bid.bid));
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
    const { chain, policy, clock } = this.#side.o;
    if (billingName(spec.billing) !== 'heartbeat') return refuse('only a heartbeat-billed job is reserved before its bid');
    // One reservation per payer (a new one replaces the last), from a payer with credits, and
    // reservations together hold at most half of what this host offers: free identities cannot
    // keep the host's room from paying bids.
    this.#reservations.delete(payer);
    const reasons = refusalsOf(spec, policy, this.#inUse(), this.#engine());
    if (freeBalance(chain.state.account(fromHex(payer, 32)), chain.tip.height) === 0n) reasons.push('the payer has no free credits');
    let cores = spec.cpu_cores;
    let mem = spec.mem_mb;
    for (const r of this.#reservations.values()) {
      cores += r.cpuCores;
      mem += r.memMb;
    }
    if (cores > policy.cpuCores * RESERVABLE_SHARE || mem > policy.memMb * RESERVABLE_SHARE)
      reasons.push('reservations hold as much of this host as they may; try again later');
    if (reasons.length > 0) return refuse(...reasons);
    this.#reservations.set(payer, { payer, hash, cpuCores: spec.cpu_cores, memMb: spec.mem_mb, until: clock.now() + RESERVATION_MS });
    return taken();
  }

  #newRecord(jobId: string, payer: string, spec: JobSpec, specBytes: Uint8Array, bidTx: Uint8Array, bid: bigint): HostJobRecord {
    return newHostRecord({
      jobId,
      payer,
      host: this.#side.selfHex,
      billing: billingName(spec.billing),
      spec: toHex(specBytes),
      bidTx: toHex(bidTx),
      bid: bid.toString(),
      createdAt: Math.floor(this.#side.o.clock.now() / 1000),
    });
  }

  /** Why the bid cannot pay this host, or null: it must be on the chain or valid in the pool. */
  async #bidProblem(tx: Tx): Promise<string | null> {
    const { chain, mempool } = this.#side.o;
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

  /** The cores and memory of the jobs that may run or run here, of the room held, and of offers being taken. */
  #inUse(): InUse {
    let cpuCores = 0;
    let memMb = 0;
    for (const r of this.#side.o.book.all()) {
      if (r.role !== 'host' || !isLive(r.state)) continue;
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
    const now = this.#side.o.clock.now();
    for (const [key, r] of this.#reservations) if (r.until <= now) this.#reservations.delete(key);
    this.#directed = this.#directed.filter((r) => r.until > now);
  }
}
