import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { CapabilityError } from '../capabilities/errors.ts';
import type { Allowance } from '../capabilities/token.ts';
import { encodeToken, linkId, signLink } from '../capabilities/token.ts';
import { copyChain, key, mine, openChain } from '../chain/testnet.test-util.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { CREDIT } from '../encoding/amount.ts';
import { decode, encode } from '../encoding/codec.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { FakeExecutor } from '../jobs/executor.test-util.ts';
import type { JobsConfig } from '../jobs/market.ts';
import { billingCode, encodeSpec, specHash, specOf } from '../jobs/spec.ts';
import type { JobRequest } from '../jobs/types.ts';
import { JOB_RPC, offerAnswerCodec, offerCodec } from '../jobs/wire.ts';
import { burnOf } from '../ledger/params.ts';
import { InvalidAddressError, RemoteError } from '../net/errors.ts';
import { MemoryBus, type MemoryNetwork } from '../net/memory.test-util.ts';
import type { FullNode } from '../node/node.test-util.ts';
import { startNode } from '../node/node.test-util.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import type { DeployRequest } from './caller.ts';
import { PlacementError, reasonCode } from './errors.ts';
import { deployRequestCodec, killRequestCodec, PLACEMENT_RPC, type PlacementAnswer, placementAnswerCodec } from './wire.ts';

const P = key(1); // the caller, which pays and produces the blocks
const H = key(2); // the target host
const C = key(3); // a third node

// The host allows no image: directed placement needs none.
const POLICY = { allowImages: [], cpuCores: 2, memMb: 2048 };
const ALL: Allowance = { commands: ['deploy', 'kill'], cpu_cores: null, mem_mb: null, duration_secs: null, bid: null, images: null, nodes: null };

function deploy(overrides: Partial<DeployRequest> = {}): DeployRequest {
  return {
    nodeId: H.publicKey,
    image: 'localhost/busybox:test',
    cmd: ['sleep', '600'],
    cpuCores: 1,
    memMb: 64,
    durationSecs: 600,
    bid: 20n * CREDIT,
    hint: null,
    grant: null,
    ...overrides,
  };
}

interface Mesh {
  /** The memory network of a node, to speak the protocols by hand. */
  readonly network: (k: SigningKey) => MemoryNetwork;
  readonly clock: Scheduler;
  readonly executor: FakeExecutor;
  readonly caller: FullNode;
  readonly host: FullNode;
  readonly third: FullNode;
  readonly stop: () => Promise<void>;
}

/** A caller with credits that produces blocks, a host with a fake engine, and a third node; `linked: false` leaves caller and host unconnected. */
async function mesh(options: { hostJobs?: JobsConfig; linked?: boolean } = {}): Promise<Mesh> {
  const clock = testScheduler();
  const executor = new FakeExecutor(clock);
  const bus = new MemoryBus(clock);
  const chain = await openChain();
  await mine(chain, P, 3);
  const host = await startNode(bus, await copyChain(chain), H, clock, { jobs: { executor, policy: POLICY, heartbeatMs: 30_000, ...options.hostJobs } });
  const third = await startNode(bus, await copyChain(chain), C, clock, {});
  const caller = await startNode(bus, chain, P, clock, { mine: true, jobs: {} });
  // Unlinked, the caller still hears the host's transactions through the third node.
  if (options.linked === false) bus.unlink(bus.members.get(toHex(P.publicKey))!, bus.members.get(toHex(H.publicKey))!);
  return {
    network: (k) => bus.members.get(toHex(k.publicKey))!,
    clock,
    executor,
    caller,
    host,
    third,
    stop: async () => {
      for (const n of [caller, host, third]) await n.stop();
    },
  };
}

/** Runs `pending` while the manual clock moves, and resolves with its outcome. */
async function settle<T>(m: Mesh, pending: Promise<T>, what: string): Promise<{ value?: T; error?: unknown }> {
  let outcome: { value?: T; error?: unknown } | undefined;
  pending.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  await m.clock.until(what, () => outcome !== undefined, 120_000);
  return outcome!;
}

async function trustCaller(m: Mesh, subject: SigningKey = P): Promise<void> {
  const tx = await m.host.own.submit({ kind: 'TrustGrant', subject: subject.publicKey, trusted: true });
  await m.clock.until('the trust is mined', () => m.host.chain.state.trust(H.publicKey, subject.publicKey) !== undefined && !m.host.mempool.has(tx.id), 30_000);
}

test('placement: a caller the host trusts deploys a job off the allow-list; it runs, is billed by heartbeats and is killed by mesh-kill', async () => {
  const m = await mesh();
  try {
    await trustCaller(m);
    const { value, error } = await settle(m, m.caller.services.placement.meshDeploy(deploy()), 'the deploy answers');
    assert.isUndefined(error, String(error));
    const jobId = value!.job_id;
    const id = fromHex(jobId, 32);
    assert.lengthOf(m.executor.running, 1);
    assert.equal(m.executor.running[0]!.labels['mesh.job'], jobId);
    assert.equal(m.caller.services.jobs.getJob(id)!.status, 'running');
    assert.equal(m.caller.services.jobs.getJob(id)!.billing, 'heartbeat');
    assert.equal(m.host.services.jobs.getJob(id)!.host, toHex(H.publicKey));
    await m.clock.until('two heartbeats are mined', () => (m.caller.services.jobs.getJob(id)!.heartbeats?.count ?? 0) >= 2, 90_000);
    const paid = BigInt(m.caller.services.jobs.getJob(id)!.heartbeats!.paid);
    const rate = (20n * CREDIT) / 20n; // 600 s is 20 intervals
    assert.equal(paid, rate * BigInt(m.caller.services.jobs.getJob(id)!.heartbeats!.count));
    // A third node with no authority cannot kill it; the payer's own node can, and so can an admin.
    const denied = await settle(m, m.third.services.placement.meshKill({ nodeId: H.publicKey, jobId: id, grant: null }), 'the refusal');
    assert.instanceOf(denied.error, PlacementError);
    assert.equal((denied.error as PlacementError).code, 'untrusted');
    assert.equal((denied.error as PlacementError).status, 502);
    const killed = await settle(m, m.caller.services.placement.meshKill({ nodeId: H.publicKey, jobId: id, grant: null }), 'the kill answers');
    assert.isUndefined(killed.error, String(killed.error));
    await m.clock.until('the host reports it killed', () => m.caller.services.jobs.getJob(id)!.status.startsWith('failed'), 30_000);
    assert.equal(m.caller.services.jobs.getJob(id)!.status, 'failed: killed by directed placement (/mesh-kill)');
    assert.lengthOf(m.executor.running, 0);
    // The host holds every heartbeat, and the settlement of the time after the last, each less its burn.
    await m.clock.until('the job is settled', () => m.caller.services.jobs.getJob(id)!.cost !== null, 60_000);
    await m.clock.until('the host has the settlement', () => m.host.services.jobs.getJob(id)!.cost !== null, 60_000);
    const view = m.caller.services.jobs.getJob(id)!;
    const beats = BigInt(view.heartbeats!.count);
    const rest = BigInt(view.cost!) - beats * rate;
    assert.isTrue(rest >= 0n && rest <= rate, `the settlement after the heartbeats is ${rest}`);
    assert.equal(m.host.chain.state.account(H.publicKey).balance, beats * (rate - burnOf(rate)) + rest - burnOf(rest));
  } finally {
    await m.stop();
  }
});

test('placement: with no trust and no grant the host refuses as untrusted, and no credits are locked', async () => {
  const m = await mesh();
  try {
    const { error } = await settle(m, m.caller.services.placement.meshDeploy(deploy()), 'the refusal');
    assert.instanceOf(error, PlacementError);
    assert.equal((error as PlacementError).code, 'untrusted');
    assert.match((error as Error).message, /no admin trust/);
    assert.equal(m.caller.chain.state.account(P.publicKey).locked_bids, 0n);
    assert.lengthOf(m.caller.services.jobs.listJobs(), 0);
    assert.lengthOf(m.executor.containers, 0);
  } finally {
    await m.stop();
  }
});

test('placement: a token rooted at the host lets the caller deploy within it; widening its bounds, a foreign root and a revoked link are refused with their reasons', async () => {
  const m = await mesh();
  try {
    const network = m.caller.chain.params.network;
    const now = Math.floor(m.clock.now() / 1000);
    const window = { not_before: now - 10, expiry: now + 3600 };
    const nonce = (n: number): Uint8Array => new Uint8Array(16).fill(n);
    const rooted = await signLink(H, network, {
      audience: P.publicKey,
      allows: { ...ALL, mem_mb: 128, images: ['localhost/busybox'] },
      ...window,
      nonce: nonce(1),
    });
    const grant = encodeToken([rooted]);
    // Beyond the token's memory bound: refused before anything is paid.
    const wide = await settle(m, m.caller.services.placement.meshDeploy(deploy({ memMb: 256, grant })), 'the refusal');
    assert.equal((wide.error as PlacementError).code, 'not-allowed');
    const foreign = encodeToken([await signLink(C, network, { audience: P.publicKey, allows: ALL, ...window, nonce: nonce(2) })]);
    assert.equal(
      ((await settle(m, m.caller.services.placement.meshDeploy(deploy({ grant: foreign })), 'the refusal')).error as PlacementError).code,
      'untrusted',
    );
    const ok = await settle(m, m.caller.services.placement.meshDeploy(deploy({ grant })), 'the deploy');
    assert.isUndefined(ok.error, String(ok.error));
    assert.lengthOf(m.executor.running, 1);
    // The host revokes its link; once mined, the same token fails.
    const tx = await m.host.own.submit({ kind: 'RevokeCapability', token_id: linkId(network, rooted) });
    await m.clock.until(
      'the revocation is mined',
      () => m.host.chain.state.revoked(H.publicKey, linkId(network, rooted)) !== undefined && !m.host.mempool.has(tx.id),
      30_000,
    );
    const revoked = await settle(m, m.caller.services.placement.meshDeploy(deploy({ grant })), 'the refusal');
    assert.equal((revoked.error as PlacementError).code, 'revoked');
    assert.equal((revoked.error as PlacementError).status, 502);
    assert.lengthOf(m.executor.running, 1);
  } finally {
    await m.stop();
  }
});

test('placement: an unconnected host is a 504, dialled through a hint it is reached; this node and a malformed grant are 400', async () => {
  const m = await mesh({ linked: false });
  try {
    await trustCaller(m);
    const lost = await settle(m, m.caller.services.placement.meshDeploy(deploy()), 'the failure');
    assert.instanceOf(lost.error, PlacementError);
    assert.equal((lost.error as PlacementError).code, 'timeout');
    assert.equal((lost.error as PlacementError).status, 504);
    assert.equal(m.caller.chain.state.account(P.publicKey).locked_bids, 0n);
    await rejectsAsync(() => m.caller.services.placement.meshDeploy(deploy({ nodeId: P.publicKey })), PlacementError, 'self', /this node/);
    await rejectsAsync(() => m.caller.services.placement.meshDeploy(deploy({ grant: 'not a token' })), CapabilityError, 'malformed');
    await rejectsAsync(() => m.caller.services.placement.meshDeploy(deploy({ hint: `/memory/${toHex(C.publicKey)}` })), InvalidAddressError, 'invalid-address');
    const hinted = await settle(m, m.caller.services.placement.meshDeploy(deploy({ hint: `/memory/${toHex(H.publicKey)}` })), 'the deploy through the hint');
    assert.isUndefined(hinted.error, String(hinted.error));
    assert.lengthOf(m.executor.running, 1);
  } finally {
    await m.stop();
  }
});

test('placement: a host without room or without an engine refuses with no-room or container-error', async () => {
  const m = await mesh();
  try {
    await trustCaller(m);
    const big = await settle(m, m.caller.services.placement.meshDeploy(deploy({ memMb: 4096 })), 'the refusal');
    assert.equal((big.error as PlacementError).code, 'no-room');
    assert.match((big.error as Error).message, /needs 4096 MiB, 2048 MiB free/);
    m.executor.ready = false;
    await m.host.services.jobs.checkEngine();
    const down = await settle(m, m.caller.services.placement.meshDeploy(deploy()), 'the refusal');
    assert.equal((down.error as PlacementError).code, 'container-error');
    assert.equal(m.caller.chain.state.account(P.publicKey).locked_bids, 0n);
  } finally {
    await m.stop();
  }
});

test('placement: two deploys of the same spec at once from one caller each get their own room and both run', async () => {
  const m = await mesh();
  try {
    await trustCaller(m);
    const [first, second] = await Promise.all([
      settle(m, m.caller.services.placement.meshDeploy(deploy()), 'the first deploy'),
      settle(m, m.caller.services.placement.meshDeploy(deploy()), 'the second deploy'),
    ]);
    assert.isUndefined(first.error, String(first.error));
    assert.isUndefined(second.error, String(second.error));
    assert.notEqual(first.value!.job_id, second.value!.job_id);
    assert.lengthOf(m.executor.running, 2);
    // The host's two cores are now taken: a third is refused for room, and locks nothing.
    const locked = m.caller.chain.state.account(P.publicKey).locked_bids;
    const third = await settle(m, m.caller.services.placement.meshDeploy(deploy()), 'the third deploy');
    assert.equal((third.error as PlacementError).code, 'no-room');
    await m.clock.until('the pool is mined', () => m.caller.mempool.size === 0, 30_000);
    assert.isTrue(m.caller.chain.state.account(P.publicKey).locked_bids <= locked, 'the refused deploy locked nothing more');
    assert.lengthOf(m.caller.services.jobs.listJobs(), 2, 'the refused deploy signed no bid');
  } finally {
    await m.stop();
  }
});

test('placement: a kill by token is judged against the job itself: a token for other images cannot kill it, one for its image can', async () => {
  const m = await mesh();
  try {
    await trustCaller(m);
    const { value } = await settle(m, m.caller.services.placement.meshDeploy(deploy()), 'the deploy');
    const id = fromHex(value!.job_id, 32);
    const network = m.caller.chain.params.network;
    const now = Math.floor(m.clock.now() / 1000);
    const window = { not_before: now - 10, expiry: now + 3600 };
    const killOnly = { ...ALL, commands: ['kill'] };
    const elsewhere = encodeToken([
      await signLink(H, network, {
        audience: C.publicKey,
        allows: { ...killOnly, images: ['localhost/only-mine'] },
        ...window,
        nonce: new Uint8Array(16).fill(3),
      }),
    ]);
    const small = encodeToken([
      await signLink(H, network, { audience: C.publicKey, allows: { ...killOnly, mem_mb: 32 }, ...window, nonce: new Uint8Array(16).fill(4) }),
    ]);
    for (const grant of [elsewhere, small]) {
      const denied = await settle(m, m.third.services.placement.meshKill({ nodeId: H.publicKey, jobId: id, grant }), 'the refusal');
      assert.equal((denied.error as PlacementError).code, 'not-allowed');
    }
    assert.lengthOf(m.executor.running, 1, 'the job runs on');
    const fits = encodeToken([
      await signLink(H, network, {
        audience: C.publicKey,
        allows: { ...killOnly, images: ['localhost/busybox'], mem_mb: 64 },
        ...window,
        nonce: new Uint8Array(16).fill(5),
      }),
    ]);
    const killed = await settle(m, m.third.services.placement.meshKill({ nodeId: H.publicKey, jobId: id, grant: fits }), 'the kill');
    assert.isUndefined(killed.error, String(killed.error));
    await m.clock.until('the container is stopped', () => m.executor.running.length === 0, 30_000);
    const unknown = await settle(
      m,
      m.third.services.placement.meshKill({ nodeId: H.publicKey, jobId: new Uint8Array(32).fill(9), grant: fits }),
      'the refusal',
    );
    assert.equal((unknown.error as PlacementError).code, 'unknown-job');
  } finally {
    await m.stop();
  }
});

test('placement: a directed spec asking for GPUs or carrying an environment is refused, whoever sends it', async () => {
  const m = await mesh({ hostJobs: { policy: { ...POLICY } } });
  try {
    await trustCaller(m);
    const send = async (overrides: Partial<JobRequest>): Promise<PlacementAnswer> => {
      const spec = encodeSpec(
        specOf({
          image: 'localhost/busybox:test',
          cmd: null,
          env: [],
          cpuCores: 1,
          memMb: 64,
          durationSecs: 60,
          gpus: 0,
          bid: CREDIT,
          billing: 'heartbeat',
          ...overrides,
        }),
      );
      const bytes = await m.network(P).request(H.publicKey, PLACEMENT_RPC.deploy, encode(deployRequestCodec, { spec, bid: CREDIT, grant: null }));
      return decode(placementAnswerCodec, bytes);
    };
    assert.deepInclude(await send({ gpus: 1 }), { answer: 'Refused', reason: 'bad-request', detail: 'a directed job asks for no GPUs' });
    assert.deepInclude(await send({ env: [['LD_PRELOAD', '/x']] }), {
      answer: 'Refused',
      reason: 'bad-request',
      detail: 'a directed job carries no environment',
    });
    assert.deepInclude(await send({ billing: 'settle' }), { answer: 'Refused', reason: 'bad-request' });
    assert.deepEqual(await send({}), { answer: 'Done' });
  } finally {
    await m.stop();
  }
});

test('placement: trust withdrawn between the host holding room and the bid coming stops the job before it runs', async () => {
  const m = await mesh();
  try {
    await trustCaller(m);
    const request: JobRequest = {
      image: 'localhost/busybox:test',
      cmd: ['sleep', '60'],
      env: [],
      cpuCores: 1,
      memMb: 64,
      durationSecs: 60,
      gpus: 0,
      bid: CREDIT,
      billing: 'heartbeat',
    };
    const spec = encodeSpec(specOf(request));
    const held = decode(
      placementAnswerCodec,
      await m.network(P).request(H.publicKey, PLACEMENT_RPC.deploy, encode(deployRequestCodec, { spec, bid: CREDIT, grant: null })),
    );
    assert.deepEqual(held, { answer: 'Done' });
    const withdrawal = await m.host.own.submit({ kind: 'TrustGrant', subject: P.publicKey, trusted: false });
    await m.clock.until(
      'the withdrawal is mined',
      () => m.host.chain.state.trust(H.publicKey, P.publicKey) === undefined && !m.host.mempool.has(withdrawal.id),
      30_000,
    );
    const bid = await m.caller.own.submit({
      kind: 'JobBid',
      spec_hash: specHash(m.caller.chain.params.network, spec),
      bid: CREDIT,
      duration_secs: 60,
      cpu_cores: 1,
      mem_mb: 64,
      billing: billingCode('heartbeat'),
      host: H.publicKey,
    });
    const answer = decode(offerAnswerCodec, await m.network(P).request(H.publicKey, JOB_RPC.offer, encode(offerCodec, { spec, bid_tx: bid.bytes })));
    assert.equal(answer.answer, 'Refused');
    assert.match((answer as { reasons: string[] }).reasons.join(), /no longer authorised \(untrusted\)/);
    assert.lengthOf(m.executor.containers, 0);
  } finally {
    await m.stop();
  }
});

test("placement: a node id off the curve is refused by the caller's node (400)", async () => {
  const m = await mesh();
  try {
    const offCurve = fromHex(`${'ff'.repeat(31)}7f`, 32);
    const bad = await settle(m, m.caller.services.placement.meshDeploy(deploy({ nodeId: offCurve })), 'the refusal');
    assert.equal((bad.error as PlacementError).code, 'bad-node-id');
    assert.equal((bad.error as PlacementError).status, 400);
  } finally {
    await m.stop();
  }
});

test("placement: the host's handlers take bad bytes from a peer without harm: undecodable requests fail, a bad spec or grant is refused with its reason", async () => {
  const m = await mesh();
  try {
    const net = m.network(C);
    const ask = async (protocol: string, data: Uint8Array): Promise<PlacementAnswer> =>
      decode(placementAnswerCodec, await net.request(H.publicKey, protocol, data));
    for (const protocol of [PLACEMENT_RPC.deploy, PLACEMENT_RPC.kill]) {
      await rejectsAsync(() => net.request(H.publicKey, protocol, Uint8Array.of(1, 2, 3)), RemoteError, 'remote-failed', /placement/);
    }
    assert.deepInclude(await ask(PLACEMENT_RPC.deploy, encode(deployRequestCodec, { spec: Uint8Array.of(9, 9), bid: CREDIT, grant: null })), {
      answer: 'Refused',
      reason: 'bad-request',
    });
    const spec = encodeSpec(
      specOf({ image: 'localhost/busybox:test', cmd: null, env: [], cpuCores: 1, memMb: 64, durationSecs: 60, gpus: 0, bid: CREDIT, billing: 'heartbeat' }),
    );
    assert.deepInclude(await ask(PLACEMENT_RPC.deploy, encode(deployRequestCodec, { spec, bid: CREDIT, grant: 'mcap1.@@' })), {
      answer: 'Refused',
      reason: 'malformed',
    });
    assert.deepInclude(await ask(PLACEMENT_RPC.kill, encode(killRequestCodec, { job_id: new Uint8Array(32), grant: null })), {
      answer: 'Refused',
      reason: 'unknown-job',
    });
    assert.lengthOf(m.executor.containers, 0);
    // The host serves on.
    await trustCaller(m, C);
    assert.deepEqual(await ask(PLACEMENT_RPC.deploy, encode(deployRequestCodec, { spec, bid: CREDIT, grant: null })), { answer: 'Done' });
  } finally {
    await m.stop();
  }
});

test('placement: a reason this node does not know is answered as refused; its own codes never come from a host', () => {
  assert.equal(reasonCode('revoked'), 'revoked');
  assert.equal(reasonCode('something-newer'), 'refused');
  for (const local of ['self', 'bad-node-id', 'timeout']) assert.equal(reasonCode(local), 'refused');
});
