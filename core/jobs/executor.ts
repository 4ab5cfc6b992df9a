/**
 * The container executor port: what a host needs of a container engine to run jobs. The Node host
 * implements it with dockerode against the Docker Engine API (host-node/docker-executor.ts; Docker,
 * or Podman's Docker-compatible service in tests); the browser has none. The core decides what runs
 * and for how long; the executor only does what it is told, with the sandbox every job gets
 * (docs/jobs.md, "The sandbox"): network none, CPU and memory hard limits with no swap, a pids
 * limit, every capability dropped, no-new-privileges, a read-only root with a small /tmp, no mounts.
 */
import { MeshError } from '../errors.ts';

/** What the engine offers, read from its info endpoint. */
export interface EngineInfo {
  /** The engine's name and version, for logs and the status (e.g. "podman 4.3.1"). */
  readonly engine: string;
  /** The runtime jobs run under: 'runsc' (gVisor) when the engine lists it, else the engine's default. */
  readonly runtime: string;
  /** Whether that runtime is a sandbox (gVisor); false means a warning was logged. */
  readonly sandboxed: boolean;
  /** GPUs the engine can give containers (0 when none). */
  readonly gpus: number;
}

/** One job container to start. */
export interface ContainerSpec {
  /** A container name unique on the engine (mesh-job-<first 16 hex of the job id>). */
  readonly name: string;
  readonly image: string;
  /** null: the image's entrypoint and command. */
  readonly cmd: readonly string[] | null;
  readonly env: readonly (readonly [string, string])[];
  readonly cpuCores: number;
  readonly memMb: number;
  /** GPUs to request (0: none). */
  readonly gpus: number;
  /** Labels that let a restarted host find its containers again (JOB_LABELS). */
  readonly labels: Readonly<Record<string, string>>;
}

/** The labels every job container carries. */
export const JOB_LABELS = {
  /** The job id (64 hex). */
  job: 'mesh.job',
  /** The hosting node's id (64 hex): a host lists only its own containers. */
  node: 'mesh.node',
  /** The chain's network name. */
  network: 'mesh.network',
} as const;

/** A container as the engine reports it. */
export interface ContainerState {
  readonly id: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** created, running, exited, …, as the engine says. */
  readonly status: string;
  readonly running: boolean;
  /** Exit code once it has exited, else null. */
  readonly exitCode: number | null;
  /**
   * Whether the memory limit ended it: the engine's OOMKilled flag, or, where the engine does not
   * set it (Podman 4.3), the executor's own evidence for an exit by SIGKILL (137): the kernel's
   * record of an OOM kill in the container's memory cgroup, or, where that log cannot be read, a
   * SIGKILL that stop() did not ask for (host-node/docker-executor.ts says what survives a restart).
   */
  readonly oomKilled: boolean;
  /** Unix ms; null before it started / while it runs. */
  readonly startedAtMs: number | null;
  readonly finishedAtMs: number | null;
}

/** One line of a container's output. */
export interface LogLine {
  readonly stream: 'stdout' | 'stderr';
  /**
   * The line without its newline (a partial last line is given as it is); at most
   * MAX_LOG_LINE_BYTES (./wire.ts) of UTF-8, a longer line coming as several.
   */
  readonly text: string;
  /** Unix ms the engine stamped it with. */
  readonly atMs: number;
}

export interface LogOptions {
  /** Keep the iteration open and deliver lines as they come until the container exits. */
  readonly follow?: boolean;
  /** Ends the iteration early. */
  readonly signal?: AbortSignal;
}

export interface Executor {
  /**
   * What the engine offers. Throws ExecutorError 'no-engine' when the engine does not answer
   * (the host then advertises no `docker` tag and refuses jobs with "no container runtime").
   */
  info(): Promise<EngineInfo>;
  /** Creates and starts a container; resolves to its id. Throws ExecutorError ('no-image', 'start-failed', …). */
  run(spec: ContainerSpec): Promise<string>;
  /** Stops a container (SIGTERM, then SIGKILL after `graceSecs`); a stopped or missing one is no error. */
  stop(id: string, options?: { graceSecs?: number }): Promise<void>;
  /** The container's state, or null when the engine has no such container. */
  inspect(id: string): Promise<ContainerState | null>;
  /**
   * Resolves with the final state once the container has exited (at once if it already has),
   * riding out an engine that fails for a while; rejects when aborted or the container is gone.
   */
  wait(id: string, options?: { signal?: AbortSignal }): Promise<ContainerState>;
  /** The container's output, line by line, typed stdout or stderr, from its start. */
  logs(id: string, options?: LogOptions): AsyncIterable<LogLine>;
  /** The containers (running or not) carrying every label in `labels`. */
  list(labels: Readonly<Record<string, string>>): Promise<ContainerState[]>;
  /** Removes a container (stopping it first); a missing one is no error. */
  remove(id: string): Promise<void>;
}

/** Every code an ExecutorError carries. */
export const EXECUTOR_ERRORS = ['no-engine', 'no-image', 'start-failed', 'engine-error'] as const;
export type ExecutorErrorCode = (typeof EXECUTOR_ERRORS)[number];

/** The engine refused or could not be reached; `message` says why in words a job's status can show. */
export class ExecutorError extends MeshError {
  declare readonly code: ExecutorErrorCode;

  constructor(code: ExecutorErrorCode, message: string) {
    super(code, message);
  }
}
