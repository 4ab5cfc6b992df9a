/**
 * What a host takes: the operator's image allow-list and the capacity it offers, and the check of
 * one spec against them that gives every reason a job does not fit (docs/jobs.md "Hosting").
 */
import { IMAGE_REFERENCE_RULE, isImageReference, normalizeImage } from './image.ts';
import type { JobSpec } from './spec.ts';

export interface HostPolicy {
  /**
   * Images the operator allows (`--allow-image`): `localhost/busybox` allows every tag of that one
   * image, `docker.io/library/` every official image, `*` anything (see `imageAllowed`). Empty (the
   * default): this node runs no jobs.
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
 * Whether `image` is allowed by one of the entries: `*` allows any image; an entry ending in `/`
 * allows every image under that path; any other entry names one repository and allows exactly it,
 * with or without a tag or digest (`localhost/busybox` allows `localhost/busybox:test`, not
 * `localhost/busybox-evil` nor `localhost/busybox/evil`). Entries and the image are compared in
 * their full names (`busybox` is `docker.io/library/busybox`). Nothing that is not an image
 * reference is allowed, so a spec from the network cannot slip past the list by its spelling.
 */
export function imageAllowed(image: string, allowed: readonly string[]): boolean {
  if (!isImageReference(image)) return false;
  const name = normalizeImage(image);
  return allowed.some((entry) => {
    if (entry === '*') return true;
    const prefix = normalizeImage(entry);
    if (!name.startsWith(prefix)) return false;
    if (prefix.endsWith('/')) return true;
    // After the repository only a tag or a digest, which the grammar keeps free of `/`.
    const rest = name.slice(prefix.length);
    return rest === '' || rest[0] === ':' || rest[0] === '@';
  });
}

/**
 * Whether every image `entry` allows is also allowed by `parent` (both entries as `imageAllowed`
 * reads them): `*` is within `*` only; a path (ending in `/`) within a path it starts with; a
 * repository, or one of its tags or digests, within a path above it or that same repository.
 */
export function entryWithin(entry: string, parent: string): boolean {
  if (parent === '*') return true;
  if (entry === '*') return false;
  const inner = normalizeImage(entry);
  const outer = normalizeImage(parent);
  if (outer.endsWith('/')) return inner.startsWith(outer);
  return !inner.endsWith('/') && imageAllowed(entry, [parent]);
}

/**
 * Every reason `spec` does not fit `policy` with `inUse` taken, or none. An `authorised` job
 * (directed placement by an admin or a capability token) is not held to the image allow-list.
 */
export function refusalsOf(
  spec: JobSpec,
  policy: HostPolicy,
  inUse: InUse,
  engine: { ready: boolean; gpus: number },
  options: { authorised?: boolean } = {},
): string[] {
  const reasons: string[] = [];
  if (!engine.ready) reasons.push('no container runtime');
  // A spec from the network was never checked by this node's API: its image is, here.
  if (options.authorised !== true && policy.allowImages.length === 0) reasons.push('this node runs no jobs (no image allowed)');
  else if (!isImageReference(spec.image)) reasons.push(`image ${JSON.stringify(spec.image)} is not ${IMAGE_REFERENCE_RULE}`);
  else if (options.authorised !== true && !imageAllowed(spec.image, policy.allowImages)) reasons.push(`image not allowed: ${spec.image}`);
  const freeCores = Math.max(0, policy.cpuCores - inUse.cpuCores);
  if (spec.cpu_cores > freeCores) reasons.push(`needs ${spec.cpu_cores} cores, ${freeCores} free`);
  const freeMem = Math.max(0, policy.memMb - inUse.memMb);
  if (spec.mem_mb > freeMem) reasons.push(`needs ${spec.mem_mb} MiB, ${freeMem} MiB free`);
  if (spec.gpus > engine.gpus) reasons.push(`needs ${spec.gpus} GPUs, ${engine.gpus} here`);
  return reasons;
}
