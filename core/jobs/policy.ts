/**
 * What a host takes: the operator's image allow-list and the capacity it offers, and the check of
 * one spec against them that gives every reason a job does not fit (docs/jobs.md "Hosting").
 */
import type { JobSpec } from './spec.ts';

export interface HostPolicy {
  /**
   * Image prefixes the operator allows (`--allow-image`): `localhost/busybox` allows every tag of
   * that image, `docker.io/library/` every official image, `*` anything. Empty (the default): this
   * node runs no jobs.
   */
  readonly allowImages: readonly string[];
  /** Cores and memory this node offers to jobs (default: the machine's). */
  readonly cpuCores: number;
  readonly memMb: number;
}

/** What is taken by the jobs a host runs or holds a reservation for. */
export interface InUse {
  readonly cpuCores: number;
  readonly memMb: number;
}

/**
 * The full name of an image reference, as engines read it: a bare name is an official Docker Hub
 * image (`busybox` → `docker.io/library/busybox`), a path without a registry host is on Docker Hub.
 */
export function normalizeImage(reference: string): string {
  const slash = reference.indexOf('/');
  if (slash < 0) return `docker.io/library/${reference}`;
  const first = reference.slice(0, slash);
  if (first === 'localhost' || first.includes('.') || first.includes(':')) return reference;
  return `docker.io/${reference}`;
}

/** Whether `image` is allowed by one of the prefixes. */
export function imageAllowed(image: string, allowed: readonly string[]): boolean {
  const name = normalizeImage(image);
  return allowed.some((entry) => {
    if (entry === '*') return true;
    const prefix = normalizeImage(entry);
    if (!name.startsWith(prefix)) return false;
    // `localhost/busybox` allows `localhost/busybox:test`, not `localhost/busybox-evil`.
    return prefix.endsWith('/') || name.length === prefix.length || ':@/'.includes(name[prefix.length]!);
  });
}

/** Every reason `spec` does not fit `policy` with `inUse` taken, or none. */
export function refusalsOf(spec: JobSpec, policy: HostPolicy, inUse: InUse, engine: { ready: boolean; gpus: number }): string[] {
  const reasons: string[] = [];
  if (!engine.ready) reasons.push('no container runtime');
  if (policy.allowImages.length === 0) reasons.push('this node runs no jobs (no image allowed)');
  else if (!imageAllowed(spec.image, policy.allowImages)) reasons.push(`image not allowed: ${spec.image}`);
  const freeCores = Math.max(0, policy.cpuCores - inUse.cpuCores);
  if (spec.cpu_cores > freeCores) reasons.push(`needs ${spec.cpu_cores} cores, ${freeCores} free`);
  const freeMem = Math.max(0, policy.memMb - inUse.memMb);
  if (spec.mem_mb > freeMem) reasons.push(`needs ${spec.mem_mb} MiB, ${freeMem} MiB free`);
  if (spec.gpus > engine.gpus) reasons.push(`needs ${spec.gpus} GPUs, ${engine.gpus} here`);
  return reasons;
}
