import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { copyChain, key, mine, openChain } from '../chain/testnet.test-util.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { CREDIT } from '../encoding/amount.ts';
import { decode, encode } from '../encoding/codec.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { burnOf, UNACCEPTED_EXPIRY_BLOCKS } from '../ledger/params.ts';
import { freeBalance } from '../ledger/state.ts';
import { decodeTx, settlementBytes, signTx } from '../ledger/tx.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import type { FullNode } from '../node/node.test-util.ts';
import { startNode } from '../node/node.test-util.ts';
import { MemoryStore } from '../store/kv.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import { JobError } from './errors.ts';
import { FakeExecutor } from './executor.test-util.ts';
import { ExecutorError } from './executor.ts';
import { ACCEPT_MARGIN_BLOCKS } from './host-acceptance.ts';
import type { JobsConfig } from './market.ts';
import { START_WAIT_MS } from './payer-machine.ts';
import { encodeSpec, settleCost, specHash, specOf } from './spec.ts';
import type { JobRequest } from './types.ts';
import { JOB_RPC, offerAnswerCodec, offerCodec, type ReportState, reportAnswerCodec, reportCodec } from './wire.ts';

const P = key(1); // the payer, which also produces the blocks
const H = key(2); // a host
const G = key(3); // a second host

const POLICY = { allowImages: ['localhost/busybox'], cpuCores: 2, memMb: 2048 };

function request(overrides: Partial<JobRequest> = {}): JobRequest {
  return {
    image: 'localhost/busybox:test',
    cmd: ['echo', 'hi'],
    env: [],
    cpuCores: 1,
    memMb: 64,
    durationSecs: 60,
    gpus: 0,
    bid: 10n * CREDIT,
    billing: 'settle',
    ...overrides,
  };
}

interface Mesh {
  readonly clock: Scheduler;
  readonly bus: MemoryBus;
  readonly payer: FullNode;
  readonly hosts: FullNode[];
  readonly stop: () => Promise<void>;
}

/** A payer with 3,000 credits that produces blocks, and hosts with the given job configurations. */
async function mesh(clock: Scheduler, hostConfigs: { key: SigningKey; jobs: JobsConfig }[], payerJobs: JobsConfig = {}): Promise<Mesh> {
  const bus = new MemoryBus(clock);
  const chain = await openChain();
  await mine(chain, P, 3);
  const hosts: FullNode[] = [];
  const log = (globalThis as { process?: { env: Record<string, string> } }).process?.env.JOBS_LOG ? (line: string) => console.log(line) : undefined;
  for (const { key: k, jobs } of hostConfigs)
    hosts.push(await startNode(bus, await copyChain(chain), k, clock, { jobs, capacityIntervalMs: 5_000, ...(log && { log }) }));
  const payer = await startNode(bus, chain, P, clock, { mine: true, jobs: { queueMs: 60_000, ...payerJobs }, capacityIntervalMs: 5_000, ...(log && { log }) });
  await clock.until(
    'the payer sees every host in its atlas',
    () => hostConfigs.every((h) => payer.services.signals.atlas().some((e) => e.node_id === toHex(h.key.publicKey))),
    20_000,
  );
  return {
    clock,
    bus,
    payer,
    hosts,
    stop: async () => {
      for (const n of [payer, ...hosts]) await n.stop();
    },
  };
}

test('jobs: a settle-billed job runs on the one host that takes it, and the co-signed settlement moves the cost less 1 %', async () => {
  const clock = testScheduler();
  const executor = new FakeExecutor(clock);
  const m = await mesh(clock, [{ key: H, jobs: { executor, policy: POLICY } }]);
  try {
    const { payer } = m;
    const host = m.hosts[0]!;
    const before = payer.chain.state.supply().burned;
    const { job_id } = await payer.services.jobs.bidJob(request());
    const id = fromHex(job_id, 32);
    assert.equal(payer.services.jobs.getJob(id)!.status, 'pending');
    await clock.until('the host runs it', () => executor.running.length === 1, 30_000);
    const container = executor.running[0]!;
    assert.equal(container.labels['mesh.job'], job_id);
    await clock.until('the payer hears it runs', () => payer.services.jobs.getJob(id)!.status === 'running', 10_000);
    assert.equal(payer.services.jobs.getJob(id)!.host, toHex(H.publicKey));
    executor.print(container.id, 'stdout', 'hello');
    executor.print(container.id, 'stderr', 'warning');
    await clock.advance(30_000);
    executor.exit(container.id, 0);
    await clock.until('settled on the payer', () => payer.services.jobs.getJob(id)!.status === 'settled', 30_000);
    await clock.until('settled on the host', () => host.services.jobs.getJob(id)?.status === 'settled', 30_000);
    const view = payer.services.jobs.getJob(id)!;
    assert.equal(view.exit_code, 0);
    const cost = BigInt(view.cost!);
    assert.isTrue(cost > 0n && cost <= 10n * CREDIT, `cost ${cost}`);
    assert.deepEqual(
      view.output_tail.map((l) => [l.stream, l.text]),
      [
        ['stdout', 'hello'],
        ['stderr', 'warning'],
      ],
    );
    // The host has the cost less the burn; the payer's bid is released; the burn is counted.
    const state = host.chain.state;
    assert.equal(state.account(H.publicKey).balance, cost - burnOf(cost));
    assert.equal(state.account(P.publicKey).locked_bids, 0n);
    assert.equal(state.supply().burned - before, burnOf(cost));
    assert.equal(state.account(P.publicKey).balance, state.supply().emitted - cost);
    assert.lengthOf(executor.containers, 0, 'the ended container is removed');
  } finally {
    await m.stop();
  }
});

test('jobs: a job that ends at once still pays one second of its rate; the payer signs it', async () => {
  const clock = testScheduler();
  const executor = new FakeExecutor(clock);
  const m = await mesh(clock, [{ key: H, jobs: { executor, policy: POLICY } }]);
  try {
    const id = fromHex((await m.payer.services.jobs.bidJob(request())).job_id, 32);
    await clock.until('the host runs it', () => executor.running.length === 1, 30_000);
    executor.exit(executor.running[0]!.id, 0);
    await clock.until('settled', () => m.payer.services.jobs.getJob(id)!.status === 'settled', 30_000);
    // 10 credits for 60 s: one second is a sixtieth, rounded down.
    assert.equal(m.payer.services.jobs.getJob(id)!.cost, ((10n * CREDIT) / 60n).toString());
    assert.equal(m.payer.services.jobs.getJob(id)!.cost, settleCost(10n * CREDIT, 60, 0).toString());
  } finally {
    await m.stop();
  }
});

test('jobs: while no host fits, the job waits and lists every reason of every host; past the queue time it fails', async () => {
  const clock = testScheduler();
  const small = new FakeExecutor(clock);
  const down = new FakeExecutor(clock);
  down.ready = false;
  const m = await mesh(clock, [
    { key: H, jobs: { executor: small, policy: { allowImages: ['localhost/busybox'], cpuCores: 2, memMb: 2048 } } },
    { key: G, jobs: { executor: down, policy: { allowImages: ['docker.io/library/'], cpuCores: 8, memMb: 8192 } } },
  ]);
  try {
    const { job_id } = await m.payer.services.jobs.bidJob(request({ cpuCores: 4 }));
    const id = fromHex(job_id, 32);
    await clock.until('both hosts answered', () => m.payer.services.jobs.getJob(id)!.refusals.length === 2, 30_000);
    const view = m.payer.services.jobs.getJob(id)!;
    assert.equal(view.status, 'pending');
    const reasons = Object.fromEntries(view.refusals.map((r) => [r.host, r.reason]));
    assert.equal(reasons[toHex(H.publicKey)], 'needs 4 cores, 2 free');
    assert.equal(reasons[toHex(G.publicKey)], 'no container runtime; image not allowed: localhost/busybox:test');
    await clock.until('the queue time is up', () => m.payer.services.jobs.getJob(id)!.status.startsWith('failed'), 120_000);
    assert.match(m.payer.services.jobs.getJob(id)!.status, /^failed: no host took the job within 60 s \(2 hosts asked\)$/);
    assert.lengthOf(small.containers, 0);
  } finally {
    await m.stop();
  }
});

test('jobs: a heartbeat-billed job is reserved on its host first, billed every interval, and stopped when the cell cannot cover the next', async () => {
  const clock = testScheduler();
  const executor = new FakeExecutor(clock);
  const m = await mesh(clock, [{ key: H, jobs: { executor, policy: POLICY, heartbeatMs: 30_000 } }]);
  try {
    const { payer } = m;
    const host = m.hosts[0]!;
    // 59 s is one interval: the one heartbeat takes the whole bid, and the cell cannot cover a second.
    const { job_id } = await payer.services.jobs.bidJob(request({ billing: 'heartbeat', durationSecs: 59, bid: 6n * CREDIT }));
    const id = fromHex(job_id, 32);
    assert.equal(payer.services.jobs.getJob(id)!.host, toHex(H.publicKey), 'the bid names the host that reserved');
    await clock.until('it runs', () => executor.running.length === 1, 30_000);
    await clock.until('the heartbeat is mined', () => payer.services.jobs.getJob(id)!.heartbeats!.count === 1, 40_000);
    assert.equal(payer.services.jobs.getJob(id)!.heartbeats!.paid, String(6n * CREDIT));
    await clock.until('the host stops it', () => host.services.jobs.getJob(id)!.status.startsWith('failed'), 10_000);
    assert.equal(host.services.jobs.getJob(id)!.status, 'failed: the cell cannot cover the next heartbeat');
    assert.isAtMost(clock.now() - host.services.jobs.getJob(id)!.started_at! * 1000, 45_000, 'stopped well before its duration');
    const state = host.chain.state;
    assert.equal(state.account(H.publicKey).balance, 6n * CREDIT - burnOf(6n * CREDIT));
    assert.equal(state.account(P.publicKey).locked_bids, 0n);
    await clock.until('the payer sees it paid', () => payer.services.jobs.getJob(id)!.cost === String(6n * CREDIT), 30_000);
  } finally {
    await m.stop();
  }
});

test('jobs: a heartbeat-billed bid with no host that fits is refused with every reason and locks nothing', async () => {
  const clock = testScheduler();
  const m = await mesh(clock, [{ key: H, jobs: { executor: new FakeExecutor(clock), policy: POLICY } }]);
  try {
    await rejectsAsync(
      () => m.payer.services.jobs.bidJob(request({ billing: 'heartbeat', memMb: 4096 })),
      JobError,
      'no-host',
      /needs 4096 MiB, 2048 MiB free/,
    );
    assert.equal(m.payer.chain.state.account(P.publicKey).locked_bids, 0n);
    assert.lengthOf(m.payer.services.jobs.listJobs(), 0);
  } finally {
    await m.stop();
  }
});

test('jobs: the memory limit, the duration and a stop each end the job with a failed status that says so, and it still settles', async () => {
  const clock = testScheduler();
  const executor = new FakeExecutor(clock);
  const m = await mesh(clock, [{ key: H, jobs: { executor, policy: { ...POLICY, cpuCores: 4 } } }]);
  try {
    const { payer } = m;
    const oom = fromHex((await payer.services.jobs.bidJob(request({ memMb: 16 }))).job_id, 32);
    const late = fromHex((await payer.services.jobs.bidJob(request({ durationSecs: 20 }))).job_id, 32);
    const stopped = fromHex((await payer.services.jobs.bidJob(request())).job_id, 32);
    await clock.until('all three run', () => executor.running.length === 3, 30_000);
    const containerOf = (id: Uint8Array): string => executor.running.find((c) => c.labels['mesh.job'] === toHex(id))!.id;
    executor.exit(containerOf(oom), 137, true);
    assert.isTrue(await payer.services.jobs.stopJob(toHex(stopped)));
    await clock.until('the duration passes', () => payer.services.jobs.getJob(late)!.status.startsWith('failed'), 30_000);
    await clock.until('all are settled', () => [oom, late, stopped].every((id) => payer.services.jobs.getJob(id)!.cost !== null), 30_000);
    assert.equal(payer.services.jobs.getJob(oom)!.status, 'failed: memory limit of 16 MiB hit (exit 137)');
    assert.equal(payer.services.jobs.getJob(late)!.status, 'failed: killed at its duration of 20 s');
    assert.equal(payer.services.jobs.getJob(late)!.cost, String(10n * CREDIT), 'a job killed at its duration pays the whole bid');
    assert.equal(payer.services.jobs.getJob(stopped)!.status, 'failed: stopped by the payer');
    assert.isFalse(await payer.services.jobs.stopJob('f'.repeat(64)));
  } finally {
    await m.stop();
  }
});

test('jobs: a host restarted while its job runs takes it up again and settles it once', async () => {
  const clock = testScheduler();
  const executor = new FakeExecutor(clock);
  const store = new MemoryStore();
  const m = await mesh(clock, [{ key: H, jobs: { executor, policy: POLICY, store } }]);
  try {
    const { payer } = m;
    const id = fromHex((await payer.services.jobs.bidJob(request())).job_id, 32);
    await clock.until('it runs', () => payer.services.jobs.getJob(id)!.status === 'running', 30_000);
    // An orphan: a container of this host that no job knows.
    await executor.run({
      name: 'stray',
      image: 'x',
      cmd: null,
      env: [],
      cpuCores: 1,
      memMb: 4,
      gpus: 0,
      labels: { 'mesh.job': 'a'.repeat(64), 'mesh.node': toHex(H.publicKey), 'mesh.network': payer.chain.params.network },
    });
    const host = m.hosts[0]!;
    await host.stop();
    const restarted = await startNode(m.bus, host.chain, H, clock, { jobs: { executor, policy: POLICY, store }, capacityIntervalMs: 5_000 });
    m.hosts[0] = restarted;
    assert.lengthOf(executor.running, 1, 'the orphan is removed, the job goes on');
    executor.exit(executor.running[0]!.id, 0);
    await clock.until(
      'settled',
      () => payer.services.jobs.getJob(id)!.status === 'settled' && restarted.services.jobs.getJob(id)!.status === 'settled',
      30_000,
    );
    const settles = restarted.chain.state.account(H.publicKey).balance;
    const cost = BigInt(payer.services.jobs.getJob(id)!.cost!);
    assert.equal(settles, cost - burnOf(cost), 'paid once');
  } finally {
    await m.stop();
  }
});

test('jobs: the manual settlement checks the job, the signature and the cost', async () => {
  const clock = testScheduler();
  const executor = new FakeExecutor(clock);
  const m = await mesh(clock, [{ key: H, jobs: { executor, policy: POLICY } }]);
  try {
    const host = m.hosts[0]!;
    const id = fromHex((await m.payer.services.jobs.bidJob(request())).job_id, 32);
    await clock.until('it runs', () => executor.running.length === 1, 30_000);
    const network = m.payer.chain.params.network;
    const sign = (cost: bigint, signer = P): Promise<Uint8Array> => signer.sign(settlementBytes(network, id, H.publicKey, cost));
    await rejectsAsync(async () => host.services.jobs.settleJob(fromHex('ab'.repeat(32), 32), 1n, await sign(1n)), JobError, 'unknown-job');
    await rejectsAsync(async () => host.services.jobs.settleJob(id, 1n, await sign(1n, G)), JobError, 'bad-signature');
    await rejectsAsync(async () => host.services.jobs.settleJob(id, 1n, await sign(2n)), JobError, 'bad-signature');
    await rejectsAsync(async () => host.services.jobs.settleJob(id, 11n * CREDIT, await sign(11n * CREDIT)), JobError, 'cost-exceeds-bid');
    await rejectsAsync(async () => host.services.jobs.settleJob(id, 1n, await sign(1n)), JobError, 'wrong-state');
    await rejectsAsync(async () => m.payer.services.jobs.settleJob(id, 1n, await sign(1n)), JobError, 'wrong-role');
    await clock.until('the bid is mined', () => m.payer.chain.state.job(id) !== undefined, 10_000);
    await rejectsAsync(() => m.payer.services.jobs.expireJob(id), JobError, 'wrong-state', /runs on its host: stop it first/);
  } finally {
    await m.stop();
  }
});

test("jobs: a launch failure on its host fails the job with the engine's words, and a settlement of 0 frees the bid at once", async () => {
  const clock = testScheduler();
  const broken = new FakeExecutor(clock);
  broken.failRun = new ExecutorError(
    'start-failed',
    'runc create failed: unable to start container process: error setting rlimit type 7: operation not permitted',
  );
  const m = await mesh(clock, [{ key: H, jobs: { executor: broken, policy: POLICY } }]);
  try {
    const { payer } = m;
    const free = (): bigint => freeBalance(payer.chain.state.account(P.publicKey), payer.chain.tip.height);
    const id = fromHex((await payer.services.jobs.bidJob(request())).job_id, 32);
    await clock.until('the payer hears of the failure', () => payer.services.jobs.getJob(id)!.status.startsWith('failed'), 60_000);
    const view = payer.services.jobs.getJob(id)!;
    assert.equal(view.status, 'failed: runc create failed: unable to start container process: error setting rlimit type 7: operation not permitted');
    assert.equal(view.host, toHex(H.publicKey));
    assert.lengthOf(broken.containers, 0);
    await clock.until('the bid is free again', () => payer.chain.state.job(id) === undefined, 30_000);
    assert.equal(payer.chain.state.account(P.publicKey).locked_bids, 0n);
    assert.equal(free(), payer.chain.state.account(P.publicKey).balance, 'nothing was paid');
    assert.equal(payer.services.jobs.getJob(id)!.cost, '0');
  } finally {
    await m.stop();
  }
});

test('jobs: a host runs a job once its bid is in a block and its acceptance sent, and the payer cannot take the bid back while it runs', async () => {
  const clock = testScheduler();
  const seen: { bidInBlock: boolean; acceptancePooled: boolean }[] = [];
  const executor = new FakeExecutor(clock);
  const m = await mesh(clock, [{ key: H, jobs: { executor, policy: POLICY } }]);
  const host = m.hosts[0]!;
  const accepts: Uint8Array[] = [];
  const submit = host.own.submit.bind(host.own);
  host.own.submit = async (body) => {
    const sent = await submit(body);
    if (body.kind === 'JobAccept') accepts.push(sent.id);
    return sent;
  };
  const run = executor.run.bind(executor);
  executor.run = async (spec) => {
    const job = host.chain.state.job(fromHex(spec.labels['mesh.job']!, 32));
    seen.push({ bidInBlock: job !== undefined, acceptancePooled: job?.accepted === true || accepts.some((id) => host.mempool.has(id)) });
    return run(spec);
  };
  try {
    const id = fromHex((await m.payer.services.jobs.bidJob(request())).job_id, 32);
    await clock.until('the host runs it', () => executor.running.length === 1, 30_000);
    assert.deepEqual(seen, [{ bidInBlock: true, acceptancePooled: true }], 'the bid was in a block and the JobAccept sent before the container ran');
    await clock.until('the acceptance is in a block', () => m.payer.chain.state.job(id)?.accepted === true, 10_000);
    assert.equal(toHex(m.payer.chain.state.job(id)!.host!), toHex(H.publicKey));
    await rejectsAsync(() => m.payer.services.jobs.expireJob(id), JobError, 'wrong-state', /runs on its host/);
    assert.lengthOf(executor.running, 1, 'it runs on');
  } finally {
    await m.stop();
  }
});

test('jobs: a host whose acceptance never reaches a block stops the job before the payer could take the bid back', async () => {
  const clock = testScheduler();
  const executor = new FakeExecutor(clock);
  const m = await mesh(clock, [{ key: H, jobs: { executor, policy: POLICY } }]);
  const host = m.hosts[0]!;
  // A censored acceptance: the host signs it, and no block ever takes it.
  const submit = host.own.submit.bind(host.own);
  host.own.submit = async (body) => (body.kind === 'JobAccept' ? { id: new Uint8Array(32).fill(7) } : submit(body)) as Awaited<ReturnType<typeof submit>>;
  try {
    const id = fromHex((await m.payer.services.jobs.bidJob(request({ durationSecs: 120 }))).job_id, 32);
    await clock.until('the host runs it', () => executor.running.length === 1, 30_000);
    const bidHeight = m.payer.chain.state.job(id)!.bid_height;
    await clock.until('the host stops it', () => executor.running.length === 0, 120_000);
    assert.isBelow(host.chain.tip.height, bidHeight + UNACCEPTED_EXPIRY_BLOCKS, 'stopped before the payer could take the bid back');
    assert.isAtLeast(host.chain.tip.height, bidHeight + UNACCEPTED_EXPIRY_BLOCKS - ACCEPT_MARGIN_BLOCKS);
    await clock.until('the host records why', () => host.services.jobs.getJob(id)?.status.startsWith('failed') === true, 30_000);
    assert.match(host.services.jobs.getJob(id)!.status, /acceptance did not reach a block/);
  } finally {
    await m.stop();
  }
});

test('jobs: the atlas shows docker only while the engine answers, gpu only when it gives GPUs, and the real running_jobs', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const executor = new FakeExecutor(clock);
  const chain = await openChain();
  await mine(chain, P, 3);
  const hostChain = await copyChain(chain);
  // Self-tags are advertised only while a node mines.
  const host = await startNode(bus, hostChain, H, clock, { mine: true, jobs: { executor, policy: POLICY }, capacityIntervalMs: 5_000 });
  const payer = await startNode(bus, chain, P, clock, { mine: true, capacityIntervalMs: 5_000 });
  const entry = (): { tags: string[]; running_jobs: number } | undefined => payer.services.signals.atlas().find((e) => e.node_id === toHex(H.publicKey));
  try {
    await clock.until('docker is advertised', () => entry()?.tags.includes('docker') === true, 20_000);
    assert.notInclude(entry()!.tags, 'gpu');
    executor.gpus = 1;
    await clock.until('gpu is advertised', () => entry()?.tags.includes('gpu') === true, 20_000);
    await payer.services.jobs.bidJob(request());
    await clock.until('one job runs', () => entry()?.running_jobs === 1, 30_000);
    executor.ready = false;
    await clock.until('docker is withdrawn', () => entry()?.tags.includes('docker') === false, 20_000);
    assert.notInclude(entry()!.tags, 'gpu');
  } finally {
    await payer.stop();
    await host.stop();
  }
});

test('jobs: a bid stopped before any host accepted it is back in the free balance 10 blocks after it, taken back by the payer', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const chain = await openChain();
  await mine(chain, P, 3);
  // Blocks are made here, not by the node, so the test counts them.
  const payer = await startNode(bus, chain, P, clock, { jobs: { queueMs: 600_000 } });
  try {
    const free = (): bigint => freeBalance(chain.state.account(P.publicKey), chain.tip.height);
    const before = free();
    const id = fromHex((await payer.services.jobs.bidJob(request())).job_id, 32);
    await mine(chain, P, 1, payer.mempool);
    const bidHeight = chain.tip.height;
    assert.equal(chain.state.account(P.publicKey).locked_bids, 10n * CREDIT);
    assert.isTrue(await payer.services.jobs.stopJob(toHex(id)));
    assert.equal(payer.services.jobs.getJob(id)!.status, 'failed: cancelled by the payer before a host took it');
    await rejectsAsync(() => payer.services.jobs.expireJob(id), JobError, 'not-expired', new RegExp(`from height ${bidHeight + 10}, 9 blocks from now`));
    while (chain.state.job(id) !== undefined) {
      assert.isBelow(chain.tip.height, bidHeight + 10, 'released within 10 blocks');
      await mine(chain, P, 1, payer.mempool);
      await clock.advance(10);
    }
    assert.equal(chain.tip.height, bidHeight + 10);
    assert.equal(chain.state.account(P.publicKey).locked_bids, 0n);
    assert.equal(free(), before + 11n * 1_000n * CREDIT, 'all of it free, with the rewards of the 11 blocks mined meanwhile');
    await rejectsAsync(() => payer.services.jobs.expireJob(id), JobError, 'wrong-state');
  } finally {
    await payer.stop();
  }
});

test('jobs: the payer signs no more than the job can have earned, and a report that beats the answer to the offer leaves nothing stuck', async () => {
  const clock = testScheduler();
  // G is a host in the atlas whose jobs protocol is replaced below by a liar's.
  const m = await mesh(clock, [{ key: G, jobs: {} }]);
  try {
    const { payer } = m;
    const rogue = m.bus.members.get(toHex(G.publicKey))!;
    const answers: { placed_here: boolean; payer_sig: Uint8Array | null }[] = [];
    const report = async (jobId: Uint8Array, state: ReportState): Promise<void> => {
      const bytes = await rogue.request(P.publicKey, JOB_RPC.report, encode(reportCodec, { job_id: jobId, state }));
      answers.push(decode(reportAnswerCodec, bytes));
    };
    // 1. Taken, then at once "ended after its whole duration, pay me the bid".
    rogue.serve(JOB_RPC.offer, async ({ data }) => {
      const jobId = decodeTx(decode(offerCodec, data).bid_tx!).id;
      clock.setTimeout(
        () => void report(jobId, { state: 'Ended', container_id: 'x', started_ms: 0, finished_ms: 60_000, exit_code: 0, reason: null, cost: 10n * CREDIT }),
        1_000,
      );
      return encode(offerAnswerCodec, { answer: 'Taken' });
    });
    const greedy = fromHex((await payer.services.jobs.bidJob(request())).job_id, 32);
    await clock.until('the liar reported', () => answers.length === 1, 30_000);
    assert.isTrue(answers[0]!.placed_here);
    assert.isNull(answers[0]!.payer_sig, 'a whole bid after a second is not signed');
    assert.isNull(payer.services.jobs.getJob(greedy)!.cost);
    // 2. The host says it could not start the job before it answers the offer with Taken.
    rogue.serve(JOB_RPC.offer, async ({ data }) => {
      const jobId = decodeTx(decode(offerCodec, data).bid_tx!).id;
      await report(jobId, { state: 'NotStarted', reason: 'no room after all' });
      return encode(offerAnswerCodec, { answer: 'Taken' });
    });
    const confused = fromHex((await payer.services.jobs.bidJob(request())).job_id, 32);
    await clock.until('the report came first', () => answers.length === 2, 30_000);
    await clock.advance(1_000);
    const view = payer.services.jobs.getJob(confused)!;
    assert.isNull(view.host, 'not placed with the host that said it could not start it');
    assert.equal(view.status, 'pending');
    assert.equal(view.refusals[0]?.reason, 'no room after all');
  } finally {
    await m.stop();
  }
});

test('jobs: a host that took a job but never starts it loses it to the next host', async () => {
  const clock = testScheduler();
  const good = new FakeExecutor(clock);
  const m = await mesh(clock, [
    { key: G, jobs: {} },
    { key: H, jobs: { executor: good, policy: POLICY } },
  ]);
  try {
    const rogue = m.bus.members.get(toHex(G.publicKey))!;
    let offers = 0;
    rogue.serve(JOB_RPC.offer, async () => {
      offers++;
      return encode(offerAnswerCodec, { answer: 'Taken' });
    });
    // H has no engine at first, so the rogue is the one that takes the job.
    good.ready = false;
    await m.hosts[1]!.services.jobs.checkEngine();
    const id = fromHex((await m.payer.services.jobs.bidJob(request())).job_id, 32);
    await clock.until('the rogue took it', () => m.payer.services.jobs.getJob(id)!.host === toHex(G.publicKey), 30_000);
    good.ready = true;
    await m.hosts[1]!.services.jobs.checkEngine();
    await clock.until('the honest host runs it', () => good.running.length === 1, START_WAIT_MS + 60_000);
    await clock.until('the payer hears it runs', () => m.payer.services.jobs.getJob(id)!.status === 'running', 10_000);
    assert.equal(m.payer.services.jobs.getJob(id)!.host, toHex(H.publicKey));
    assert.equal(offers, 1);
    assert.include(m.payer.services.jobs.getJob(id)!.refusals.find((r) => r.host === toHex(G.publicKey))!.reason, 'did not start it within 300 s');
  } finally {
    await m.stop();
  }
});

test('jobs: terms no host takes are refused at the bid: a heartbeat worth nothing, a run longer than the bid stays locked', async () => {
  const clock = testScheduler();
  const m = await mesh(clock, [{ key: H, jobs: { executor: new FakeExecutor(clock), policy: POLICY } }]);
  try {
    await rejectsAsync(
      () => m.payer.services.jobs.bidJob(request({ billing: 'heartbeat', durationSecs: 600, bid: 19n })),
      JobError,
      'bad-terms',
      /the bid of 0\.000000000000000019 credits pays nothing per heartbeat/,
    );
    // 1,440 blocks of 100 ms, less the margin, is 138 s on the test chain.
    await rejectsAsync(() => m.payer.services.jobs.bidJob(request({ durationSecs: 139 })), JobError, 'bad-terms', /longer than a bid stays locked/);
    assert.lengthOf(m.payer.services.jobs.listJobs(), 0);
    assert.equal(m.payer.chain.state.account(P.publicKey).locked_bids, 0n);
  } finally {
    await m.stop();
  }
});

test('jobs: a host answers malformed offers without running anything: bytes that do not decode fail, a bad spec or bid is refused with its reason', async () => {
  const clock = testScheduler();
  const executor = new FakeExecutor(clock);
  const m = await mesh(clock, [{ key: H, jobs: { executor, policy: POLICY } }]);
  try {
    const asker = m.bus.members.get(toHex(P.publicKey))!;
    const offer = async (bytes: Uint8Array): Promise<string[]> => {
      const answer = decode(offerAnswerCodec, await asker.request(H.publicKey, JOB_RPC.offer, bytes));
      return answer.answer === 'Refused' ? answer.reasons : ['taken'];
    };
    await asker.request(H.publicKey, JOB_RPC.offer, Uint8Array.of(1, 2, 3)).then(
      () => assert.fail('garbage was answered'),
      (error: Error) => assert.match(error.message, /jobs\.offer/),
    );
    assert.match((await offer(encode(offerCodec, { spec: Uint8Array.of(9, 9), bid_tx: null })))[0]!, /the spec does not decode/);
    const nul = encodeSpec(specOf({ ...request(), cmd: ['a\0b'] }));
    assert.deepEqual(await offer(encode(offerCodec, { spec: nul, bid_tx: null })), ['the spec holds a NUL character']);
    const spec = encodeSpec(specOf(request()));
    assert.match((await offer(encode(offerCodec, { spec, bid_tx: Uint8Array.of(7) })))[0]!, /the bid does not decode/);
    // A bid signed by someone else than the peer offering it.
    const foreign = await signTx(
      {
        kind: 'JobBid',
        sender: G.publicKey,
        nonce: 1,
        spec_hash: specHash(m.payer.chain.params.network, spec),
        bid: 1n,
        duration_secs: 60,
        cpu_cores: 1,
        mem_mb: 64,
        billing: 0,
        host: null,
      },
      G,
      m.payer.chain.params.network,
    );
    assert.deepEqual(await offer(encode(offerCodec, { spec, bid_tx: foreign.bytes })), ['the bid is not signed by the peer offering it']);
    assert.lengthOf(executor.containers, 0);
  } finally {
    await m.stop();
  }
});
