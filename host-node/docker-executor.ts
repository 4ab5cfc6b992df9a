/**
 * The container executor of the Node host (core/jobs/executor.ts) over the Docker Engine API with
 * dockerode: Docker at /var/run/docker.sock or DOCKER_HOST, or Podman's Docker-compatible service.
 * Every job gets the same sandbox (containerOptions): no network, CPU and memory limits with no
 * swap, a pids limit, no capabilities, no-new-privileges, a read-only root with a small /tmp (and a
 * small tmpfs over each VOLUME its image declares), no mounts, an unprivileged user, a bounded log
 * on the engine's disk, and gVisor (runsc) when the engine has it.
 *
 * Out of memory. Docker sets `State.OOMKilled` when the memory limit kills a container; Podman
 * 4.3 on cgroup v1 does not (its conmon misses the cgroup's OOM notification: the container exits
 * 137, OOMKilled false, and the engine logs no `oom` event). Podman's stats give only the current
 * usage (no high-water mark, no fail count) and the cgroup goes with the container, so sampling
 * misses a job that fills its memory between two samples, and nothing is left to read after the
 * exit. So where the engine says no and the exit is 137 (SIGKILL), the executor asks, in order:
 *
 * 1. the kernel's log (host-node/kernel-oom-log.ts): a memory-cgroup OOM kill whose cgroup is named
 *    after the container's id. It names the container, and it outlives the cgroup and this executor
 *    (a host restart): it holds until the machine reboots or the kernel's ring buffer wraps. It
 *    needs root or CAP_SYSLOG, and an engine on this machine.
 * 2. where that log cannot be read: its own memory. A SIGKILL it did not ask for (stop()) of a
 *    container it has seen running (run, inspect, list, wait) is taken for the memory limit, the
 *    one other source of a SIGKILL inside the sandbox being the job killing itself. This memory is
 *    lost with the executor: after a restart, such an exit reads as not OOM-killed.
 *
 * A verdict, once reached for an exited container, is kept until remove().
 */

import { existsSync, readdirSync } from 'node:fs';
import type { Readable } from 'node:stream';
import type { ContainerCreateOptions, ContainerInspectInfo, DockerOptions, HostConfig, ImageInspectInfo } from 'dockerode';
import Docker from 'dockerode';
import {
  type ContainerSpec,
  type ContainerState,
  type EngineInfo,
  type Executor,
  ExecutorError,
  type ExecutorErrorCode,
  type LogLine,
  type LogOptions,
} from '../core/jobs/executor.ts';
import { MAX_LOG_LINE_BYTES } from '../core/jobs/wire.ts';
import { KERNEL_LOG, readMemcgOomKills } from './kernel-oom-log.ts';

/** Docker's socket when neither an option nor DOCKER_HOST names another. */
export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';
/** Processes (and threads) one job may have: enough for a build, not for a fork bomb. */
export const PIDS_LIMIT = 256;
/**
 * The job's only writable places, /tmp and each VOLUME its image declares: 16 MiB each, nothing
 * executable, no set-uid, no devices. Being tmpfs, they count against the job's memory limit.
 */
export const TMP_MOUNT_OPTIONS = 'rw,noexec,nosuid,nodev,size=16m';
/**
 * The engine's log of one job's output, per file, in bytes (HostConfig.LogConfig `max-size`, in
 * bytes because Docker reads `10m` as MiB and Podman as MB). Output beyond it is dropped by the
 * engine: Docker rotates to LOG_FILES files and deletes the oldest, Podman 4.3 (conmon, which
 * honours `max-size` and ignores `max-file`) truncates its one file. The host reads the output as
 * it comes into a bounded buffer of its own (core/jobs/log-buffer.ts).
 */
export const LOG_FILE_MAX_BYTES = 10 * 1024 * 1024;
/** How many log files of LOG_FILE_MAX_BYTES Docker keeps per job. */
export const LOG_FILES = 2;
/** The longest line logs() gives, in UTF-8 bytes (the wire's bound on a line): the rest of a longer one comes as the next line. */
export { MAX_LOG_LINE_BYTES };
/** How often wait() asks the engine to wait before it falls back to polling (WAIT_POLL_MS). */
export const WAIT_ATTEMPTS = 3;
/** wait()'s pause after the first failed attempt, doubled after each further one. */
export const WAIT_BACKOFF_MS = 250;
/** wait()'s polling interval once the engine's wait has failed WAIT_ATTEMPTS times. */
export const WAIT_POLL_MS = 1000;
/** nobody:nogroup, whatever the image says. */
export const JOB_USER = '65534:65534';
/** The sandboxing runtime, used when the engine has it. */
export const SANDBOX_RUNTIME = 'runsc';
/** How long info() waits for the engine to answer its ping. */
export const ENGINE_TIMEOUT_MS = 3000;
/** How long info() then waits for the engine's version and info, which can be slow to gather. */
export const ENGINE_INFO_TIMEOUT_MS = 30_000;
/** How long a missing image may take to pull. */
export const PULL_TIMEOUT_MS = 10 * 60_000;
/** stop()'s wait between SIGTERM and SIGKILL when the caller names none (Docker's own default). */
export const DEFAULT_GRACE_SECS = 10;

const MIB = 1024 * 1024;
// A removal takes the container's anonymous volumes with it (there should be none: see containerOptions).
const REMOVAL = { force: true, v: true };
const SIGKILL_EXIT = 137;
// Errors of the connection itself: the engine is not there (or not answering), not refusing.
const UNREACHABLE = new Set(['ENOENT', 'ECONNREFUSED', 'ECONNRESET', 'EACCES', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

export interface DockerExecutorOptions {
  /** The engine's unix socket; wins over `dockerHost` and DOCKER_HOST. */
  readonly socketPath?: string;
  /** The engine's address as DOCKER_HOST spells it (unix:///path, tcp://host:port); default: DOCKER_HOST. */
  readonly dockerHost?: string;
  /** The environment DOCKER_HOST is read from (default: process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** How long info() waits for the engine's ping (ENGINE_TIMEOUT_MS). */
  readonly engineTimeoutMs?: number;
  readonly pullTimeoutMs?: number;
  /** The kernel log read for OOM kills (KERNEL_LOG); null: never read it. */
  readonly kernelLog?: string | null;
}

/** A Docker client for the address the options and the environment name, and whether it is on this machine. */
function engineClient(options: DockerExecutorOptions): { docker: Docker; address: string; local: boolean } {
  const fromEnv = options.env ?? process.env;
  const host = options.socketPath !== undefined ? `unix://${options.socketPath}` : (options.dockerHost ?? fromEnv.DOCKER_HOST ?? '');
  const address = host === '' ? `unix://${DEFAULT_DOCKER_SOCKET}` : host;
  if (address.startsWith('unix://')) {
    // Named in full: the modem would otherwise take host, port and TLS from a tcp:// DOCKER_HOST.
    const socket: DockerOptions = { socketPath: address.slice('unix://'.length), host: undefined, port: undefined, protocol: 'http' };
    return { docker: new Docker(socket), address, local: true };
  }
  if (options.dockerHost === undefined && options.env === undefined) {
    // DOCKER_HOST of this process: the modem reads it with its TLS settings (DOCKER_CERT_PATH, …).
    return { docker: new Docker(), address, local: false };
  }
  const url = new URL(address.replace(/^tcp:/, 'http:'));
  const remote: DockerOptions = { host: url.hostname, port: url.port, protocol: url.protocol === 'https:' ? 'https' : 'http' };
  return { docker: new Docker(remote), address, local: false };
}

/** The parts of GET /version and GET /info this executor reads. */
export interface EngineFacts {
  readonly version: { Version?: string; Components?: readonly { Name?: string }[] };
  readonly info: {
    Runtimes?: Readonly<Record<string, { path?: string }>>;
    DefaultRuntime?: string;
    DiscoveredDevices?: readonly { Source?: string; ID?: string }[];
    CgroupVersion?: string;
    MemoryLimit?: boolean;
    CpuCfsQuota?: boolean;
    PidsLimit?: boolean;
  };
}

/** What `mesh doctor` asks of the engine: what it offers, the limits it can enforce, its images. */
export interface EngineReport {
  readonly engine: EngineInfo;
  readonly cgroupVersion: string | undefined;
  readonly memoryLimit: boolean;
  readonly cpuQuota: boolean;
  readonly pidsLimit: boolean;
  /** The tagged images on the engine (`localhost/busybox:test`). */
  readonly images: readonly string[];
}

/**
 * What the engine offers, from its version and info. Jobs run under gVisor when it is the engine's
 * default runtime, or when Docker lists it: a listed runtime with an absolute path on an engine on
 * this machine counts only if the path exists (`exists`), a remote engine's list is trusted.
 * Podman is held to its default runtime: its Docker API ignores `HostConfig.Runtime` (4.3 runs
 * runc when asked for runsc), and it lists every runtime its configuration knows, installed or
 * not. GPUs are the engine's CDI devices (nvidia.com/gpu=<n>, Docker 25+), else, when it lists the
 * nvidia runtime, the /dev/nvidia<n> devices of this machine.
 */
export function engineInfoOf(
  facts: EngineFacts,
  local: boolean,
  exists: (path: string) => boolean = existsSync,
  nvidiaDevices: () => number = countNvidiaDevices,
): EngineInfo {
  const podman = (facts.version.Components ?? []).some((c) => /podman/i.test(c.Name ?? ''));
  const engine = `${podman ? 'podman' : 'docker'} ${facts.version.Version ?? 'unknown'}`;
  const runtimes = facts.info.Runtimes ?? {};
  const present = (name: string): boolean => {
    const entry = runtimes[name];
    if (entry === undefined) return false;
    const path = entry.path ?? '';
    return !local || !path.startsWith('/') || exists(path);
  };
  const sandboxed = facts.info.DefaultRuntime === SANDBOX_RUNTIME || (!podman && present(SANDBOX_RUNTIME));
  const runtime = sandboxed ? SANDBOX_RUNTIME : (facts.info.DefaultRuntime ?? 'runc');
  const cdiGpus = (facts.info.DiscoveredDevices ?? []).filter(
    (d) => d.Source === 'cdi' && /^nvidia\.com\/gpu=/.test(d.ID ?? '') && d.ID !== 'nvidia.com/gpu=all',
  ).length;
  const gpus = cdiGpus > 0 ? cdiGpus : local && present('nvidia') ? nvidiaDevices() : 0;
  return { engine, runtime, sandboxed, gpus };
}

function countNvidiaDevices(): number {
  try {
    return readdirSync('/dev').filter((name) => /^nvidia\d+$/.test(name)).length;
  } catch {
    return 0;
  }
}

/**
 * The create request for one job: the sandbox every job gets, the spec's name, image, command,
 * environment and labels, gVisor when the engine has it, and GPUs as `docker run --gpus <n>` asks
 * for them (the engine's default GPU driver, capability "gpu"). `imageVolumes`, the paths the
 * image declares as VOLUMEs, get a tmpfs like /tmp: left alone, the engine would give each a
 * writable volume on the host's disk, outside the read-only root and the memory limit, and keep it
 * after the container.
 */
export function containerOptions(spec: ContainerSpec, engine: EngineInfo, imageVolumes: readonly string[] = []): ContainerCreateOptions {
  const memory = spec.memMb * MIB;
  const tmpfs: Record<string, string> = { '/tmp': TMP_MOUNT_OPTIONS };
  for (const path of imageVolumes) tmpfs[path] = TMP_MOUNT_OPTIONS;
  const hostConfig: HostConfig = {
    NetworkMode: 'none',
    Memory: memory,
    MemorySwap: memory,
    NanoCpus: Math.round(spec.cpuCores * 1e9),
    PidsLimit: PIDS_LIMIT,
    CapDrop: ['ALL'],
    SecurityOpt: ['no-new-privileges'],
    ReadonlyRootfs: true,
    Tmpfs: tmpfs,
    // Named, not the engine's default, so that the size cap applies (Podman takes json-file for its k8s-file).
    LogConfig: { Type: 'json-file', Config: { 'max-size': String(LOG_FILE_MAX_BYTES), 'max-file': String(LOG_FILES) } },
  };
  if (engine.sandboxed) hostConfig.Runtime = engine.runtime;
  if (spec.gpus > 0) hostConfig.DeviceRequests = [{ Driver: '', Count: spec.gpus, Capabilities: [['gpu']] }];
  const options: ContainerCreateOptions = {
    name: spec.name,
    Image: spec.image,
    Env: spec.env.map(([key, value]) => `${key}=${value}`),
    Labels: { ...spec.labels },
    User: JOB_USER,
    // No TTY: the engine keeps stdout and stderr apart in the logs.
    Tty: false,
    HostConfig: hostConfig,
  };
  if (spec.cmd !== null) options.Cmd = [...spec.cmd];
  return options;
}

interface EngineErrorShape {
  statusCode?: number;
  code?: string;
  name?: string;
  message?: string;
  json?: { message?: string } | null;
}

function statusOf(error: unknown): number | undefined {
  return (error as EngineErrorShape | null)?.statusCode;
}

/** The engine's own words for a failure, or the connection's. */
function reasonOf(error: unknown): string {
  const e = error as EngineErrorShape | null;
  const said = e?.json?.message;
  if (typeof said === 'string' && said !== '') return said;
  return e?.message ?? String(error);
}

function unreachable(error: unknown): boolean {
  const e = error as EngineErrorShape | null;
  return e?.statusCode === undefined && (UNREACHABLE.has(e?.code ?? '') || e?.name === 'AbortError' || e?.name === 'TimeoutError');
}

/** An ExecutorError for a failed engine call: 'no-engine' when the engine was not reached, else `code`. */
function failure(code: ExecutorErrorCode, what: string, error: unknown): ExecutorError {
  if (error instanceof ExecutorError) return error;
  return new ExecutorError(unreachable(error) ? 'no-engine' : code, `${what}: ${reasonOf(error)}`);
}

/** Unix ms of an engine timestamp; null for the zero time engines give for "not yet". */
function timeOf(stamp: string | undefined): number | null {
  if (stamp === undefined || stamp.startsWith('0001-')) return null;
  const ms = Date.parse(stamp);
  return Number.isNaN(ms) ? null : ms;
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const aborted = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }, ms);
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

type EngineProbe = (options: { abortSignal: AbortSignal }) => Promise<unknown>;

export class DockerExecutor implements Executor {
  readonly address: string;
  readonly #docker: Docker;
  readonly #local: boolean;
  readonly #engineTimeoutMs: number;
  readonly #pullTimeoutMs: number;
  readonly #kernelLog: string | null;
  #engine: EngineInfo | null = null;
  #facts: EngineFacts | null = null;
  // Full ids of containers this executor saw running, and of those it stopped (see the header).
  readonly #seenRunning = new Set<string>();
  readonly #stopped = new Set<string>();
  // OOM verdicts of exited containers, by id and finish time.
  readonly #verdicts = new Map<string, boolean>();

  constructor(options: DockerExecutorOptions = {}) {
    const { docker, address, local } = engineClient(options);
    this.#docker = docker;
    this.address = address;
    this.#local = local;
    this.#engineTimeoutMs = options.engineTimeoutMs ?? ENGINE_TIMEOUT_MS;
    this.#pullTimeoutMs = options.pullTimeoutMs ?? PULL_TIMEOUT_MS;
    this.#kernelLog = options.kernelLog === undefined ? KERNEL_LOG : options.kernelLog;
  }

  async info(): Promise<EngineInfo> {
    // The ping is cheap and says whether anything answers; /version and /info take their time
    // (over a second on Podman, which asks the package manager for its components' versions).
    const probe = async <T>(what: string, timeoutMs: number, call: (options: { abortSignal: AbortSignal }) => Promise<T>): Promise<T> => {
      try {
        return await call({ abortSignal: AbortSignal.timeout(timeoutMs) });
      } catch (error) {
        throw new ExecutorError('no-engine', `no container engine answers ${what} at ${this.address}: ${reasonOf(error)}`);
      }
    };
    // @types/dockerode leaves out the options these take.
    const ask = (method: 'ping' | 'version' | 'info') => this.#docker[method].bind(this.#docker) as unknown as EngineProbe;
    await probe('its ping', this.#engineTimeoutMs, ask('ping'));
    const [version, info] = await Promise.all([probe('/version', ENGINE_INFO_TIMEOUT_MS, ask('version')), probe('/info', ENGINE_INFO_TIMEOUT_MS, ask('info'))]);
    this.#facts = { version, info } as EngineFacts;
    this.#engine = engineInfoOf(this.#facts, this.#local);
    return this.#engine;
  }

  /** The engine's offer, the limits it can enforce and the images it holds. */
  async report(): Promise<EngineReport> {
    const engine = await this.info();
    const info = this.#facts!.info;
    let listed: { RepoTags?: string[] | null }[];
    try {
      listed = await this.#docker.listImages();
    } catch (error) {
      throw failure('engine-error', 'could not list the images', error);
    }
    const images = listed.flatMap((image) => image.RepoTags ?? []).filter((tag) => !tag.startsWith('<none>'));
    return {
      engine,
      cgroupVersion: info.CgroupVersion,
      memoryLimit: info.MemoryLimit !== false,
      cpuQuota: info.CpuCfsQuota !== false,
      pidsLimit: info.PidsLimit !== false,
      images,
    };
  }

  async run(spec: ContainerSpec): Promise<string> {
    const engine = this.#engine ?? (await this.info());
    const image = await this.#ensureImage(spec.image);
    let container: Docker.Container;
    try {
      container = await this.#docker.createContainer(containerOptions(spec, engine, Object.keys(image.Config?.Volumes ?? {})));
    } catch (error) {
      throw failure('start-failed', `could not create ${spec.name}`, error);
    }
    try {
      await container.start();
    } catch (error) {
      await container.remove(REMOVAL).catch(() => undefined);
      throw failure('start-failed', `could not start ${spec.name}`, error);
    }
    this.#seenRunning.add(container.id);
    return container.id;
  }

  /** The image's description (its VOLUMEs among it), pulled first when the engine does not have it. */
  async #ensureImage(image: string): Promise<ImageInspectInfo> {
    const here = await this.#inspectImage(image);
    if (here !== null) return here;
    try {
      await this.#pull(image);
    } catch (error) {
      throw failure('no-image', `image ${image} is not on this host and could not be pulled`, error);
    }
    const pulled = await this.#inspectImage(image);
    if (pulled === null) throw new ExecutorError('no-image', `image ${image} is not on this host after a pull that reported no error`);
    return pulled;
  }

  async #inspectImage(image: string): Promise<ImageInspectInfo | null> {
    try {
      return await this.#docker.getImage(image).inspect();
    } catch (error) {
      if (statusOf(error) === 404) return null;
      throw failure('engine-error', `could not look up image ${image}`, error);
    }
  }

  async #pull(image: string): Promise<void> {
    const abortSignal = AbortSignal.timeout(this.#pullTimeoutMs);
    let events: { error?: string; errorDetail?: { message?: string } }[];
    try {
      const stream = (await this.#docker.pull(image, { abortSignal })) as Readable;
      events = await new Promise((resolve, reject) => {
        this.#docker.modem.followProgress(stream, (error: Error | null, output: unknown[]) => (error ? reject(error) : resolve(output as typeof events)));
      });
    } catch (error) {
      if (abortSignal.aborted) throw new Error(`the pull took longer than ${this.#pullTimeoutMs} ms`);
      throw error;
    }
    // The engine may answer 200 and report the failure inside the progress stream.
    const failed = events.find((event) => event.error !== undefined || event.errorDetail !== undefined);
    if (failed !== undefined) throw new Error(failed.error ?? failed.errorDetail?.message ?? 'the pull failed');
  }

  async stop(id: string, options: { graceSecs?: number } = {}): Promise<void> {
    const raw = await this.#inspectRaw(id);
    if (raw === null) return;
    // Noted before the request: the exit it causes must never read as the memory limit's.
    this.#stopped.add(raw.Id);
    if (!raw.State.Running) return;
    try {
      await this.#docker.getContainer(raw.Id).stop({ t: options.graceSecs ?? DEFAULT_GRACE_SECS });
    } catch (error) {
      const status = statusOf(error);
      if (status === 304 || status === 404) return;
      throw failure('engine-error', `could not stop ${id}`, error);
    }
  }

  async remove(id: string): Promise<void> {
    try {
      await this.#docker.getContainer(id).remove(REMOVAL);
    } catch (error) {
      // 404: gone already; 409: another removal of it is under way.
      const status = statusOf(error);
      if (status !== 404 && status !== 409) throw failure('engine-error', `could not remove ${id}`, error);
    }
    for (const full of [...this.#seenRunning, ...this.#stopped]) {
      if (full.startsWith(id)) this.#forget(full);
    }
  }

  #forget(id: string): void {
    this.#seenRunning.delete(id);
    this.#stopped.delete(id);
    for (const key of this.#verdicts.keys()) if (key.startsWith(`${id}@`)) this.#verdicts.delete(key);
  }

  async inspect(id: string): Promise<ContainerState | null> {
    const raw = await this.#inspectRaw(id);
    return raw === null ? null : this.#stateOf(raw);
  }

  async #inspectRaw(id: string): Promise<ContainerInspectInfo | null> {
    try {
      return await this.#docker.getContainer(id).inspect();
    } catch (error) {
      if (statusOf(error) === 404) return null;
      throw failure('engine-error', `could not inspect ${id}`, error);
    }
  }

  async #stateOf(raw: ContainerInspectInfo): Promise<ContainerState> {
    const { State: state } = raw;
    if (state.Running) this.#seenRunning.add(raw.Id);
    const exited = state.Status === 'exited' || state.Status === 'dead';
    const exitCode = exited ? state.ExitCode : null;
    return {
      id: raw.Id,
      name: raw.Name.replace(/^\//, ''),
      labels: { ...(raw.Config.Labels ?? {}) },
      status: state.Status,
      running: state.Running,
      exitCode,
      oomKilled: state.OOMKilled || (exitCode === SIGKILL_EXIT && (await this.#memoryLimitKilled(raw))),
      startedAtMs: timeOf(state.StartedAt),
      finishedAtMs: exited ? timeOf(state.FinishedAt) : null,
    };
  }

  /** For an exit by SIGKILL the engine did not call an OOM kill: the evidence of the header, in its order. */
  async #memoryLimitKilled(raw: ContainerInspectInfo): Promise<boolean> {
    const key = `${raw.Id}@${raw.State.FinishedAt}`;
    const known = this.#verdicts.get(key);
    if (known !== undefined) return known;
    const kills = this.#kernelLog === null ? null : await readMemcgOomKills(this.#kernelLog);
    const verdict = kills !== null ? kills.some((memcg) => memcg.includes(raw.Id)) : this.#seenRunning.has(raw.Id) && !this.#stopped.has(raw.Id);
    this.#verdicts.set(key, verdict);
    return verdict;
  }

  /**
   * The engine's wait, asked again after a failure (a dropped connection, an engine restarting)
   * up to WAIT_ATTEMPTS times, then replaced by inspecting the container every WAIT_POLL_MS until it
   * no longer runs; an engine that does not answer is asked again until it does or `signal` aborts.
   * Only an abort, or the container gone, ends it without the final state.
   */
  async wait(id: string, options: { signal?: AbortSignal } = {}): Promise<ContainerState> {
    const { signal } = options;
    // Seen before it can exit, so that an exit nobody asked for is recognised (see the header).
    const before = await this.#inspectRaw(id).catch(() => undefined);
    if (before === null) throw new ExecutorError('engine-error', `no container ${id} to wait for`);
    if (before?.State.Running === true) this.#seenRunning.add(before.Id);
    const full = before?.Id ?? id;
    const container = this.#docker.getContainer(full);
    for (let attempt = 0; attempt < WAIT_ATTEMPTS; attempt++) {
      try {
        await container.wait(signal === undefined ? {} : { abortSignal: signal });
        break;
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (statusOf(error) === 404) break; // removed: the polling below says so
        if (attempt < WAIT_ATTEMPTS - 1) await pause(WAIT_BACKOFF_MS * 2 ** attempt, signal);
      }
    }
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      const raw = await this.#inspectRaw(full).catch(() => undefined);
      if (raw === null) throw new ExecutorError('engine-error', `container ${id} was removed while it was awaited`);
      if (raw !== undefined && !raw.State.Running) return this.#stateOf(raw);
      await pause(WAIT_POLL_MS, signal);
    }
  }

  async list(labels: Readonly<Record<string, string>>): Promise<ContainerState[]> {
    let summaries: Docker.ContainerInfo[];
    try {
      const label = Object.entries(labels).map(([key, value]) => `${key}=${value}`);
      summaries = await this.#docker.listContainers({ all: true, filters: { label } });
    } catch (error) {
      throw failure('engine-error', 'could not list containers', error);
    }
    // A container removed between the list and its inspection is left out.
    const states = await Promise.all(summaries.map((summary) => this.inspect(summary.Id)));
    return states.filter((state): state is ContainerState => state !== null);
  }

  async *logs(id: string, options: LogOptions = {}): AsyncIterable<LogLine> {
    const { follow = false, signal } = options;
    if (signal?.aborted) return;
    const container = this.#docker.getContainer(id);
    const request = { stdout: true, stderr: true, timestamps: true, ...(signal === undefined ? {} : { abortSignal: signal }) };
    let source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>;
    let stream: Readable | null = null;
    try {
      if (follow) {
        stream = (await container.logs({ ...request, follow: true })) as Readable;
        source = stream;
      } else {
        source = [await container.logs({ ...request, follow: false })];
      }
    } catch (error) {
      if (signal?.aborted) return;
      throw failure('engine-error', `could not read the logs of ${id}`, error);
    }
    try {
      yield* logLines(source);
    } catch (error) {
      if (signal?.aborted) return;
      throw failure('engine-error', `the logs of ${id} broke off`, error);
    } finally {
      stream?.destroy();
    }
  }
}

/** One frame of the engine's multiplexed stream: 1 stdout, 2 stderr (header: type, 3 zero bytes, length). */
interface Frame {
  readonly stream: 'stdout' | 'stderr';
  readonly payload: Uint8Array;
}

const FRAME_HEADER = 8;

/** The frames of a multiplexed log stream; a stream that is not multiplexed (a TTY) is all stdout. */
export async function* logFrames(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): AsyncGenerator<Frame> {
  let buffer = new Uint8Array(0);
  let raw = false;
  for await (const chunk of chunks) {
    if (raw) {
      yield { stream: 'stdout', payload: chunk };
      continue;
    }
    const joined = new Uint8Array(buffer.length + chunk.length);
    joined.set(buffer);
    joined.set(chunk, buffer.length);
    buffer = joined;
    while (buffer.length >= FRAME_HEADER) {
      const type = buffer[0];
      if (type !== 1 && type !== 2) {
        raw = true;
        yield { stream: 'stdout', payload: buffer };
        buffer = new Uint8Array(0);
        break;
      }
      const length = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength).getUint32(4);
      if (buffer.length < FRAME_HEADER + length) break;
      yield { stream: type === 1 ? 'stdout' : 'stderr', payload: buffer.slice(FRAME_HEADER, FRAME_HEADER + length) };
      buffer = buffer.subarray(FRAME_HEADER + length);
    }
  }
}

// The stamp `timestamps: true` puts before each log message: RFC 3339, nanoseconds on Docker, seconds on Podman.
const STAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) /;
const STAMP_MAX = 40;

interface Pending {
  /** The line so far, in pieces: joined once, when it is given. */
  parts: string[];
  /** Its length in UTF-8 bytes. */
  bytes: number;
  atMs: number;
  /** The frame its first piece came in: partial lines left at the end are given in that order. */
  frame: number;
  readonly decoder: TextDecoder;
}

/**
 * The lines of a multiplexed, timestamped log stream, in the order the engine gives them. A line
 * split across messages (a partial write, Docker's 16 KiB pieces) is joined and carries the stamp
 * of its first piece; a last line without a newline is given as it is. A line longer than
 * MAX_LOG_LINE_BYTES is cut there, between two characters, and its rest continues as the next line.
 * Each message is read once, so output without newlines costs time in proportion to its length.
 */
export async function* logLines(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): AsyncGenerator<LogLine> {
  const pending: Record<'stdout' | 'stderr', Pending | null> = { stdout: null, stderr: null };
  const ascii = new TextDecoder('latin1');
  let frames = 0;
  for await (const { stream, payload } of logFrames(chunks)) {
    const head = STAMP.exec(ascii.decode(payload.subarray(0, STAMP_MAX)));
    const atMs = head === null ? Date.now() : Date.parse(head[1] ?? '');
    const body = head === null ? payload : payload.subarray(head[0].length);
    const frame = frames++;
    const line = (pending[stream] ??= { parts: [], bytes: 0, atMs, frame, decoder: new TextDecoder() });
    if (line.parts.length === 0) {
      line.atMs = atMs;
      line.frame = frame;
    }
    const text = line.decoder.decode(body, { stream: true });
    for (let from = 0; from <= text.length; ) {
      const newline = text.indexOf('\n', from);
      const end = newline < 0 ? text.length : newline;
      for (const full of extend(line, text, from, end, atMs, frame)) yield { stream, ...full };
      if (newline < 0) break;
      yield { stream, ...take(line, atMs, frame) };
      from = newline + 1;
    }
  }
  const left: { stream: 'stdout' | 'stderr'; frame: number; lines: Taken[] }[] = [];
  for (const stream of ['stdout', 'stderr'] as const) {
    const line = pending[stream];
    if (line === null) continue;
    const { frame, atMs } = line;
    const rest = line.decoder.decode();
    const lines = extend(line, rest, 0, rest.length, atMs, frame);
    if (line.parts.length > 0) lines.push(take(line, atMs, frame));
    if (lines.length > 0) left.push({ stream, frame, lines });
  }
  for (const { stream, lines } of left.sort((a, b) => a.frame - b.frame)) {
    for (const taken of lines) yield { stream, ...taken };
  }
}

type Taken = Omit<LogLine, 'stream'>;

/**
 * Adds `text[from, end)` (no newline in it), which came in `frame`, to the pending line; returns
 * the lines it filled to MAX_LOG_LINE_BYTES, which the pending line no longer holds.
 */
function extend(line: Pending, text: string, from: number, end: number, atMs: number, frame: number): Taken[] {
  const full: Taken[] = [];
  while (from < end) {
    const cut = utf8Prefix(text, from, end, MAX_LOG_LINE_BYTES - line.bytes);
    if (cut.end > from) line.parts.push(text.slice(from, cut.end));
    line.bytes += cut.bytes;
    if (cut.end === end) break;
    full.push(take(line, atMs, frame));
    from = cut.end;
  }
  return full;
}

/** The pending line, given; it starts again empty, as of the stamp and frame of what follows. */
function take(line: Pending, atMs: number, frame: number): Taken {
  const taken = { text: line.parts.join(''), atMs: line.atMs };
  line.parts = [];
  line.bytes = 0;
  line.atMs = atMs;
  line.frame = frame;
  return taken;
}

/**
 * Where the longest prefix of `text[from, end)` of at most `room` UTF-8 bytes ends, and its bytes.
 * The text is a decoder's output, so a surrogate is always half of a pair, and a pair is kept whole.
 */
function utf8Prefix(text: string, from: number, end: number, room: number): { end: number; bytes: number } {
  let bytes = 0;
  let at = from;
  while (at < end) {
    const unit = text.charCodeAt(at);
    const size = unit < 0x80 ? 1 : unit < 0x800 ? 2 : unit >= 0xd800 && unit < 0xdc00 ? 4 : 3;
    if (bytes + size > room) break;
    bytes += size;
    at += size === 4 ? 2 : 1;
  }
  return { end: at, bytes };
}
