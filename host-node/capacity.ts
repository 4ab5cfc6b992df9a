/**
 * What this machine offers the mesh (node-api.md §2 "Atlas entry"): cores, memory and self-tags,
 * read from node:os and a few device and socket paths. The node adds its running jobs and
 * broadcasts the lot with `capacityCapabilities` every CAPACITY_INTERVAL_MS.
 */
import { statSync } from 'node:fs';
import os from 'node:os';

/** Cores, memory in MiB, and self-tags of this machine. */
export interface MachineCapacity {
  cpuCores: number;
  memMb: number;
  tags: string[];
}

/** What the probe reads; tests pass a fake machine. */
export interface MachineFacts {
  readonly cores: number;
  readonly totalMemBytes: number;
  readonly platform: string;
  readonly arch: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** 'socket', 'other' (any other kind of file), or 'missing'. */
  fileKind(path: string): 'socket' | 'other' | 'missing';
}

/** 16 or more cores. */
export const MANYCORE_CORES = 16;
/** 32 GiB or more (node-api.md: "32 GB"; read as 32 × 1024 MiB). */
export const HIGHMEM_MB = 32 * 1024;

const PLATFORM_TAGS: Readonly<Record<string, string>> = { linux: 'linux', darwin: 'macos', win32: 'windows' };
const ARCH_TAGS: Readonly<Record<string, string>> = { x64: 'x86_64', arm64: 'aarch64' };
const DOCKER_SOCKET = '/var/run/docker.sock';
const GPU_DEVICES = ['/dev/nvidia0', '/dev/dri/renderD128'];

function fileKind(path: string): 'socket' | 'other' | 'missing' {
  try {
    return statSync(path).isSocket() ? 'socket' : 'other';
  } catch {
    return 'missing';
  }
}

/** This machine, as node:os and the file system see it. */
export function thisMachine(): MachineFacts {
  return {
    cores: os.availableParallelism(),
    totalMemBytes: os.totalmem(),
    platform: process.platform,
    arch: process.arch,
    env: process.env,
    fileKind,
  };
}

// Docker is there when its socket is: DOCKER_HOST's unix path if set, else the default socket. A
// DOCKER_HOST that is not a unix socket (tcp://, npipe://) cannot be checked without a request, so
// the operator's setting is trusted.
function hasDocker(machine: MachineFacts): boolean {
  const host = machine.env['DOCKER_HOST'];
  if (host !== undefined && host !== '') {
    if (!host.startsWith('unix://')) return true;
    return machine.fileKind(host.slice('unix://'.length)) === 'socket';
  }
  return machine.fileKind(DOCKER_SOCKET) === 'socket';
}

/**
 * Probes this machine: cores (os.availableParallelism), total memory in MiB, and self-tags —
 * linux/macos/windows, x86_64/aarch64, docker (a reachable Docker socket), gpu (/dev/nvidia0 or
 * /dev/dri/renderD128), manycore (≥ 16 cores), highmem (≥ 32 GiB).
 */
export function probeCapacity(machine: MachineFacts = thisMachine()): MachineCapacity {
  const cpuCores = machine.cores;
  const memMb = Math.floor(machine.totalMemBytes / (1024 * 1024));
  const tags: string[] = [];
  const platform = PLATFORM_TAGS[machine.platform];
  if (platform !== undefined) tags.push(platform);
  const arch = ARCH_TAGS[machine.arch];
  if (arch !== undefined) tags.push(arch);
  if (hasDocker(machine)) tags.push('docker');
  if (GPU_DEVICES.some((path) => machine.fileKind(path) !== 'missing')) tags.push('gpu');
  if (cpuCores >= MANYCORE_CORES) tags.push('manycore');
  if (memMb >= HIGHMEM_MB) tags.push('highmem');
  return { cpuCores, memMb, tags };
}
