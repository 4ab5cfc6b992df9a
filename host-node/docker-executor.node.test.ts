/**
 * DockerExecutor against a real engine: Podman's Docker-compatible service (test/podman.ts), the
 * busybox test image, and the sandbox seen from inside the container.
 */

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import Docker from 'dockerode';
import { type ContainerSpec, type ContainerState, ExecutorError, JOB_LABELS, type LogLine } from '../core/jobs/executor.ts';
import { rejectsAsync } from '../test/assert.ts';
import { startPodman, TEST_IMAGE, TEST_IMAGE_COMMAND, VOLUME_TEST_IMAGE, VOLUME_TEST_PATH } from '../test/podman.ts';
import { DockerExecutor, LOG_FILE_MAX_BYTES, PIDS_LIMIT, WAIT_ATTEMPTS } from './docker-executor.ts';

const podman = await startPodman();
const executor = new DockerExecutor({ socketPath: podman.socketPath });
// The engine as the tests see it, past the executor.
const docker = new Docker({ socketPath: podman.socketPath });
// Every container of this run carries it, so that the run removes what it made.
const runId = randomBytes(8).toString('hex');

after(async () => {
  for (const state of await executor.list({ [JOB_LABELS.node]: runId })) await executor.remove(state.id);
  await podman.stop();
});

let count = 0;
function spec(cmd: string[] | null, overrides: Partial<ContainerSpec> = {}): ContainerSpec {
  const n = count++;
  return {
    name: `mesh-test-${runId}-${n}`,
    image: TEST_IMAGE,
    cmd,
    env: [],
    cpuCores: 0.5,
    memMb: 64,
    gpus: 0,
    labels: { [JOB_LABELS.node]: runId, [JOB_LABELS.job]: String(n) },
    ...overrides,
  };
}

async function collect(lines: AsyncIterable<LogLine>): Promise<LogLine[]> {
  const all: LogLine[] = [];
  for await (const line of lines) all.push(line);
  return all;
}

/** Runs a container to its end: its final state and its output. */
async function runToEnd(s: ContainerSpec): Promise<{ id: string; state: ContainerState; lines: LogLine[] }> {
  const id = await executor.run(s);
  const state = await executor.wait(id);
  return { id, state, lines: await collect(executor.logs(id)) };
}

/** The `key=value` lines a script printed. */
function facts(lines: LogLine[]): Map<string, string> {
  const found = new Map<string, string>();
  for (const { text } of lines) {
    const at = text.indexOf('=');
    if (at > 0) found.set(text.slice(0, at), text.slice(at + 1));
  }
  return found;
}

const MEMORY_HOG = ['sh', '-c', 'x=aaaaaaaaaaaaaaaa; while :; do x=$x$x; done'];

test('info: the engine, its default runtime, no GPUs', async () => {
  // Podman lists runsc whether or not it is installed, and ignores it when asked: runc, unsandboxed.
  assert.deepEqual({ ...(await executor.info()), engine: '' }, { engine: '', runtime: 'runc', sandboxed: false, gpus: 0 });
  assert.match((await executor.info()).engine, /^podman \d+\.\d+/);
});

test('info and run: an engine that does not answer is no-engine', async () => {
  const nowhere = new DockerExecutor({ socketPath: join(tmpdir(), `mesh-no-engine-${runId}.sock`) });
  await rejectsAsync(() => nowhere.info(), ExecutorError, 'no-engine', /no container engine answers its ping at unix:\/\//);
  await rejectsAsync(() => nowhere.run(spec(['true'])), ExecutorError, 'no-engine');
});

test('logs: stdout and stderr come as typed lines in order, stamped, the last partial line as it is', async () => {
  const started = Date.now();
  const { state, lines } = await runToEnd(
    spec(['sh', '-c', 'echo one; sleep 0.3; echo two >&2; sleep 0.3; echo "three  spaced"; echo; sleep 0.3; printf partial']),
  );
  assert.equal(state.exitCode, 0);
  assert.equal(state.oomKilled, false);
  assert.deepEqual(
    lines.map(({ stream, text }) => [stream, text]),
    [
      ['stdout', 'one'],
      ['stderr', 'two'],
      ['stdout', 'three  spaced'],
      ['stdout', ''],
      ['stdout', 'partial'],
    ],
  );
  // Podman stamps to the second.
  for (const line of lines) assert.ok(line.atMs >= started - 2000 && line.atMs <= Date.now() + 1000, String(line.atMs));
});

test('logs: follow delivers lines as they come and ends when the container exits', async () => {
  const id = await executor.run(spec(['sh', '-c', 'echo first; sleep 1; echo second']));
  const seen: { text: string; at: number }[] = [];
  for await (const line of executor.logs(id, { follow: true })) seen.push({ text: line.text, at: Date.now() });
  assert.deepEqual(
    seen.map((s) => s.text),
    ['first', 'second'],
  );
  assert.ok(seen[1]!.at - seen[0]!.at >= 500, 'the first line came before the second was written');
  assert.equal((await executor.inspect(id))?.running, false);
});

test('logs: an abort ends a follow at once', async () => {
  const id = await executor.run(spec(['sh', '-c', 'echo up; sleep 30']));
  const controller = new AbortController();
  const began = Date.now();
  const lines: string[] = [];
  for await (const line of executor.logs(id, { follow: true, signal: controller.signal })) {
    lines.push(line.text);
    setTimeout(() => controller.abort(), 200);
  }
  assert.deepEqual(lines, ['up']);
  assert.ok(Date.now() - began < 5000, `the iteration ended ${Date.now() - began} ms after it began`);
  await executor.remove(id);
});

test('the sandbox, seen from inside: limits, no network, read-only root, writable /tmp, no capabilities, nobody', async () => {
  const script = [
    'echo mem=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max)',
    'echo memsw=$(cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.swap.max)',
    'echo cpu=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null && cat /sys/fs/cgroup/cpu/cpu.cfs_period_us || cat /sys/fs/cgroup/cpu.max)',
    'echo pids=$(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max)',
    'echo net=$(ls /sys/class/net)',
    '(echo x > /x) 2>/dev/null && echo root=writable || echo root=read-only',
    '(echo x > /bin/x) 2>/dev/null && echo bin=writable || echo bin=read-only',
    'echo tmp=$( (echo written > /tmp/x && cat /tmp/x) 2>&1)',
    'echo capeff=$(grep CapEff /proc/self/status | grep -o "[0-9a-f]*$")',
    'echo capbnd=$(grep CapBnd /proc/self/status | grep -o "[0-9a-f]*$")',
    'echo nnp=$(grep NoNewPrivs /proc/self/status | grep -o "[0-9]*$")',
    'echo uid=$(id -u) gid=$(id -g)',
    'echo env=$JOB_GREETING',
    'cat /proc/mounts | while read source point rest; do echo "mount=$source $point"; done',
  ].join('\n');
  const { state, lines } = await runToEnd(spec(['sh', '-c', script], { memMb: 48, cpuCores: 0.5, env: [['JOB_GREETING', 'hello there']] }));
  assert.equal(state.exitCode, 0, lines.map((l) => l.text).join('\n'));
  const seen = facts(lines);
  const mib48 = String(48 * 1024 * 1024);
  assert.equal(seen.get('mem'), mib48);
  assert.equal(seen.get('memsw'), mib48, 'memory plus swap is the memory: no swap');
  const cpu = (seen.get('cpu') ?? '').split(/\s+/).map(Number);
  assert.equal(cpu.length, 2, seen.get('cpu'));
  assert.equal(cpu[0]! / cpu[1]!, 0.5);
  assert.equal(seen.get('pids'), String(PIDS_LIMIT));
  assert.equal(seen.get('net'), 'lo');
  assert.equal(seen.get('root'), 'read-only');
  assert.equal(seen.get('bin'), 'read-only');
  assert.equal(seen.get('tmp'), 'written');
  assert.equal(seen.get('capeff'), '0000000000000000');
  assert.equal(seen.get('capbnd'), '0000000000000000');
  assert.equal(seen.get('nnp'), '1');
  assert.equal(seen.get('uid'), '65534 gid=65534');
  assert.equal(seen.get('env'), 'hello there');
  // No host folder is mounted: every mount is the engine's own (proc, sys, dev, tmpfs, cgroups) or
  // one of the files it writes for each container.
  const engineFiles = new Set(['/etc/hosts', '/etc/hostname', '/etc/resolv.conf', '/etc/passwd', '/etc/group', '/run/.containerenv']);
  const virtual = new Set(['overlay', 'proc', 'sysfs', 'tmpfs', 'devpts', 'mqueue', 'shm', 'cgroup', 'cgroup2']);
  const mounts = lines.filter((l) => l.text.startsWith('mount=')).map((l) => l.text.slice('mount='.length).split(' '));
  assert.ok(mounts.some(([, point]) => point === '/tmp'));
  for (const [source, point] of mounts) {
    assert.ok(virtual.has(source!) || engineFiles.has(point!), `a host mount: ${source} on ${point}`);
  }
});

test('a job over its memory limit exits 137 as OOM-killed, and still reads so to a recreated executor', async () => {
  const { id, state } = await runToEnd(spec(MEMORY_HOG, { memMb: 16 }));
  assert.equal(state.exitCode, 137);
  assert.equal(state.oomKilled, true);
  const afterRestart = new DockerExecutor({ socketPath: podman.socketPath });
  assert.equal((await afterRestart.inspect(id))?.oomKilled, true);
});

test('a job stopped by stop() is not OOM-killed, to this executor or a recreated one; list finds it; remove removes it', async () => {
  const s = spec(['sleep', '30']);
  const id = await executor.run(s);
  const running = await executor.inspect(id);
  assert.equal(running?.running, true);
  assert.equal(running?.status, 'running');
  assert.equal(running?.exitCode, null);
  assert.equal(running?.finishedAtMs, null);
  assert.ok(running?.startedAtMs !== null);

  const listed = await executor.list({ [JOB_LABELS.node]: runId, [JOB_LABELS.job]: s.labels[JOB_LABELS.job]! });
  assert.deepEqual(
    listed.map((c) => [c.id, c.name, c.running]),
    [[id, s.name, true]],
  );
  // The spec's labels, beside any the image brings.
  for (const [key, value] of Object.entries(s.labels)) assert.equal(listed[0]?.labels[key], value);

  // sleep as PID 1 ignores SIGTERM: the engine ends it with SIGKILL after the grace time.
  await executor.stop(id, { graceSecs: 1 });
  const stopped = await executor.wait(id);
  assert.equal(stopped.exitCode, 137);
  assert.equal(stopped.oomKilled, false);
  assert.ok(stopped.finishedAtMs !== null && stopped.startedAtMs !== null && stopped.finishedAtMs >= stopped.startedAtMs);
  assert.equal((await new DockerExecutor({ socketPath: podman.socketPath }).inspect(id))?.oomKilled, false);
  await executor.stop(id); // stopping a stopped container is no error

  const exited = await executor.list({ [JOB_LABELS.job]: s.labels[JOB_LABELS.job]!, [JOB_LABELS.node]: runId });
  assert.deepEqual(
    exited.map((c) => [c.id, c.status, c.running]),
    [[id, 'exited', false]],
  );
  assert.deepEqual(await executor.list({ [JOB_LABELS.node]: runId, [JOB_LABELS.job]: 'no-such-job' }), []);

  await executor.remove(id);
  assert.equal(await executor.inspect(id), null);
  await executor.remove(id); // removing a removed container is no error
  await executor.stop(id); // nor is stopping one
  assert.deepEqual(await executor.list({ [JOB_LABELS.job]: s.labels[JOB_LABELS.job]!, [JOB_LABELS.node]: runId }), []);
});

test('without the kernel log: an unasked SIGKILL of a container it ran reads as OOM, its own stop does not', async () => {
  const blind = new DockerExecutor({ socketPath: podman.socketPath, kernelLog: null });
  const hog = await blind.run(spec(MEMORY_HOG, { memMb: 16 }));
  const hogState = await blind.wait(hog);
  assert.equal(hogState.exitCode, 137);
  assert.equal(hogState.oomKilled, true);

  const sleeper = await blind.run(spec(['sleep', '30']));
  await blind.stop(sleeper, { graceSecs: 0 });
  const sleeperState = await blind.wait(sleeper);
  assert.equal(sleeperState.exitCode, 137);
  assert.equal(sleeperState.oomKilled, false);

  // What holds after a restart without the kernel log: no evidence, so no OOM.
  const blindAgain = new DockerExecutor({ socketPath: podman.socketPath, kernelLog: null });
  assert.equal((await blindAgain.inspect(hog))?.oomKilled, false);
  assert.equal((await blindAgain.inspect(sleeper))?.oomKilled, false);
});

test('wait resolves at once for an exited container and can be aborted', async () => {
  const { id } = await runToEnd(spec(['false']));
  const state = await executor.wait(id);
  assert.equal(state.exitCode, 1);
  assert.equal(state.oomKilled, false);

  const sleeper = await executor.run(spec(['sleep', '30']));
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error('given up')), 200);
  await assert.rejects(executor.wait(sleeper, { signal: controller.signal }), /given up/);
  await executor.remove(sleeper);
  assert.equal(await executor.inspect(sleeper), null);
});

test('run: a missing image that cannot be pulled is no-image, fast, and leaves no container', async () => {
  const fast = new DockerExecutor({ socketPath: podman.socketPath, pullTimeoutMs: 20_000 });
  const s = spec(['true'], { image: 'localhost:1/mesh/no-such-image:1' });
  const began = Date.now();
  await rejectsAsync(() => fast.run(s), ExecutorError, 'no-image', /localhost:1\/mesh\/no-such-image:1 is not on this host and could not be pulled: .+/);
  assert.ok(Date.now() - began < 20_000);
  assert.deepEqual(await executor.list({ [JOB_LABELS.job]: s.labels[JOB_LABELS.job]!, [JOB_LABELS.node]: runId }), []);
});

test("run: a container that cannot start is start-failed with the engine's words, and is removed", async () => {
  const s = spec(['/no/such/program']);
  await rejectsAsync(() => executor.run(s), ExecutorError, 'start-failed', /could not start .*no such file/);
  assert.deepEqual(await executor.list({ [JOB_LABELS.job]: s.labels[JOB_LABELS.job]!, [JOB_LABELS.node]: runId }), []);

  const first = spec(['sleep', '30']);
  const id = await executor.run(first);
  await rejectsAsync(
    () => executor.run({ ...first, labels: { ...first.labels, [JOB_LABELS.job]: 'twin' } }),
    ExecutorError,
    'start-failed',
    /could not create/,
  );
  await executor.remove(id);
});

test("run: a null command runs the image's own command", async () => {
  const { state, lines } = await runToEnd(spec(null));
  assert.equal(state.exitCode, 0);
  assert.deepEqual(
    lines.map((l) => l.text),
    [TEST_IMAGE_COMMAND.slice(1).join(' ')],
  );
});

test("an image's VOLUME is a small tmpfs: not the host's disk, bounded, and nothing left after remove", async () => {
  const volumes = async (): Promise<Set<string>> => new Set(((await docker.listVolumes()).Volumes ?? []).map((v) => v.Name));
  const before = await volumes();
  const script = [
    `grep " ${VOLUME_TEST_PATH} " /proc/mounts | while read source point type rest; do echo "mount=$type $rest"; done`,
    `dd if=/dev/zero of=${VOLUME_TEST_PATH}/fill bs=1M count=64 2>&1 | head -n 1`,
    'echo dd=$?',
    `echo kib=$(( $(wc -c < ${VOLUME_TEST_PATH}/fill) / 1024 ))`,
  ].join('\n');
  const { id, state, lines } = await runToEnd(spec(['sh', '-c', script], { image: VOLUME_TEST_IMAGE, memMb: 32 }));
  const output = lines.map((l) => l.text).join('\n');
  const seen = facts(lines);
  assert.match(seen.get('mount') ?? '', /^tmpfs rw,nosuid,nodev,noexec,.*size=16384k/, output);
  if (!state.oomKilled) {
    assert.match(output, /No space left on device/);
    assert.equal(seen.get('kib'), String(16 * 1024), "the write stopped at the tmpfs's 16 MiB");
  }
  const mounts = (await docker.getContainer(id).inspect()).Mounts;
  assert.deepEqual(
    mounts.filter((m) => m.Type === 'volume'),
    [],
  );
  await executor.remove(id);
  assert.deepEqual(
    [...(await volumes())].filter((name) => !before.has(name)),
    [],
    'no volume was made or left',
  );
});

test("the engine keeps at most LOG_FILE_MAX_BYTES of a job's output on its disk", async () => {
  const id = await executor.run(spec(['yes', 'a line of output '.repeat(4)], { cpuCores: 0.5 }));
  const { LogPath: logPath } = await docker.getContainer(id).inspect();
  const sizes: number[] = [];
  try {
    for (let i = 0; i < 40; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      sizes.push((await stat(logPath)).size);
    }
  } finally {
    await executor.remove(id);
  }
  assert.ok(Math.max(...sizes) <= LOG_FILE_MAX_BYTES, `the log file grew to ${Math.max(...sizes)} bytes`);
  // The output went past the cap: the engine dropped what came before.
  assert.ok(
    sizes.some((size, i) => i > 0 && size < sizes[i - 1]!),
    `the log never shrank: ${sizes.join(' ')}`,
  );
});

let proxies = 0;

/** A socket in front of the engine's that cuts the connection of the first `cut` wait requests. */
async function flakyEngine(cut: number): Promise<{ socketPath: string; waits: () => number; close: () => Promise<void> }> {
  const socketPath = join(tmpdir(), `mesh-flaky-engine-${runId}-${proxies++}.sock`);
  let waits = 0;
  const server = createServer((req, res) => {
    if (/^\/(v[\d.]+\/)?containers\/[^/]+\/wait/.test(req.url ?? '') && ++waits <= cut) {
      req.socket.destroy();
      return;
    }
    const upstream = request({ socketPath: podman.socketPath, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    socketPath,
    waits: () => waits,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

test('wait: a wait request whose connection drops is asked again', async () => {
  const engine = await flakyEngine(1);
  try {
    const flaky = new DockerExecutor({ socketPath: engine.socketPath });
    const id = await flaky.run(spec(['sh', '-c', 'sleep 1; exit 3']));
    const state = await flaky.wait(id);
    assert.equal(state.exitCode, 3);
    assert.equal(state.running, false);
    assert.equal(engine.waits(), 2);
  } finally {
    await engine.close();
  }
});

test('wait: when every wait request fails, it polls until the container exits; an abort still ends it at once', async () => {
  const engine = await flakyEngine(Infinity);
  try {
    const flaky = new DockerExecutor({ socketPath: engine.socketPath });
    const id = await flaky.run(spec(['sh', '-c', 'sleep 2; exit 4']));
    const state = await flaky.wait(id);
    assert.equal(state.exitCode, 4);
    assert.equal(engine.waits(), WAIT_ATTEMPTS);

    const sleeper = await flaky.run(spec(['sleep', '30']));
    const controller = new AbortController();
    let abortedAt = 0;
    setTimeout(() => {
      abortedAt = Date.now();
      controller.abort(new Error('given up'));
    }, 2500);
    await assert.rejects(flaky.wait(sleeper, { signal: controller.signal }), /given up/);
    assert.ok(Date.now() - abortedAt < 500, `the wait ended ${Date.now() - abortedAt} ms after the abort`);
    assert.equal(engine.waits(), 2 * WAIT_ATTEMPTS, 'the abort came while it polled');
    await executor.remove(sleeper);
  } finally {
    await engine.close();
  }
});
