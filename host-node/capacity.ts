/**
 * What this machine offers the mesh (node-api.md §2 "Atlas entry"): cores, memory and the machine's
 * self-tags, read from node:os. The node adds its running jobs and the tags its container engine
 * earns (`docker` when the engine answers, `gpu` when it can give GPUs: core/node/node.ts), and
 * broadcasts the lot with `capacityCapabilities` every CAPACITY_INTERVAL_MS.
 */
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
}

/** 16 or more cores. */
export const MANYCORE_CORES = 16;
/** 32 GiB or more (node-api.md: "32 GB"; read as 32 × 1024 MiB). */
export const HIGHMEM_MB = 32 * 1024;

const PLATFORM_TAGS: Readonly<Record<string, string>> = { linux: 'linux', darwin: 'macos', win32: 'windows' };
const ARCH_TAGS: Readonly<Record<string, string>> = { x64: 'x86_64', arm64: 'aarch64' };

/** This machine, as node:os sees it. */
export function thisMachine(): MachineFacts {
  return {
    cores: os.availableParallelism(),
    totalMemBytes: os.totalmem(),
    platform: process.platform,
    arch: process.arch,
  };
}

/**
 * Probes this machine: cores (os.availableParallelism), total memory in MiB, and self-tags —
 * linux/macos/windows, x86_64/aarch64, manycore (≥ 16 cores), highmem (≥ 32 GiB).
 */
export function probeCapacity(machine: MachineFacts = thisMachine()): MachineCapacity {
  const cpuCores = machine.cores;
  const memMb = Math.floor(machine.totalMemBytes / (1024 * 1024));
  const tags: string[] = [];
  const platform = PLATFORM_TAGS[machine.platform];
  if (platform !== undefined) tags.push(platform);
  const arch = ARCH_TAGS[machine.arch];
  if (arch !== undefined) tags.push(arch);
  if (cpuCores >= MANYCORE_CORES) tags.push('manycore');
  if (memMb >= HIGHMEM_MB) tags.push('highmem');
  return { cpuCores, memMb, tags };
}
