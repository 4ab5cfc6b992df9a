/**
 * The parts of DockerExecutor that need no engine: the create request it builds (GPUs, gVisor),
 * what it makes of an engine's info, where it finds the engine, the log stream's frames and lines,
 * and the kernel log's OOM records.
 */

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type ContainerSpec, type EngineInfo, JOB_LABELS, type LogLine } from '../core/jobs/executor.ts';
import {
  containerOptions,
  DEFAULT_DOCKER_SOCKET,
  DockerExecutor,
  type EngineFacts,
  engineInfoOf,
  JOB_USER,
  LOG_FILE_MAX_BYTES,
  LOG_FILES,
  logLines,
  MAX_LOG_LINE_BYTES,
  PIDS_LIMIT,
  TMP_MOUNT_OPTIONS,
} from './docker-executor.ts';
import { memcgOfOomKill, readMemcgOomKills } from './kernel-oom-log.ts';

const SPEC: ContainerSpec = {
  name: 'mesh-job-0123456789abcdef',
  image: 'python:3.12-slim',
  cmd: ['python', '-c', 'print(1)'],
  env: [
    ['SEED', '7'],
    ['EMPTY', ''],
  ],
  cpuCores: 1.5,
  memMb: 512,
  gpus: 0,
  labels: { [JOB_LABELS.job]: 'ab'.repeat(32), [JOB_LABELS.node]: 'cd'.repeat(32), [JOB_LABELS.network]: 'devnet' },
};
const RUNC: EngineInfo = { engine: 'docker 27.3.1', runtime: 'runc', sandboxed: false, gpus: 0 };
const RUNSC: EngineInfo = { engine: 'docker 27.3.1', runtime: 'runsc', sandboxed: true, gpus: 2 };

test('containerOptions: the sandbox, the spec, and nothing mounted', () => {
  const options = containerOptions(SPEC, RUNC);
  assert.deepEqual(options, {
    name: SPEC.name,
    Image: SPEC.image,
    Cmd: ['python', '-c', 'print(1)'],
    Env: ['SEED=7', 'EMPTY='],
    Labels: SPEC.labels,
    User: JOB_USER,
    Tty: false,
    HostConfig: {
      NetworkMode: 'none',
      Memory: 512 * 1024 * 1024,
      MemorySwap: 512 * 1024 * 1024,
      NanoCpus: 1_500_000_000,
      PidsLimit: PIDS_LIMIT,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      Tmpfs: { '/tmp': TMP_MOUNT_OPTIONS },
      LogConfig: { Type: 'json-file', Config: { 'max-size': '10485760', 'max-file': '2' } },
    },
  });
  assert.equal(options.User, '65534:65534');
  assert.equal(PIDS_LIMIT, 256);
  assert.match(TMP_MOUNT_OPTIONS, /^rw,.*size=16m/);
  assert.equal(LOG_FILE_MAX_BYTES * LOG_FILES, 20 * 1024 * 1024);
});

test("containerOptions: each VOLUME of the image gets a tmpfs like /tmp, not a volume on the host's disk", () => {
  const options = containerOptions(SPEC, RUNC, ['/data', '/var/lib/db', '/tmp']);
  assert.deepEqual(options.HostConfig?.Tmpfs, { '/tmp': TMP_MOUNT_OPTIONS, '/data': TMP_MOUNT_OPTIONS, '/var/lib/db': TMP_MOUNT_OPTIONS });
  assert.equal(options.HostConfig?.Binds, undefined);
  assert.equal(options.HostConfig?.Mounts, undefined);
  assert.equal('Volumes' in options, false);
});

test('containerOptions: a null command leaves the image its own', () => {
  assert.equal('Cmd' in containerOptions({ ...SPEC, cmd: null }, RUNC), false);
});

test('containerOptions: GPUs are asked for as `--gpus 2` does, gVisor where the engine has it', () => {
  const options = containerOptions({ ...SPEC, gpus: 2 }, RUNSC);
  assert.equal(options.HostConfig?.Runtime, 'runsc');
  assert.deepEqual(options.HostConfig?.DeviceRequests, [{ Driver: '', Count: 2, Capabilities: [['gpu']] }]);
  const plain = containerOptions(SPEC, RUNC);
  assert.equal(plain.HostConfig?.Runtime, undefined, "the default runtime is the engine's, not named");
  assert.equal(plain.HostConfig?.DeviceRequests, undefined);
});

const PODMAN_VERSION: EngineFacts['version'] = { Version: '4.3.1', Components: [{ Name: 'Podman Engine' }, { Name: 'Conmon' }] };
const PODMAN_RUNTIMES = {
  crun: { path: '/usr/bin/crun' },
  runc: { path: '/usr/bin/runc' },
  runsc: { path: '/usr/bin/runsc' },
};

test('engineInfoOf: Podman runs its default runtime only, whatever it lists', () => {
  const facts: EngineFacts = { version: PODMAN_VERSION, info: { Runtimes: PODMAN_RUNTIMES, DefaultRuntime: 'runc' } };
  const plain = { engine: 'podman 4.3.1', runtime: 'runc', sandboxed: false, gpus: 0 };
  // Listed at /usr/bin/runsc whether installed or not; and even when it is, its Docker API ignores HostConfig.Runtime.
  assert.deepEqual(
    engineInfoOf(
      facts,
      true,
      (path) => path !== '/usr/bin/runsc',
      () => 0,
    ),
    plain,
  );
  assert.deepEqual(
    engineInfoOf(
      facts,
      true,
      () => true,
      () => 0,
    ),
    plain,
  );
  const gvisorByDefault: EngineFacts = { version: PODMAN_VERSION, info: { Runtimes: PODMAN_RUNTIMES, DefaultRuntime: 'runsc' } };
  assert.deepEqual(
    engineInfoOf(
      gvisorByDefault,
      true,
      () => true,
      () => 0,
    ),
    { ...plain, runtime: 'runsc', sandboxed: true },
  );
});

test("engineInfoOf: Docker's runsc counts where its binary is (on this machine) or the engine is remote", () => {
  const version = { Version: '27.3.1', Components: [{ Name: 'Engine' }] };
  const facts: EngineFacts = { version, info: { Runtimes: { runc: { path: 'runc' }, runsc: { path: '/usr/local/bin/runsc' } }, DefaultRuntime: 'runc' } };
  assert.equal(
    engineInfoOf(
      facts,
      true,
      () => false,
      () => 0,
    ).sandboxed,
    false,
  );
  assert.deepEqual(
    engineInfoOf(
      facts,
      true,
      () => true,
      () => 0,
    ),
    { engine: 'docker 27.3.1', runtime: 'runsc', sandboxed: true, gpus: 0 },
  );
  assert.equal(
    engineInfoOf(
      facts,
      false,
      () => false,
      () => 0,
    ).sandboxed,
    true,
  );
});

test('engineInfoOf: Docker, its default runtime, GPUs from CDI devices or the nvidia runtime', () => {
  const version = { Version: '27.3.1', Components: [{ Name: 'Engine' }, { Name: 'containerd' }] };
  const plain = engineInfoOf({ version, info: { Runtimes: { runc: { path: 'runc' } }, DefaultRuntime: 'runc' } }, true);
  assert.deepEqual(plain, { engine: 'docker 27.3.1', runtime: 'runc', sandboxed: false, gpus: 0 });

  const devices = [
    { Source: 'cdi', ID: 'nvidia.com/gpu=0' },
    { Source: 'cdi', ID: 'nvidia.com/gpu=1' },
    { Source: 'cdi', ID: 'nvidia.com/gpu=all' },
    { Source: 'cdi', ID: 'vendor.com/fpga=0' },
  ];
  const cdi = engineInfoOf({ version, info: { Runtimes: { runsc: { path: 'runsc' } }, DiscoveredDevices: devices } }, true, () => false);
  assert.deepEqual(cdi, { engine: 'docker 27.3.1', runtime: 'runsc', sandboxed: true, gpus: 2 }, 'a bare runtime name is not a path to check');

  const nvidia = { Runtimes: { runc: { path: 'runc' }, nvidia: { path: 'nvidia-container-runtime' } }, DefaultRuntime: 'runc' };
  assert.equal(
    engineInfoOf(
      { version, info: nvidia },
      true,
      () => true,
      () => 4,
    ).gpus,
    4,
  );
  assert.equal(
    engineInfoOf(
      { version, info: nvidia },
      false,
      () => true,
      () => 4,
    ).gpus,
    0,
    "a remote engine's devices are not ours to count",
  );
});

test("DockerExecutor: the engine is the socket option, else DOCKER_HOST, else Docker's socket", () => {
  assert.equal(new DockerExecutor({ env: {} }).address, `unix://${DEFAULT_DOCKER_SOCKET}`);
  assert.equal(new DockerExecutor({ env: { DOCKER_HOST: '' } }).address, `unix://${DEFAULT_DOCKER_SOCKET}`);
  assert.equal(new DockerExecutor({ env: { DOCKER_HOST: 'unix:///run/podman/podman.sock' } }).address, 'unix:///run/podman/podman.sock');
  assert.equal(new DockerExecutor({ env: { DOCKER_HOST: 'tcp://10.0.0.2:2375' } }).address, 'tcp://10.0.0.2:2375');
  assert.equal(new DockerExecutor({ dockerHost: 'tcp://10.0.0.3:2375', env: { DOCKER_HOST: 'tcp://10.0.0.2:2375' } }).address, 'tcp://10.0.0.3:2375');
  assert.equal(
    new DockerExecutor({ socketPath: '/tmp/e.sock', dockerHost: 'tcp://10.0.0.3:2375', env: { DOCKER_HOST: 'tcp://10.0.0.2:2375' } }).address,
    'unix:///tmp/e.sock',
  );
});

const encoder = new TextEncoder();

/** One frame of the engine's multiplexed stream. */
function frame(stream: 1 | 2, text: string | Uint8Array): Uint8Array {
  const payload = typeof text === 'string' ? encoder.encode(text) : text;
  const bytes = new Uint8Array(8 + payload.length);
  bytes[0] = stream;
  new DataView(bytes.buffer).setUint32(4, payload.length);
  bytes.set(payload, 8);
  return bytes;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  return all;
}

async function lines(chunks: Uint8Array[]): Promise<[string, string, number][]> {
  const out: LogLine[] = [];
  for await (const line of logLines(chunks)) out.push(line);
  return out.map((l) => [l.stream, l.text, l.atMs]);
}

const T1 = '2026-11-24T00:20:48.123456789Z';
const T2 = '2026-11-24T00:20:49Z';
const T3 = '2026-11-24T01:20:50.5+01:00';

test('logLines: frames split anywhere, typed lines, stamps stripped into atMs', async () => {
  const whole = concat([frame(1, `${T1} out one\n`), frame(2, `${T1} err one\n`), frame(1, `${T2} two lines\nin one message\n`), frame(2, `${T3} \n`)]);
  const expected: [string, string, number][] = [
    ['stdout', 'out one', Date.parse(T1)],
    ['stderr', 'err one', Date.parse(T1)],
    ['stdout', 'two lines', Date.parse(T2)],
    ['stdout', 'in one message', Date.parse(T2)],
    ['stderr', '', Date.parse(T3)],
  ];
  assert.deepEqual(await lines([whole]), expected);
  // Byte by byte, and in uneven pieces: the same lines.
  assert.deepEqual(await lines([...whole].map((b) => Uint8Array.of(b))), expected);
  assert.deepEqual(await lines([whole.subarray(0, 5), whole.subarray(5, 40), whole.subarray(40)]), expected);
  assert.equal(Date.parse(T1), Date.UTC(2026, 10, 24, 0, 20, 48, 123));
});

test('logLines: a line in pieces is joined under its first stamp; a last partial line is given as it is', async () => {
  const euro = encoder.encode('€');
  const got = await lines([
    frame(1, `${T1} part`),
    frame(2, `${T2} err\n`),
    frame(1, `${T2} ial\n`),
    // A character split between two messages (Docker cuts long lines at 16 KiB).
    frame(1, concat([encoder.encode(`${T2} price `), euro.subarray(0, 1)])),
    frame(1, concat([encoder.encode(`${T3} `), euro.subarray(1), encoder.encode('5\n')])),
    frame(2, `${T3} no newline`),
    frame(1, `${T3} last`),
  ]);
  assert.deepEqual(got, [
    ['stderr', 'err', Date.parse(T2)],
    ['stdout', 'partial', Date.parse(T1)],
    ['stdout', 'price €5', Date.parse(T2)],
    ['stderr', 'no newline', Date.parse(T3)],
    ['stdout', 'last', Date.parse(T3)],
  ]);
});

test('logLines: a stream that is not multiplexed (a TTY) is all stdout', async () => {
  const got = await lines([encoder.encode(`${T1} hello\n`), encoder.encode(`${T2} world\n`)]);
  assert.deepEqual(
    got.map(([stream, text]) => [stream, text]),
    [
      ['stdout', 'hello'],
      ['stdout', 'world'],
    ],
  );
});

test('logLines: a line over MAX_LOG_LINE_BYTES is cut between characters, its rest the next line', async () => {
  assert.equal(MAX_LOG_LINE_BYTES, 16 * 1024);
  // 'é' is 2 bytes after an odd number of ASCII ones: one 'é' straddles the cap. '😀' is 4 bytes, a surrogate pair.
  const line = `${'a'.repeat(MAX_LOG_LINE_BYTES - 1)}${'é'.repeat(10)}\n`;
  const got = await lines([frame(1, `${T1} ${line}`), frame(1, `${T2} ${'😀'.repeat(MAX_LOG_LINE_BYTES / 4 + 1)}x`)]);
  assert.deepEqual(
    got.map(([, text]) => text),
    ['a'.repeat(MAX_LOG_LINE_BYTES - 1), 'é'.repeat(10), '😀'.repeat(MAX_LOG_LINE_BYTES / 4), '😀x'],
  );
  // The rest of a cut line carries the stamp of the message it came in.
  assert.deepEqual(
    got.map(([, , at]) => at),
    [Date.parse(T1), Date.parse(T1), Date.parse(T2), Date.parse(T2)],
  );
});

test('logLines: 8 MiB without a newline, in engine-sized messages, take linear time and come as lines within the cap', async () => {
  const total = 8 * 1024 * 1024;
  // Podman's messages are 8 KiB; '€' (3 bytes) in every one, so characters straddle messages and cuts.
  const piece = encoder.encode('€abcdefghijklm'.repeat(8192 / 16));
  const messages: Uint8Array[] = [];
  for (let sent = 0; sent < total; sent += piece.length) messages.push(frame(1, concat([encoder.encode(`${T1} `), piece])));
  const began = performance.now();
  const got: LogLine[] = [];
  for await (const line of logLines(messages)) got.push(line);
  const ms = performance.now() - began;
  // A few hundred ms here; re-joining the pending line for each message took 28 s.
  assert.ok(ms < 2000, `${ms} ms`);
  const sizes = got.map((l) => encoder.encode(l.text).length);
  assert.ok(Math.max(...sizes) <= MAX_LOG_LINE_BYTES, String(Math.max(...sizes)));
  assert.ok(
    sizes.slice(0, -1).every((n) => n > MAX_LOG_LINE_BYTES - 4),
    'every line but the last is filled',
  );
  assert.equal(
    sizes.reduce((a, b) => a + b, 0),
    messages.length * piece.length,
  );
  assert.equal(got.map((l) => l.text).join(''), new TextDecoder().decode(piece).repeat(messages.length), 'no character broken');
});

test('logLines: invalid UTF-8 becomes U+FFFD and still stays within the cap', async () => {
  const got = await lines([frame(2, concat([encoder.encode(`${T1} `), new Uint8Array(MAX_LOG_LINE_BYTES).fill(0xff)]))]);
  for (const [, text] of got) assert.ok(encoder.encode(text).length <= MAX_LOG_LINE_BYTES);
  assert.equal(got.map(([, text]) => text).join(''), '\ufffd'.repeat(MAX_LOG_LINE_BYTES));
});

const ID = 'a34ac28197ba47993137d3800eb9ca71b1762f38e339a7120fad9c8eb4aae4a7';
const OOM_RECORD =
  `6,419,10193528492,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=libpod-${ID},mems_allowed=0,` +
  `oom_memcg=/libpod_parent/libpod-${ID},task_memcg=/libpod_parent/libpod-${ID},task=sh,pid=11172,uid=65534`;

test('memcgOfOomKill: the cgroup of a memory-cgroup OOM kill, nothing for other records', () => {
  assert.equal(memcgOfOomKill(OOM_RECORD), `/libpod_parent/libpod-${ID}`);
  const v2 =
    '3,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/system.slice/docker-abc.scope,task_memcg=/system.slice/docker-abc.scope,task=x,pid=1,uid=0';
  assert.equal(memcgOfOomKill(v2), '/system.slice/docker-abc.scope');
  // The machine out of memory, not a container's limit.
  const global =
    '3,1,2,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/libpod_parent/libpod-x,task=x,pid=1,uid=0';
  assert.equal(memcgOfOomKill(global), null);
  assert.equal(memcgOfOomKill(`6,420,10193528507,-;Memory cgroup out of memory: Killed process 11172 (sh)`), null);
});

test('readMemcgOomKills: the kills of a log in kmsg form, null where there is no log', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-kmsg-'));
  try {
    const log = join(dir, 'kmsg');
    const filler = Array.from({ length: 2000 }, (_, i) => `6,${i},1,-;some kernel line number ${i}`);
    await writeFile(log, `${[...filler, OOM_RECORD, ' SUBSYSTEM=memory', ...filler].join('\n')}\n`);
    assert.deepEqual(await readMemcgOomKills(log), [`/libpod_parent/libpod-${ID}`]);
    assert.equal(await readMemcgOomKills(join(dir, 'missing')), null);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
