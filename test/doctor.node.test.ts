/**
 * `mesh doctor` against real engines: the tests' Podman service (working), a Podman service
 * started as the README once said, without the containers.conf this machine kind needs (its
 * containers fail on rlimits), and no engine at all.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type PodmanService, startPodman, TEST_IMAGE } from './podman.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
const nodeBin = join(repo, 'node_modules/.bin/node');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function doctor(dockerHost: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(nodeBin, ['bin/mesh.js', 'doctor', ...args], { cwd: repo, env: { ...process.env, DOCKER_HOST: dockerHost } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

const line = (stdout: string, check: string): string => stdout.split('\n').find((l) => new RegExp(`^\\S+\\s+${check}\\s`).test(l)) ?? `(no ${check} line)`;

let podman: PodmanService;
let broken: { dir: string; socket: string; stop: () => Promise<void> };

/** A Podman service with the runtime and cgroup manager set but no default_ulimits. */
async function startBrokenPodman(): Promise<typeof broken> {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-doctor-'));
  const socket = join(dir, 'podman.sock');
  await writeFile(join(dir, 'containers.conf'), '[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n');
  const child = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], {
    env: { ...process.env, CONTAINERS_CONF: join(dir, 'containers.conf') },
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (let attempt = 0; !(await answers(socket)); attempt++) {
    if (attempt > 300) throw new Error('the second Podman service did not answer in 30 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    dir,
    socket,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function answers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

before(async () => {
  podman = await startPodman();
  broken = await startBrokenPodman();
});
after(async () => {
  await broken?.stop();
  await podman?.stop();
});

test('a working Podman: every check passes, a job-shaped container starts and is removed, exit 0', async () => {
  const run = await doctor(podman.dockerHost, ['--allow-image', 'localhost/busybox']);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  for (const check of ['engine', 'allow-list', 'rlimits', 'cgroups', 'images', 'launch']) assert.match(line(run.stdout, check), /^ok\s/, check);
  assert.match(line(run.stdout, 'images'), new RegExp(TEST_IMAGE));
  assert.match(line(run.stdout, 'launch'), /started and exited \(code 0\)/);
  // gVisor or not is the engine's: either verdict names the runtime.
  assert.match(line(run.stdout, 'runtime'), /^(ok|warn)\s+runtime\s+jobs run under/);
  const json = JSON.parse((await doctor(podman.dockerHost, ['--allow-image', 'localhost/busybox', '--json'])).stdout) as { check: string }[];
  assert.deepEqual(
    json.map((f) => f.check),
    ['engine', 'allow-list', 'rlimits', 'runtime', 'cgroups', 'images', 'launch'],
  );
  // The test container is gone.
  const left = await new Promise<string>((resolve) =>
    execFile('podman', ['ps', '-a', '--filter', 'name=mesh-doctor', '--format', '{{.Names}}'], (_e, out) => resolve(out)),
  );
  assert.equal(left.trim(), '');
});

test('a Podman without the containers.conf this machine needs: the launch fails on rlimits and the fix names default_ulimits, exit 1', async () => {
  const run = await doctor(`unix://${broken.socket}`, ['--allow-image', 'localhost/busybox']);
  assert.equal(run.code, 1, run.stdout + run.stderr);
  assert.match(line(run.stdout, 'engine'), /^ok\s/);
  assert.match(line(run.stdout, 'launch'), /^FAIL\s+launch\s+.*rlimit/);
  assert.match(run.stdout, /fix: the engine asks for more open files.*\n.*\[containers\]\n\s+default_ulimits = \["nofile=4096:4096", "nproc=4096:4096"\]/);
});

test('no engine: the engine check fails with how to start one, the checks that need it are skipped, exit 1', async () => {
  const run = await doctor('unix:///nonexistent/docker.sock', []);
  assert.equal(run.code, 1);
  assert.match(line(run.stdout, 'engine'), /^FAIL\s+engine\s+no container engine answers/);
  assert.match(run.stdout, /fix: start Docker .* podman system service/);
  for (const check of ['runtime', 'cgroups', 'images', 'launch']) assert.match(line(run.stdout, check), /^–\s/, check);
  assert.match(line(run.stdout, 'allow-list'), /^warn\s/);
  assert.match(run.stdout, /fix: name the images to run: mesh node --allow-image IMAGE/);
});

test('an allowed image that is not on the engine: a warning with how to pull it; nothing to launch, exit 0', async () => {
  const run = await doctor(podman.dockerHost, ['--allow-image', 'docker.io/library/postgres']);
  assert.equal(run.code, 0, run.stdout);
  assert.match(line(run.stdout, 'images'), /^warn\s+images\s+none of the allowed images/);
  assert.match(run.stdout, /fix: pull them ahead: docker pull IMAGE/);
  assert.match(line(run.stdout, 'launch'), /^–\s/);
});
