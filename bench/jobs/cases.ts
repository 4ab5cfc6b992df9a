/**
 * The jobs benchmark's measurements, on two real `mesh node --devnet` processes on loopback (a
 * payer that mines, a host that runs jobs) and the Podman Docker-API service of the container tests
 * (test/podman.ts), next to the same containers run bare through the same engine:
 *
 * - bid → running: POST /jobs/bid on the payer to the host's GET /jobs/:id showing the job running,
 *   next to a container created and started with dockerode and the executor's own create options
 *   (the same sandbox), timed to start() returning;
 * - exit → settled: the container's exit (the engine's FinishedAt) to the block holding its
 *   JobSettle, in blocks and in ms;
 * - a batch: N jobs bid at once on one host, all settled with exact balances, next to N bare
 *   containers started at once; wall time and CPU time.
 *
 * Every time here is wall-clock epoch ms with a fraction (performance.timeOrigin + now()), the
 * clock the engine's timestamps and the SSE arrival times share on this one machine.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Docker from 'dockerode';
import { CREDIT } from '../../core/encoding/amount.ts';
import type { EngineInfo } from '../../core/jobs/executor.ts';
import type { JobSummary, JobView } from '../../core/jobs/types.ts';
import { burnOf } from '../../core/ledger/params.ts';
import { containerOptions, DockerExecutor } from '../../host-node/docker-executor.ts';
import { type EventStream, getJson, type MeshProcess, openStream, postJson, stopNode, tcpAddress, waitFor } from '../../test/mesh-process.ts';
import { PODMAN_DIR, type PodmanService, startPodman, TEST_IMAGE } from '../../test/podman.ts';
import { machineBusyMs, otherProcessesShare, ownCpuMs, processCpuMs, since, startWithEnv } from '../lib/processes.ts';
import { seededRandom } from '../lib/random.ts';
import { median } from '../lib/timing.ts';

/** What every job and bare container runs: a line of output, then a second's sleep. */
export const JOB_CMD: readonly string[] = ['sh', '-c', 'echo x; sleep 1'];
export const JOB_CORES = 1;
export const JOB_MEM_MB = 64;
/** Each bid: 10 credits for at most 60 s, so a job of about a second costs about a sixtieth of it. */
export const JOB_BID: bigint = 10n * CREDIT;
export const JOB_DURATION_SECS = 60;
/** How often the benchmark asks a node for a job's status while it times one job. */
export const POLL_MS = 20;
/** How often it asks the payer for the batch's statuses (the host is left alone: its CPU is measured). */
export const BATCH_POLL_MS = 50;
const JOB_TIMEOUT_MS = 120_000;

const wallNow = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface BlockEvent {
  readonly index: number;
}

interface TxEvent {
  readonly id: string;
  readonly kind: string;
  readonly origin: string;
}

interface TxRow {
  readonly tx_id: string;
  readonly height: number;
  readonly kind: string;
}

interface Status {
  readonly height: number;
  readonly balance: string;
  readonly locked_bids: string;
  readonly circulating_supply: string;
  readonly burned_total: string;
}

/** The two nodes, the engine, and the payer's streams, recorded from before the first bid. */
export interface Setup {
  readonly payer: MeshProcess;
  readonly host: MeshProcess;
  readonly podman: PodmanService;
  readonly docker: Docker;
  readonly engine: EngineInfo;
  readonly blockIntervalMs: number;
  readonly blocks: EventStream<BlockEvent>;
  readonly txs: EventStream<TxEvent>;
  /** JobSettles of the host already matched to a job. */
  readonly settles: Set<string>;
  readonly log: (line: string) => void;
}

/** One container created and started bare; times from the create request being sent. */
export interface BareSample {
  /** To start() returning: what the goal compares with. */
  readonly startMs: number;
  /** To the engine's StartedAt. */
  readonly engineStartedMs: number | null;
  /** The engine's FinishedAt to wait() returning: how late the engine tells of an exit. */
  readonly exitNoticeMs: number | null;
}

/** One job from bid to settlement; times from POST /jobs/bid being sent. */
export interface JobSample {
  readonly jobId: string;
  /** The POST's answer (the JobBid signed and pooled). */
  readonly postMs: number;
  /** The first poll of the host's GET /jobs/:id that shows it running (timed when sent). */
  readonly hostRunningMs: number;
  readonly payerRunningMs: number;
  /** The engine's StartedAt of the job's container. */
  readonly engineStartedMs: number | null;
  /** The engine's FinishedAt; null when the host removed the container before it was read. */
  readonly exitMs: number | null;
  readonly hostEndedMs: number;
  readonly payerEndedMs: number;
  /** The JobSettle on the payer's /transactions/stream (in its pool, or with its block). */
  readonly settlePooledMs: number | null;
  /** The block holding the JobSettle on the payer's /blocks/stream. */
  readonly settledBlockMs: number;
  readonly payerSettledMs: number;
  readonly settleHeight: number;
  /** The first block the payer made after the exit; null when the exit time is unknown. */
  readonly firstBlockAfterExit: number | null;
  /** Decimal base units. */
  readonly cost: string;
}

/** Blocks from the exit to the JobSettle's: 1 when the first block after the exit holds it. */
export function blocksToSettle(sample: JobSample): number | null {
  return sample.firstBlockAfterExit === null ? null : sample.settleHeight - sample.firstBlockAfterExit + 1;
}

/** N bare containers created and started at once, then awaited; times from the first create. */
export interface BareBatch {
  readonly count: number;
  readonly allStartedMs: number;
  readonly allExitedMs: number;
  /** CPU time of the Podman service process meanwhile (not conmon, runc or the containers). */
  readonly engineCpuMs: number | null;
  /** CPU time of the whole machine meanwhile, less this benchmark's own. */
  readonly machineCpuMs: number;
}

/** Balances before and after a batch, and what they should have become (decimal base units). */
export interface Balances {
  readonly hostDelta: string;
  /** Σ (cost − burn). */
  readonly hostExpected: string;
  readonly payerDelta: string;
  /** Credits emitted over the batch's blocks (all to the payer, the only producer) − Σ cost. */
  readonly payerExpected: string;
  readonly burnedDelta: string;
  /** Σ burn. */
  readonly burnedExpected: string;
  /** The payer's locked_bids once every job settled. */
  readonly lockedBids: string;
  readonly costs: readonly string[];
}

/** Whether every balance came out exactly as the settlements say. */
export function balancesExact(b: Balances): boolean {
  return b.hostDelta === b.hostExpected && b.payerDelta === b.payerExpected && b.burnedDelta === b.burnedExpected && b.lockedBids === '0';
}

/** N jobs bid at once on one host; times from the first POST. */
export interface JobBatch {
  readonly count: number;
  readonly allRunningMs: number;
  readonly allSettledMs: number;
  /** The payer's height before the bids, and the highest JobSettle's. */
  readonly heights: readonly [number, number];
  readonly settleHeights: readonly number[];
  readonly hostCpuMs: number | null;
  /** The host's CPU time per second while idle, measured just before. */
  readonly hostIdleCpuPerSec: number | null;
  /** The share of the machine other processes kept busy over that idle time (see quietShare). */
  readonly othersShareBefore: number | null;
  readonly payerCpuMs: number | null;
  readonly engineCpuMs: number | null;
  readonly machineCpuMs: number;
  readonly balances: Balances;
}

/** Starts the engine and the two nodes; resolves once the payer can pay and sees the host. */
export async function startSetup(options: { blockIntervalMs: number; concurrent: number; log: (line: string) => void }): Promise<Setup> {
  const { blockIntervalMs, concurrent, log } = options;
  const podman = await startPodman();
  try {
    const docker = new Docker({ socketPath: podman.socketPath });
    const engine = await new DockerExecutor({ socketPath: podman.socketPath }).info();
    const payer = await startWithEnv({ mine: true, blockIntervalMs }, undefined);
    const host = await startWithEnv(
      {
        bootstrap: [tcpAddress(payer)],
        blockIntervalMs,
        extraArgs: [
          '--allow-image',
          'localhost/busybox',
          // Room for the whole batch at once: every job takes a core and its memory while it runs.
          '--job-cores',
          String(Math.max(20, concurrent * JOB_CORES)),
          '--job-mem-mb',
          String(Math.max(2048, concurrent * JOB_MEM_MB)),
        ],
      },
      { DOCKER_HOST: podman.dockerHost, CONTAINERS_CONF: join(PODMAN_DIR, 'containers.conf') },
    );
    // The host broadcasts its capacity 2 s after it starts, then every 60 s: the first may miss the mesh.
    await waitFor(
      "the host in the payer's atlas",
      async () => (await getJson<{ node_id: string }[]>(payer, '/atlas')).some((e) => e.node_id === host.nodeId),
      90_000,
      100,
    );
    const needed = JOB_BID * BigInt(concurrent + 2);
    await waitFor("the payer's balance", async () => BigInt((await getJson<Status>(payer, '/status')).balance) >= needed, 60_000, 100);
    const blocks = await openStream<BlockEvent>(payer, '/blocks/stream');
    const txs = await openStream<TxEvent>(payer, '/transactions/stream');
    log(`  payer ${payer.nodeId.slice(0, 16)}… (mining), host ${host.nodeId.slice(0, 16)}… on ${engine.engine}, runtime ${engine.runtime}`);
    return { payer, host, podman, docker, engine, blockIntervalMs, blocks, txs, settles: new Set(), log };
  } catch (error) {
    await podman.stop();
    throw error;
  }
}

export async function stopSetup(setup: Setup): Promise<void> {
  setup.blocks.close();
  setup.txs.close();
  await stopNode(setup.host);
  await stopNode(setup.payer);
  await setup.podman.stop();
}

/** An engine timestamp as epoch ms; null for the zero time engines give for "not yet". */
function engineTime(stamp: string | undefined): number | null {
  if (stamp === undefined || stamp.startsWith('0001-')) return null;
  const ms = Date.parse(stamp);
  return Number.isNaN(ms) ? null : ms;
}

let bareCount = 0;

function bareOptions(setup: Setup): Docker.ContainerCreateOptions {
  const name = `mesh-bench-bare-${process.pid}-${bareCount++}`;
  return containerOptions({ name, image: TEST_IMAGE, cmd: JOB_CMD, env: [], cpuCores: JOB_CORES, memMb: JOB_MEM_MB, gpus: 0, labels: {} }, setup.engine);
}

/** One bare container: created and started, then awaited and removed (untimed). */
export async function bareRun(setup: Setup): Promise<BareSample> {
  const sent = wallNow();
  const container = await setup.docker.createContainer(bareOptions(setup));
  try {
    await container.start();
    const started = wallNow();
    const first = await container.inspect();
    await container.wait();
    const noticed = wallNow();
    const last = await container.inspect();
    const startedAt = engineTime(first.State.StartedAt);
    const finishedAt = engineTime(last.State.FinishedAt);
    return {
      startMs: started - sent,
      engineStartedMs: startedAt === null ? null : startedAt - sent,
      exitNoticeMs: finishedAt === null ? null : noticed - finishedAt,
    };
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}

/** GET /jobs/:id, or null while the node has no record of it. */
async function jobView(node: MeshProcess, jobId: string): Promise<JobView | null> {
  const response = await fetch(`${node.url}/jobs/${jobId}`);
  if (response.status === 404) {
    await response.body?.cancel();
    return null;
  }
  if (!response.ok) throw new Error(`GET /jobs/${jobId}: ${response.status} ${await response.text()}`);
  return (await response.json()) as JobView;
}

const STATUS_RANK: Readonly<Record<string, number>> = { pending: 0, running: 1, awaiting_settlement: 2, settled: 3 };

/** When each status (or a later one) was first seen on one node. */
class StatusTimes {
  readonly #at: (number | null)[] = [null, null, null, null];

  /** Records `status` seen in a poll sent at `at`; throws for a job that failed. */
  see(status: string, at: number, what: string): void {
    const rank = STATUS_RANK[status];
    if (rank === undefined) throw new Error(`${what}: the job is ${status}`);
    for (let r = 0; r <= rank; r++) this.#at[r] ??= at;
  }

  at(status: keyof typeof STATUS_RANK): number | null {
    return this.#at[STATUS_RANK[status]!]!;
  }
}

/** The engine's StartedAt and FinishedAt of a job's container, read alongside the host. */
async function watchContainer(docker: Docker, id: string): Promise<{ startedAt: number | null; finishedAt: number | null }> {
  const container = docker.getContainer(id);
  const first = await container.inspect().catch(() => null);
  await container.wait().catch(() => null);
  // The host removes the container once it has read its end: this read may come too late.
  const last = await container.inspect().catch(() => null);
  return {
    startedAt: engineTime(first?.State.StartedAt),
    finishedAt: last === null || last.State.Running ? null : engineTime(last.State.FinishedAt),
  };
}

function bidBody(): Record<string, unknown> {
  return { image: TEST_IMAGE, cmd: JOB_CMD, cpu_cores: JOB_CORES, mem_mb: JOB_MEM_MB, duration_secs: JOB_DURATION_SECS, bid: JOB_BID.toString() };
}

async function postBid(payer: MeshProcess): Promise<string> {
  const response = await postJson(payer, '/jobs/bid', bidBody());
  if (response.status !== 201) throw new Error(`POST /jobs/bid: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.job_id as string;
}

/** When an event matching `match` arrived on `stream` (waiting for it). */
async function arrivalOf<T>(stream: EventStream<T>, match: (event: T) => boolean, timeoutMs = JOB_TIMEOUT_MS): Promise<number> {
  await stream.next(match, timeoutMs);
  return stream.arrivals[stream.events.findIndex(match)]!;
}

/** The host's JobSettles not yet matched to a job, once there are `count` of them. */
async function newSettles(setup: Setup, count: number): Promise<TxRow[]> {
  const rows = await waitFor(
    `${count} new JobSettle${count === 1 ? '' : 's'} of the host`,
    async () => {
      const list = await getJson<TxRow[]>(setup.payer, `/transactions/${setup.host.nodeId}?limit=500`);
      const fresh = list.filter((r) => r.kind === 'JobSettle' && !setup.settles.has(r.tx_id));
      return fresh.length >= count ? fresh : false;
    },
    JOB_TIMEOUT_MS,
    POLL_MS,
  );
  if (rows.length !== count) throw new Error(`${rows.length} new JobSettles of the host, not ${count}`);
  for (const row of rows) setup.settles.add(row.tx_id);
  return rows;
}

/** One job, bid on the payer and followed on both nodes at POLL_MS until both show it settled. */
export async function jobRun(setup: Setup): Promise<JobSample> {
  const { payer, host } = setup;
  const sent = wallNow();
  const jobId = await postBid(payer);
  const posted = wallNow();
  const onHost = new StatusTimes();
  const onPayer = new StatusTimes();
  let watched: ReturnType<typeof watchContainer> | null = null;
  const deadline = sent + JOB_TIMEOUT_MS;
  let payerView: JobView | null = null;
  for (;;) {
    const at = wallNow();
    const [h, p] = await Promise.all([jobView(host, jobId), jobView(payer, jobId)]);
    if (h !== null) onHost.see(h.status, at, `job ${jobId} on the host`);
    if (p !== null) onPayer.see(p.status, at, `job ${jobId} on the payer`);
    payerView = p;
    if (watched === null && h?.container_id) watched = watchContainer(setup.docker, h.container_id);
    if (onHost.at('settled') !== null && onPayer.at('settled') !== null) break;
    if (wallNow() > deadline) throw new Error(`job ${jobId}: host ${h?.status ?? 'unknown'}, payer ${p?.status ?? 'unknown'} after ${JOB_TIMEOUT_MS / 1000} s`);
    await sleep(POLL_MS);
  }
  const [settle] = await newSettles(setup, 1);
  const settledBlock = await arrivalOf(setup.blocks, (b) => b.index === settle!.height);
  const pooledIndex = setup.txs.events.findIndex((t) => t.id === settle!.tx_id);
  const { startedAt, finishedAt } = watched === null ? { startedAt: null, finishedAt: null } : await watched;
  let firstBlockAfterExit: number | null = null;
  if (finishedAt !== null) {
    const i = setup.blocks.arrivals.findIndex((a) => a > finishedAt);
    firstBlockAfterExit = i < 0 ? null : setup.blocks.events[i]!.index;
  }
  const rel = (t: number | null): number | null => (t === null ? null : t - sent);
  return {
    jobId,
    postMs: posted - sent,
    hostRunningMs: rel(onHost.at('running'))!,
    payerRunningMs: rel(onPayer.at('running'))!,
    engineStartedMs: rel(startedAt),
    exitMs: rel(finishedAt),
    hostEndedMs: rel(onHost.at('awaiting_settlement'))!,
    payerEndedMs: rel(onPayer.at('awaiting_settlement'))!,
    settlePooledMs: pooledIndex < 0 ? null : setup.txs.arrivals[pooledIndex]! - sent,
    settledBlockMs: settledBlock - sent,
    payerSettledMs: rel(onPayer.at('settled'))!,
    settleHeight: settle!.height,
    firstBlockAfterExit,
    cost: payerView?.cost ?? '0',
  };
}

export interface SequentialRuns {
  readonly bare: BareSample[];
  readonly jobs: JobSample[];
  /** Runs of each taken first and not counted (the engine, both nodes and the paths warmed up). */
  readonly warmup: number;
  /** The median time between blocks on the payer's stream during the counted runs. */
  readonly blockGapMs: number | null;
}

/**
 * `runs` bare containers and `runs` jobs, one at a time in alternating order, each after a pause of
 * up to a block interval (so the jobs meet every phase of block production), after `warmup`
 * uncounted ones of each.
 */
export async function sequentialRuns(setup: Setup, runs: number, warmup: number): Promise<SequentialRuns> {
  const pause = seededRandom(runs);
  const bare: BareSample[] = [];
  const jobs: JobSample[] = [];
  const ms = (v: number | null): string => (v === null ? '–' : `${Math.round(v)} ms`);
  let firstBlock = setup.blocks.arrivals.length;
  for (let n = 0; n < warmup + runs; n++) {
    const counted = n >= warmup;
    if (n === warmup) firstBlock = setup.blocks.arrivals.length;
    const label = counted ? `run ${n - warmup + 1}` : 'warm-up';
    for (const kind of n % 2 === 0 ? (['bare', 'job'] as const) : (['job', 'bare'] as const)) {
      await sleep(Math.floor(pause() * setup.blockIntervalMs));
      if (kind === 'bare') {
        const b = await bareRun(setup);
        if (counted) bare.push(b);
        setup.log(`  ${label}: bare container started in ${ms(b.startMs)} (engine ${ms(b.engineStartedMs)}; exit told ${ms(b.exitNoticeMs)} late)`);
      } else {
        const j = await jobRun(setup);
        if (counted) jobs.push(j);
        const blocks = blocksToSettle(j);
        setup.log(
          `  ${label}: job running on the host ${ms(j.hostRunningMs)} after its bid (engine ${ms(j.engineStartedMs)}); ` +
            `exit → settled ${j.exitMs === null ? '–' : ms(j.settledBlockMs - j.exitMs)}, ${blocks ?? '–'} block${blocks === 1 ? '' : 's'}`,
        );
      }
    }
  }
  const arrivals = setup.blocks.arrivals.slice(firstBlock);
  const gaps = arrivals.slice(1).map((a, i) => a - arrivals[i]!);
  return { bare, jobs, warmup, blockGapMs: gaps.length > 0 ? median(gaps) : null };
}

/**
 * The share of the machine that processes other than the two nodes, the engine and this one kept
 * busy over `ms` while the benchmark waited: other work on the machine, which slows every figure.
 */
export async function quietShare(setup: Setup, ms: number): Promise<number | null> {
  return (await otherProcessesShare([setup.host.child.pid, setup.payer.child.pid, await engineServicePid()], ms)).share;
}

/** The Podman service's pid, for its CPU time; undefined when it cannot be read. */
async function engineServicePid(): Promise<number | undefined> {
  const pid = Number(await readFile(join(PODMAN_DIR, 'service.pid'), 'utf8').catch(() => ''));
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** N bare containers created and started at once, awaited together, then removed. */
export async function bareBatch(setup: Setup, count: number): Promise<BareBatch> {
  const enginePid = await engineServicePid();
  const [engine0, machine0, own0] = [await processCpuMs(enginePid), machineBusyMs(), ownCpuMs()];
  const sent = wallNow();
  const containers = await Promise.all(
    Array.from({ length: count }, async () => {
      const container = await setup.docker.createContainer(bareOptions(setup));
      await container.start();
      return { container, started: wallNow() };
    }),
  );
  try {
    const allStarted = Math.max(...containers.map((c) => c.started));
    await Promise.all(containers.map((c) => c.container.wait()));
    const allExited = wallNow();
    const [engine1, machine1, own1] = [await processCpuMs(enginePid), machineBusyMs(), ownCpuMs()];
    return {
      count,
      allStartedMs: allStarted - sent,
      allExitedMs: allExited - sent,
      engineCpuMs: since(engine0, engine1),
      machineCpuMs: machine1 - machine0 - (own1 - own0),
    };
  } finally {
    await Promise.all(containers.map((c) => c.container.remove({ force: true }).catch(() => undefined)));
  }
}

/** The payer's jobs among `ids`, from its GET /jobs. */
async function payerRows(setup: Setup, ids: ReadonlySet<string>): Promise<JobSummary[]> {
  return (await getJson<JobSummary[]>(setup.payer, '/jobs')).filter((r) => ids.has(r.job_id));
}

const IDLE_MS = 5_000;

/**
 * N jobs bid at once: from the first POST to every job settled on the payer (polled every
 * BATCH_POLL_MS), the host's CPU time meanwhile against its idle rate just before, and the balances
 * after against what the settlements say.
 */
export async function jobBatch(setup: Setup, count: number, idleMs = IDLE_MS): Promise<JobBatch> {
  const { payer, host } = setup;
  const enginePid = await engineServicePid();
  const quiet = await otherProcessesShare([host.child.pid, payer.child.pid, enginePid], idleMs);
  const idleRate = quiet.cpuMs[0] ?? null;
  const before = { payer: await getJson<Status>(payer, '/status'), host: await getJson<Status>(host, '/status') };
  const cpu0 = { host: await processCpuMs(host.child.pid), payer: await processCpuMs(payer.child.pid), engine: await processCpuMs(enginePid) };
  const [machine0, own0] = [machineBusyMs(), ownCpuMs()];
  const sent = wallNow();
  const ids = new Set(await Promise.all(Array.from({ length: count }, () => postBid(payer))));
  let allRunning: number | null = null;
  let rows: JobSummary[] = [];
  for (;;) {
    const at = wallNow();
    rows = await payerRows(setup, ids);
    for (const row of rows) if (STATUS_RANK[row.status] === undefined) throw new Error(`job ${row.job_id} on the payer: ${row.status}`);
    if (allRunning === null && rows.length === count && rows.every((r) => STATUS_RANK[r.status]! >= 1)) allRunning = at;
    if (rows.length === count && rows.every((r) => r.status === 'settled')) break;
    if (wallNow() > sent + JOB_TIMEOUT_MS)
      throw new Error(`the batch: ${rows.filter((r) => r.status === 'settled').length} of ${count} settled after ${JOB_TIMEOUT_MS / 1000} s`);
    await sleep(BATCH_POLL_MS);
  }
  const allSettled = wallNow();
  const cpu1 = { host: await processCpuMs(host.child.pid), payer: await processCpuMs(payer.child.pid), engine: await processCpuMs(enginePid) };
  const [machine1, own1] = [machineBusyMs(), ownCpuMs()];
  const settles = await newSettles(setup, count);
  const top = Math.max(...settles.map((s) => s.height));
  const after = {
    payer: await waitFor('the payer at the last settlement', async () =>
      (await getJson<Status>(payer, '/status')).height >= top ? getJson<Status>(payer, '/status') : false,
    ),
    host: await waitFor('the host at the last settlement', async () =>
      (await getJson<Status>(host, '/status')).height >= top ? getJson<Status>(host, '/status') : false,
    ),
  };
  const costs = rows.map((r) => BigInt(r.cost ?? '0'));
  const sum = (values: bigint[]): bigint => values.reduce((a, b) => a + b, 0n);
  const burned = sum(costs.map(burnOf));
  const delta = (a: Status, b: Status, field: 'balance' | 'burned_total' | 'circulating_supply'): bigint => BigInt(b[field]) - BigInt(a[field]);
  // Emitted over the batch: the change in circulating supply plus what was burned meanwhile.
  const emitted = delta(before.payer, after.payer, 'circulating_supply') + delta(before.payer, after.payer, 'burned_total');
  return {
    count,
    allRunningMs: allRunning! - sent,
    allSettledMs: allSettled - sent,
    heights: [before.payer.height, top],
    settleHeights: settles.map((s) => s.height).sort((a, b) => a - b),
    hostCpuMs: since(cpu0.host, cpu1.host),
    hostIdleCpuPerSec: idleRate === null ? null : (idleRate * 1000) / idleMs,
    othersShareBefore: quiet.share,
    payerCpuMs: since(cpu0.payer, cpu1.payer),
    engineCpuMs: since(cpu0.engine, cpu1.engine),
    machineCpuMs: machine1 - machine0 - (own1 - own0),
    balances: {
      hostDelta: delta(before.host, after.host, 'balance').toString(),
      hostExpected: (sum(costs) - burned).toString(),
      payerDelta: delta(before.payer, after.payer, 'balance').toString(),
      payerExpected: (emitted - sum(costs)).toString(),
      burnedDelta: delta(before.payer, after.payer, 'burned_total').toString(),
      burnedExpected: burned.toString(),
      lockedBids: after.payer.locked_bids,
      costs: costs.map(String),
    },
  };
}
