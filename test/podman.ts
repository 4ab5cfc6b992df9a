/**
 * A Podman Docker-API service for the container tests (Node only; ../shared/DESIGN.md §3). One
 * service under PODMAN_DIR serves every test file and process: the first to call startPodman
 * writes the containers.conf, starts `podman system service` and builds the busybox test images;
 * the others reuse it. A lock directory makes concurrent starts safe, and a lease file per caller
 * lets the last stop() end the service. No registry is reachable here, so the images are built
 * locally from busybox-static. Without podman this fails with the apt command to run: the
 * executor's tests never skip.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, open, readdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { processAlive } from '../host-node/process-alive.ts';

/** Where the shared service lives: its socket, configuration, log, lock and leases. */
export const PODMAN_DIR = '/tmp/mesh-podman';
/** The image the tests run, built from busybox-static. */
export const TEST_IMAGE = 'localhost/busybox:test';
/** The same image declaring `VOLUME /data` (VOLUME_TEST_PATH), as many published images do. */
export const VOLUME_TEST_IMAGE = 'localhost/busybox:volume';
export const VOLUME_TEST_PATH = '/data';
/** The commands the test image has, all links to busybox. */
export const BUSYBOX_TOOLS = ['sh', 'echo', 'sleep', 'cat', 'ls', 'head', 'dd', 'yes', 'grep', 'wc', 'id', 'mount', 'true', 'false', 'printf', 'tail'] as const;

/** What the test image runs when a container names no command. */
export const TEST_IMAGE_COMMAND = ['echo', 'the image command'] as const;

// Each test image with the Dockerfile instructions `podman import --change` gives it.
const IMAGES: readonly { readonly name: string; readonly changes: readonly string[] }[] = [
  { name: TEST_IMAGE, changes: [`CMD ${JSON.stringify(TEST_IMAGE_COMMAND)}`] },
  { name: VOLUME_TEST_IMAGE, changes: [`CMD ${JSON.stringify(TEST_IMAGE_COMMAND)}`, `VOLUME ${VOLUME_TEST_PATH}`] },
];

const INSTALL = 'apt-get install -y podman runc busybox-static';
const BUSYBOX = '/bin/busybox';
const SOCKET = join(PODMAN_DIR, 'podman.sock');
const CONF = join(PODMAN_DIR, 'containers.conf');
const LOCK = join(PODMAN_DIR, 'lock');
const LEASES = join(PODMAN_DIR, 'leases');
const SERVICE_PID = join(PODMAN_DIR, 'service.pid');
const SERVICE_LOG = join(PODMAN_DIR, 'service.log');
const START_TIMEOUT_MS = 30_000;
const LOCK_TIMEOUT_MS = 120_000;
const STALE_LOCK_MS = 60_000;

// This sandbox cannot raise rlimits, crun refuses its hybrid cgroup layout, and there is no systemd.
const CONTAINERS_CONF = `[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
`;

const run = promisify(execFile);
const env = { ...process.env, CONTAINERS_CONF: CONF };

export interface PodmanService {
  readonly socketPath: string;
  /** The same socket as DOCKER_HOST spells it. */
  readonly dockerHost: string;
  /** Gives up this caller's use; the last one stops the service. */
  stop(): Promise<void>;
}

let leases = 0;

/** Starts the shared service, or joins it when it is already running, with the test image in place. */
export async function startPodman(): Promise<PodmanService> {
  await requireTools();
  await mkdir(LEASES, { recursive: true });
  // Every podman command here reads it (env), so it is there before the first; written whole.
  const conf = `${CONF}.${process.pid}`;
  await writeFile(conf, CONTAINERS_CONF);
  await rename(conf, CONF);
  const lease = join(LEASES, `${process.pid}-${leases++}`);
  await locked(async () => {
    if (!(await answers())) await startService();
    const missing = [];
    for (const image of IMAGES) if (!(await hasImage(image.name))) missing.push(image);
    if (missing.length > 0) await buildImages(missing);
    await writeFile(lease, '');
  });
  let stopped = false;
  return {
    socketPath: SOCKET,
    dockerHost: `unix://${SOCKET}`,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await locked(() => release(lease));
    },
  };
}

async function requireTools(): Promise<void> {
  for (const tool of ['podman', 'runc']) {
    try {
      await run(tool, ['--version']);
    } catch (error) {
      const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
      throw new Error(`${tool} ${missing ? 'is not installed' : 'does not run'}; the container tests need it: ${INSTALL}`, { cause: error });
    }
  }
  if (!existsSync(BUSYBOX) || !(await isStatic(BUSYBOX))) {
    throw new Error(`${BUSYBOX} is missing or not statically linked; the test image needs busybox-static: ${INSTALL}`);
  }
}

// An ELF64 file without a PT_INTERP program header needs no dynamic loader inside the image.
async function isStatic(path: string): Promise<boolean> {
  const bytes = new Uint8Array(await readFile(path));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0) !== 0x7f454c46 || bytes[4] !== 2) return false;
  const phoff = Number(view.getBigUint64(0x20, true));
  const phentsize = view.getUint16(0x36, true);
  const phnum = view.getUint16(0x38, true);
  for (let i = 0; i < phnum; i++) {
    if (view.getUint32(phoff + i * phentsize, true) === 3) return false;
  }
  return true;
}

/** Runs `fn` holding the lock directory; a lock whose holder died (or that is very old) is broken. */
async function locked<T>(fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
  for (;;) {
    try {
      await mkdir(LOCK);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (await lockIsStale()) {
      await rm(LOCK, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`${LOCK} is held by another test process for too long`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  try {
    await writeFile(join(LOCK, 'pid'), String(process.pid));
    return await fn();
  } finally {
    await rm(LOCK, { recursive: true, force: true });
  }
}

async function lockIsStale(): Promise<boolean> {
  try {
    const holder = Number(await readFile(join(LOCK, 'pid'), 'utf8'));
    return !processAlive(holder);
  } catch {
    // No pid yet: the holder is between mkdir and writeFile, unless it died there long ago.
    const info = await stat(LOCK).catch(() => null);
    return info !== null && Date.now() - info.mtimeMs > STALE_LOCK_MS;
  }
}

/** Whether the service answers its ping. */
function answers(): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath: SOCKET, path: '/_ping', timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

async function startService(): Promise<void> {
  await rm(SOCKET, { force: true });
  const log = await open(SERVICE_LOG, 'a');
  const child = spawn('podman', ['system', 'service', '--time=0', `unix://${SOCKET}`], {
    // conmon leaves files (an `oom` marker) in its working directory: not the caller's tree.
    cwd: PODMAN_DIR,
    detached: true,
    stdio: ['ignore', log.fd, log.fd],
    env,
  });
  await log.close();
  let exited: string | null = null;
  child.on('exit', (code, signal) => (exited = `exited (${code ?? signal})`));
  child.on('error', (error) => (exited = error.message));
  child.unref();
  await writeFile(SERVICE_PID, String(child.pid));
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await answers())) {
    if (exited !== null || Date.now() > deadline) {
      const tail = (await readFile(SERVICE_LOG, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n');
      throw new Error(`podman system service ${exited ?? 'did not answer in time'} (${SERVICE_LOG}):\n${tail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function hasImage(name: string): Promise<boolean> {
  try {
    // An image of that name from an older build (without the command) is built again.
    const { stdout } = await run('podman', ['image', 'inspect', '--format', '{{json .Config.Cmd}}', name], { env });
    return stdout.trim() === JSON.stringify(TEST_IMAGE_COMMAND);
  } catch {
    return false;
  }
}

async function buildImages(images: readonly (typeof IMAGES)[number][]): Promise<void> {
  const dir = await mkdtemp(join(PODMAN_DIR, 'image-'));
  try {
    const root = join(dir, 'root');
    await mkdir(join(root, 'bin'), { recursive: true });
    await copyFile(BUSYBOX, join(root, 'bin', 'busybox'));
    for (const tool of BUSYBOX_TOOLS) await symlink('busybox', join(root, 'bin', tool));
    const tar = join(dir, 'image.tar');
    await run('tar', ['-C', root, '-cf', tar, '.']);
    for (const { name, changes } of images) await run('podman', ['import', ...changes.flatMap((c) => ['--change', c]), tar, name], { env });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Drops a lease (and those of dead processes); with none left, stops the service. */
async function release(lease: string): Promise<void> {
  await rm(lease, { force: true });
  let left = 0;
  for (const name of await readdir(LEASES)) {
    if (processAlive(Number(name.split('-')[0]))) left++;
    else await rm(join(LEASES, name), { force: true });
  }
  if (left > 0) return;
  const pid = Number(await readFile(SERVICE_PID, 'utf8').catch(() => ''));
  // The pid file may be older than the process now holding that pid: end only our service.
  const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (!processAlive(pid) || !command.includes(`unix://${SOCKET}`)) return;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 10_000;
  while (processAlive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  await rm(SOCKET, { force: true });
}
