/**
 * What the simulated users do, each a Poisson process at a rate of the options, mesh-wide:
 * transfers between accounts, app messages to a connected peer, and payment channels that are
 * opened, paid through with receipts and closed by their host.
 */
import type { Chain } from '../chain/chain.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { CREDIT } from '../encoding/amount.ts';
import { fromHex } from '../encoding/hex.ts';
import { freeBalance } from '../ledger/state.ts';
import type { MeshNode } from '../node/node.ts';
import type { FullNodeServices } from '../node/services.ts';
import type { Scheduler } from '../time/scheduler.ts';
import type { Prng } from './prng.ts';
import type { SimNetwork } from './sim-network.ts';

/** A simulated node as the workload sees it: null node and network while it is away. */
export interface Party {
  readonly key: SigningKey;
  readonly chain: Chain;
  readonly node: MeshNode<FullNodeServices> | null;
  readonly net: SimNetwork | null;
}

export interface WorkloadRates {
  readonly transfersPerSec: number;
  readonly messagesPerSec: number;
  /** Channels opened per second; each is paid through about every 20 s and closed after five payments. */
  readonly channelsPerSec: number;
  /** Jobs bid per second: a minute's run on one core, billed by heartbeats. */
  readonly jobsPerSec: number;
}

/** The image every simulated host allows and every simulated job runs. */
export const SIM_IMAGE = 'localhost/sim-job';

const TRANSFER = CREDIT / 2n;
const CAPACITY = 2n * CREDIT;
const PAYMENT = CREDIT / 10n;
const PAYMENTS_PER_CHANNEL = 5;
const JOB_BID = CREDIT;

interface OpenChannel {
  readonly payer: Party;
  readonly host: Party;
  readonly id: string;
  paid: bigint;
  payments: number;
  busy: boolean;
}

/** What was done, with the message latencies summed up as `Q`. */
export interface WorkloadFigures<Q> {
  /** Transfers submitted, and those the sender's chain included, with the time from submission to inclusion. */
  readonly transfers: { readonly submitted: number; readonly included: number; readonly toIncludedMs: Q };
  readonly messages: { readonly sent: number; readonly delivered: number; readonly latencyMs: Q };
  /** Channels opened, receipts signed (and delivered to the host), channels closed by their host. */
  readonly channels: { readonly opened: number; readonly payments: number; readonly delivered: number; readonly closed: number };
  /** Jobs bid, and those a host ran, with the time from the bid until the payer saw it running. */
  readonly jobs: { readonly bid: number; readonly ran: number; readonly toRunningMs: Q };
}

interface PendingTransfer {
  readonly from: Party;
  readonly id: Uint8Array;
  readonly at: number;
}

interface PendingJob {
  readonly payer: Party;
  readonly id: Uint8Array;
  readonly bidAt: number;
}

export class Workload {
  readonly #clock: Scheduler;
  readonly #rng: Prng;
  /** The honest nodes that are up, in a fixed order. */
  readonly #alive: () => Party[];
  readonly #byHex: (hex: string) => Party | undefined;
  readonly #channels: OpenChannel[] = [];
  readonly #figures = {
    transfers: { submitted: 0, included: 0, toIncludedMs: [] as number[] },
    messages: { sent: 0, delivered: 0, latencyMs: [] as number[] },
    channels: { opened: 0, payments: 0, delivered: 0, closed: 0 },
    jobs: { bid: 0, ran: 0, toRunningMs: [] as number[] },
  };
  readonly #pendingJobs: PendingJob[] = [];
  readonly #pendingTransfers: PendingTransfer[] = [];

  constructor(clock: Scheduler, rng: Prng, alive: () => Party[], byHex: (hex: string) => Party | undefined) {
    this.#clock = clock;
    this.#rng = rng;
    this.#alive = alive;
    this.#byHex = byHex;
  }

  start(rates: WorkloadRates): void {
    this.#every(rates.transfersPerSec, () => this.#transfer());
    this.#every(rates.messagesPerSec, () => this.#message());
    this.#every(rates.channelsPerSec, () => this.#open());
    this.#every(rates.channelsPerSec * PAYMENTS_PER_CHANNEL, () => this.#pay());
    this.#every(rates.jobsPerSec, () => this.#bid());
    if (rates.jobsPerSec > 0) this.#clock.setInterval(() => this.#watchJobs(), 1_000);
    if (rates.transfersPerSec > 0) this.#clock.setInterval(() => void this.#watchTransfers(), 1_000);
  }

  #every(perSec: number, act: () => void): void {
    if (perSec <= 0) return;
    const next = (): void => {
      this.#clock.setTimeout(
        () => {
          act();
          next();
        },
        Math.ceil(this.#rng.exponential(1000 / perSec)),
      );
    };
    next();
  }

  #pick<T>(items: readonly T[]): T | undefined {
    return items.length === 0 ? undefined : items[this.#rng.int(items.length)];
  }

  #free(party: Party): bigint {
    return freeBalance(party.chain.state.account(party.key.publicKey), party.chain.tip.height);
  }

  /** A live honest node with at least `amount` free, if any. */
  #funded(amount: bigint): Party | undefined {
    return this.#pick(this.#alive().filter((p) => p.node !== null && this.#free(p) >= amount));
  }

  #transfer(): void {
    const from = this.#funded(2n * TRANSFER);
    const to = this.#pick(this.#alive());
    if (from?.node == null || to === undefined || from === to) return;
    this.#figures.transfers.submitted++;
    const at = this.#clock.now();
    void from.node.own
      .submit({ kind: 'Transfer', to: to.key.publicKey, amount: TRANSFER })
      .then((tx) => void this.#pendingTransfers.push({ from, id: tx.id, at }))
      .catch(() => {});
  }

  /** Each second: the transfers the sender's chain now holds (a sender that left and came back afresh finds them by sync). */
  async #watchTransfers(): Promise<void> {
    for (const transfer of [...this.#pendingTransfers]) {
      if ((await transfer.from.chain.txHeight(transfer.id)) === undefined) continue;
      const at = this.#pendingTransfers.indexOf(transfer);
      if (at < 0) continue; // counted by a look still under way from the second before
      this.#pendingTransfers.splice(at, 1);
      this.#figures.transfers.included++;
      this.#figures.transfers.toIncludedMs.push(this.#clock.now() - transfer.at);
    }
  }

  #message(): void {
    const from = this.#pick(this.#alive());
    const to = from?.net ? this.#pick([...from.net.links]) : undefined;
    if (from?.node == null || to === undefined) return;
    const m = this.#figures.messages;
    m.sent++;
    const sentAt = this.#clock.now();
    from.node.services.messaging.sendMessage(to.self, 'sim', this.#rng.bytes(64)).then(
      () => {
        m.delivered++;
        m.latencyMs.push(this.#clock.now() - sentAt);
      },
      () => {},
    );
  }

  // A payer with credits to spare opens a channel to an honest peer it is connected to.
  #open(): void {
    const payer = this.#funded(2n * CAPACITY);
    if (payer?.node == null || payer.net === null) return;
    const peers = [...payer.net.links].map((net) => this.#byHex(net.hex)).filter((p): p is Party => p?.node != null);
    const host = this.#pick(peers);
    if (host === undefined) return;
    payer.node.services.channels.openChannel({ host: host.key.publicKey, capacity: CAPACITY, expiryHeight: null }).then(
      ({ channel_id }) => {
        this.#figures.channels.opened++;
        this.#channels.push({ payer, host, id: channel_id, paid: 0n, payments: 0, busy: false });
      },
      () => {},
    );
  }

  // One more receipt on a random channel; after the last, its host closes it with the best receipt.
  #pay(): void {
    const channel = this.#pick(this.#channels.filter((c) => !c.busy));
    if (channel === undefined) return;
    const { payer, host } = channel;
    if (payer.node === null || host.node === null) return;
    channel.busy = true;
    const id = fromHex(channel.id, 32);
    if (channel.payments >= PAYMENTS_PER_CHANNEL) {
      this.#channels.splice(this.#channels.indexOf(channel), 1);
      host.node.services.channels.closeChannel(id, null).then(
        () => void this.#figures.channels.closed++,
        () => {},
      );
      return;
    }
    const cumulative = channel.paid + PAYMENT;
    this.#figures.channels.payments++;
    payer.node.services.channels
      .signReceipt(id, host.key.publicKey, cumulative)
      .then(
        (answer) => {
          channel.paid = cumulative;
          channel.payments++;
          if (answer.delivered) this.#figures.channels.delivered++;
        },
        () => {},
      )
      .finally(() => {
        channel.busy = false;
      });
  }

  // A payer with credits bids a job; the market finds it a host through the atlas.
  #bid(): void {
    const payer = this.#funded(2n * JOB_BID);
    if (payer?.node == null) return;
    const request = {
      image: `${SIM_IMAGE}:1`,
      cmd: null,
      env: [],
      cpuCores: 1,
      memMb: 256,
      durationSecs: 60,
      gpus: 0,
      bid: JOB_BID,
      billing: 'heartbeat',
    } as const;
    const bidAt = this.#clock.now();
    payer.node.services.jobs.bidJob(request).then(
      ({ job_id }) => {
        this.#figures.jobs.bid++;
        this.#pendingJobs.push({ payer, id: fromHex(job_id, 32), bidAt });
      },
      () => {},
    );
  }

  // Each second, the payers' view of their jobs: the first time one shows running.
  #watchJobs(): void {
    for (const job of [...this.#pendingJobs]) {
      const status = job.payer.node?.services.jobs.getJob(job.id)?.status;
      if (status === undefined || status === 'pending') continue;
      this.#pendingJobs.splice(this.#pendingJobs.indexOf(job), 1);
      if (status === 'expired' || status.startsWith('failed')) continue;
      this.#figures.jobs.ran++;
      this.#figures.jobs.toRunningMs.push(this.#clock.now() - job.bidAt);
    }
  }

  /** The figures, the latencies summed up by `summary`. */
  report<Q>(summary: (values: number[]) => Q): WorkloadFigures<Q> {
    const { transfers, messages, channels, jobs } = this.#figures;
    return {
      transfers: { submitted: transfers.submitted, included: transfers.included, toIncludedMs: summary(transfers.toIncludedMs) },
      channels,
      messages: { sent: messages.sent, delivered: messages.delivered, latencyMs: summary(messages.latencyMs) },
      jobs: { bid: jobs.bid, ran: jobs.ran, toRunningMs: summary(jobs.toRunningMs) },
    };
  }
}
