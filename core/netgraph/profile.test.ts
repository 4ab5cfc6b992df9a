// Node profiles: the record's codec, signature and bounds, the book's window, bound and expiry, the
// fabric's sums, and the node's gossip of profiles over the memory network. Runs on every runtime.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { key } from '../chain/testnet.test-util.ts';
import { decode, encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import type { AtlasEntry } from '../signal/types.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { ProfileError } from './errors.ts';
import { fabricStats, knownNodes } from './fabric.ts';
import {
  checkMeasurement,
  openProfile,
  PROFILE_LIMITS,
  PROFILES_TOPIC,
  type ProfileMeasurement,
  profileBodyCodec,
  profileJson,
  signProfile,
} from './profile.ts';
import { PROFILE_MAX_SKEW_S, PROFILE_TTL_S, ProfileBook } from './profile-book.ts';
import { NodeProfiles } from './profiles.ts';

const NETWORK = 'mesh-test';
const A = key(1);
const B = key(2);
const C = key(3);
const T0 = 1_800_000_000;

function measurement(overrides: Partial<ProfileMeasurement> = {}): ProfileMeasurement {
  return {
    measured_at: T0,
    cpu: { cores: 8, threads: 16, gflops_fp32: 250.5, mem_bw_gbps: 20.25 },
    gpus: [{ model: 'NVIDIA RTX 4090', backend: 'Cuda', vram_mb: 24_564, fp16_tflops: 82.6 }],
    memory: { total_mb: 32_000, available_mb: 20_000 },
    storage: { total_gb: 1000, free_gb: 400.5, read_mbps: 2000, write_mbps: 900 },
    llm: null,
    runtime: { os: 'linux', arch: 'x64', docker: true, gvisor: false, wasm: true },
    ...overrides,
  };
}

async function refusal(work: () => unknown, code: string): Promise<ProfileError> {
  try {
    await work();
  } catch (error) {
    assert.instanceOf(error, ProfileError);
    assert.equal((error as ProfileError).code, code, (error as Error).message);
    return error as ProfileError;
  }
  assert.fail(`expected ProfileError ${code}`);
}

test('profile: signed, it opens to the same body, and its JSON form has the spec fields with hex ids', async () => {
  const signed = await signProfile(measurement(), A, NETWORK);
  assert.equal(signed.nodeId, toHex(A.publicKey));
  const opened = await openProfile(signed.bytes, NETWORK);
  assert.deepEqual(opened.body, signed.body);
  assert.deepEqual(decode(profileBodyCodec, encode(profileBodyCodec, signed.body)), signed.body);
  const json = profileJson(opened);
  assert.deepEqual(Object.keys(json), ['node_id', 'measured_at', 'cpu', 'gpus', 'memory', 'storage', 'llm', 'runtime', 'signature']);
  assert.equal(json.node_id, toHex(A.publicKey));
  assert.match(json.signature, /^[0-9a-f]{128}$/);
  assert.deepEqual(json.gpus, measurement().gpus);
  // A nullable figure and an LLM figure survive the trip too.
  const other = await signProfile(
    measurement({ cpu: { cores: 2, threads: 2, gflops_fp32: null, mem_bw_gbps: null }, llm: { ref_model: 'llama-3-8b-q4', tokens_per_sec: 42.5 } }),
    B,
    NETWORK,
  );
  assert.deepEqual((await openProfile(other.bytes, NETWORK)).body, other.body);
});

test('profile: a flipped bit, another network or a body signed by someone else is refused as bad-signature; short or trailing bytes as malformed', async () => {
  const signed = await signProfile(measurement(), A, NETWORK);
  const flipped = signed.bytes.slice();
  flipped[39] = flipped[39]! ^ 1; // measured_at's last byte: still decodes, still in bounds
  await refusal(() => openProfile(flipped, NETWORK), 'bad-signature');
  await refusal(() => openProfile(signed.bytes, 'mesh-other'), 'bad-signature');
  const forged = signed.bytes.slice();
  forged.set(B.publicKey, 0); // B's id on A's signature
  const error = await refusal(() => openProfile(forged, NETWORK), 'bad-signature');
  assert.equal(error.verdict, 'reject');
  await refusal(() => openProfile(signed.bytes.subarray(0, 64), NETWORK), 'malformed');
  const longer = new Uint8Array(signed.bytes.length + 1);
  longer.set(signed.bytes.subarray(0, signed.bytes.length - 64));
  longer.set(signed.bytes.subarray(signed.bytes.length - 64), signed.bytes.length - 63);
  await refusal(() => openProfile(longer, NETWORK), 'malformed');
});

test('profile: bounds refuse negative, non-finite, too large and inconsistent figures, unknown backends and bad names', async () => {
  const gpu = measurement().gpus[0]!;
  const cases: [string, ProfileMeasurement, string][] = [
    ['no cores', measurement({ cpu: { ...measurement().cpu, cores: 0 } }), 'out-of-range'],
    ['fractional threads', measurement({ cpu: { ...measurement().cpu, threads: 1.5 } }), 'out-of-range'],
    ['negative gflops', measurement({ cpu: { ...measurement().cpu, gflops_fp32: -1 } }), 'out-of-range'],
    ['-0 gflops', measurement({ cpu: { ...measurement().cpu, gflops_fp32: -0 } }), 'out-of-range'],
    ['NaN bandwidth', measurement({ cpu: { ...measurement().cpu, mem_bw_gbps: NaN } }), 'out-of-range'],
    ['infinite free storage', measurement({ storage: { ...measurement().storage, free_gb: Infinity } }), 'out-of-range'],
    ['gflops above the maximum', measurement({ cpu: { ...measurement().cpu, gflops_fp32: PROFILE_LIMITS.gflops + 1 } }), 'out-of-range'],
    ['available above total', measurement({ memory: { total_mb: 100, available_mb: 101 } }), 'out-of-range'],
    ['free above total', measurement({ storage: { ...measurement().storage, free_gb: 1001 } }), 'out-of-range'],
    ['unknown backend', measurement({ gpus: [{ ...gpu, backend: 'cuda' }] }), 'out-of-range'],
    ['empty model', measurement({ gpus: [{ ...gpu, model: '' }] }), 'out-of-range'],
    ['model with a newline', measurement({ gpus: [{ ...gpu, model: 'a\nb' }] }), 'out-of-range'],
    ['os with a space', measurement({ runtime: { ...measurement().runtime, os: 'li nux' } }), 'out-of-range'],
    ['negative tokens', measurement({ llm: { ref_model: 'm', tokens_per_sec: -3 } }), 'out-of-range'],
    ['model name too long', measurement({ gpus: [{ ...gpu, model: 'x'.repeat(PROFILE_LIMITS.nameBytes + 1) }] }), 'malformed'],
    ['too many GPUs', measurement({ gpus: Array.from({ length: PROFILE_LIMITS.gpus + 1 }, () => gpu) }), 'malformed'],
  ];
  for (const [what, m, code] of cases) {
    const error = await refusal(() => signProfile(m, A, NETWORK), code);
    assert.equal(error.verdict, 'reject', what);
  }
  // The limits themselves are allowed.
  checkMeasurement(
    measurement({
      gpus: Array.from({ length: PROFILE_LIMITS.gpus }, () => ({ ...gpu, vram_mb: PROFILE_LIMITS.vramMb })),
      cpu: { cores: PROFILE_LIMITS.cores, threads: 1, gflops_fp32: 0, mem_bw_gbps: PROFILE_LIMITS.memBwGbps },
    }),
  );
});

test('profile book: the newest per node within the time window; expired profiles go; the least recently updated goes past the bound', async () => {
  const book = new ProfileBook({ maxNodes: 2 });
  const a1 = await signProfile(measurement(), A, NETWORK);
  const a2 = await signProfile(measurement({ measured_at: T0 + 10 }), A, NETWORK);
  book.offer(a1, T0);
  await refusal(() => book.offer(a1, T0), 'not-newer');
  book.offer(a2, T0 + 10);
  await refusal(() => book.offer(a1, T0 + 10), 'not-newer');
  assert.equal(book.get(a1.nodeId, T0 + 10), a2);

  const future = await signProfile(measurement({ measured_at: T0 + PROFILE_MAX_SKEW_S + 1 }), B, NETWORK);
  assert.equal((await refusal(() => book.offer(future, T0), 'future')).verdict, 'ignore');
  book.offer(future, T0 + 1); // within the skew now
  const stale = await signProfile(measurement({ measured_at: T0 - PROFILE_TTL_S }), C, NETWORK);
  assert.equal((await refusal(() => book.offer(stale, T0), 'stale')).verdict, 'ignore');
  assert.deepEqual(
    book.list(T0 + 10).map((p) => p.nodeId),
    [a2.nodeId, future.nodeId].sort(),
  );

  // A third node: A was updated first, so A goes.
  const c = await signProfile(measurement({ measured_at: T0 + 20 }), C, NETWORK);
  book.offer(c, T0 + 20);
  assert.sameMembers(
    book.list(T0 + 20).map((p) => p.nodeId),
    [future.nodeId, c.nodeId],
  );
  assert.isUndefined(book.get(a2.nodeId, T0 + 20));

  // A day after its measurement a profile is gone for good.
  assert.deepEqual(
    book.list(c.body.measured_at + PROFILE_TTL_S).map((p) => p.nodeId),
    [future.nodeId],
  );
  assert.equal(book.size, 1);
  assert.isUndefined(book.get(future.nodeId, future.body.measured_at + PROFILE_TTL_S));
  assert.equal(book.size, 0);
});

test("fabric stats: profiles where nodes have them, the atlas's cores for the others, sums and perf_score", async () => {
  const self = toHex(A.publicKey);
  const b = toHex(B.publicKey);
  const atlasOnly = 'ee'.repeat(32);
  const atlas: AtlasEntry[] = [
    { node_id: b, cpu_cores: 99, mem_mb: 1000, running_jobs: 0, last_seen_secs: T0, tags: [] },
    { node_id: atlasOnly, cpu_cores: 6, mem_mb: 1000, running_jobs: 0, last_seen_secs: T0, tags: [] },
  ];
  const profiles = [
    await signProfile(measurement(), A, NETWORK),
    await signProfile(
      measurement({
        cpu: { cores: 4, threads: 4, gflops_fp32: null, mem_bw_gbps: null },
        gpus: [
          { model: 'M2', backend: 'Metal', vram_mb: 16_000, fp16_tflops: null },
          { model: 'RX', backend: 'Rocm', vram_mb: 8_000, fp16_tflops: 0.4 },
        ],
        storage: { total_gb: 100, free_gb: 50.25, read_mbps: null, write_mbps: null },
        llm: { ref_model: 'llama', tokens_per_sec: 30 },
      }),
      B,
      NETWORK,
    ),
  ];
  const known = knownNodes(self, atlas, profiles);
  // The mesh block is netgraph's (stats.ts, tested there): passed through as it is.
  const mesh = { median_rtt_ms: 6.5, reachable_frac: 1, regions: 2 };
  const stats = fabricStats(known, atlas, profiles, mesh);
  assert.deepEqual(stats, {
    nodes: 3,
    cpu_cores: 8 + 4 + 6, // B's profile wins over its capacity broadcast
    cpu_gflops: 250.5,
    gpus: 3,
    gpu_vram_mb: 24_564 + 16_000 + 8_000,
    gpu_tflops: 83,
    tokens_per_sec: 30,
    storage_free_gb: 450.75,
    perf_score: 250.5 + 83_000,
    mesh,
  });
  const alone = knownNodes(self, [], []);
  const nowhere = { median_rtt_ms: null, reachable_frac: null, regions: 1 };
  assert.deepEqual(fabricStats(alone, [], [], nowhere), {
    nodes: 1,
    cpu_cores: 0,
    cpu_gflops: 0,
    gpus: 0,
    gpu_vram_mb: 0,
    gpu_tflops: 0,
    tokens_per_sec: 0,
    storage_free_gb: 0,
    perf_score: 0,
    mesh: nowhere,
  });
});

test('node profiles: a published profile reaches a peer that keeps it; a forged one is rejected, a stale one ignored, its own is gossiped again', async () => {
  const clock = testScheduler(T0 * 1000);
  const bus = new MemoryBus(clock);
  const na = bus.join(A.publicKey);
  const nb = bus.join(B.publicKey);
  const nc = bus.join(C.publicKey);
  const options = { networkName: NETWORK, clock, log: () => {} };
  const a = new NodeProfiles({ network: na, key: A, ...options });
  const b = new NodeProfiles({ network: nb, key: B, ...options, regossipMs: 60_000 });
  a.start();
  b.start();
  try {
    const published = await a.publish(measurement());
    await clock.advance(0);
    assert.deepEqual(b.get(published.nodeId)?.bytes, published.bytes);
    assert.deepEqual(
      a.list().map((p) => p.nodeId),
      [published.nodeId],
    );
    await refusal(() => a.publish(measurement()), 'not-newer');

    // C sends A's body under its own signature, and a profile with a bound broken: rejected, not kept.
    const forged = published.bytes.slice();
    forged.fill(7, forged.length - 64);
    await nc.publish(PROFILES_TOPIC, forged);
    const stale = await signProfile(measurement({ measured_at: T0 - PROFILE_TTL_S }), C, NETWORK);
    await nc.publish(PROFILES_TOPIC, stale.bytes);
    await clock.advance(0);
    const toB = bus.verdicts.filter((v) => v.topic === PROFILES_TOPIC && v.to === toHex(B.publicKey) && v.from === toHex(C.publicKey));
    // Which verdicts, not their order: the forgery's signature check may finish after the stale one's time check.
    assert.deepEqual(toB.map((v) => v.verdict).sort(), ['ignore', 'reject']);
    assert.isUndefined(b.get(toHex(C.publicKey)));

    // B gossips its own again on its schedule (A answers the copy it holds with ignore).
    const own = await b.publish(measurement({ measured_at: T0 + 1 }));
    await clock.advance(0);
    assert.deepEqual(a.get(own.nodeId)?.bytes, own.bytes);
    const before = bus.verdicts.filter((v) => v.topic === PROFILES_TOPIC && v.from === toHex(B.publicKey)).length;
    await clock.advance(60_000);
    assert.isAbove(bus.verdicts.filter((v) => v.topic === PROFILES_TOPIC && v.from === toHex(B.publicKey)).length, before);
  } finally {
    a.stop();
    b.stop();
  }
});

test('node profiles: a node stops gossiping its own profile once it has expired, and says so', async () => {
  const clock = testScheduler(T0 * 1000);
  const bus = new MemoryBus(clock);
  const na = bus.join(A.publicKey);
  bus.join(B.publicKey).handle(PROFILES_TOPIC, () => Promise.resolve('ignore'));
  const lines: string[] = [];
  const a = new NodeProfiles({ network: na, key: A, networkName: NETWORK, clock, log: (line) => lines.push(line), regossipMs: (PROFILE_TTL_S * 1000) / 2 });
  a.start();
  try {
    await a.publish(measurement());
    await clock.advance(0);
    const sent = (): number => bus.verdicts.filter((v) => v.topic === PROFILES_TOPIC && v.from === toHex(A.publicKey)).length;
    assert.equal(sent(), 1);
    await clock.advance((PROFILE_TTL_S * 1000) / 2);
    assert.equal(sent(), 2, 'gossiped again half a day later');
    await clock.advance(PROFILE_TTL_S * 1000);
    assert.equal(sent(), 2, 'not once it expired');
    assert.deepEqual(a.list(), []);
    assert.equal(lines.filter((l) => /expired/.test(l)).length, 1);
  } finally {
    a.stop();
  }
});
