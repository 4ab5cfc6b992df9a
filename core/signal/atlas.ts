/**
 * The atlas: the mesh's capacity map (node-api.md §2 "Atlas entry", GET /atlas). Nodes broadcast
 * their capacity every 60 s as signal capabilities `cpu`, `mem_mb` and `jobs` (the version holds
 * the figure) and, while they mine, one `tag:<t>` (version 1) per self-tag. Receivers fold those
 * signals into one entry per node and forget nodes not heard from for five intervals.
 */
import { NodeTable } from '../collections/node-table.ts';
import { pacedPeriodMs } from '../net/broadcast-pace.ts';
import type { Capability } from './signal.ts';
import type { AtlasEntry, SignalObject } from './types.ts';

/** How often a node broadcasts its capacity (node-api.md §2). */
export const CAPACITY_INTERVAL_MS = 60_000;
/** An entry not refreshed for this long is dropped: five missed broadcasts (of the base period; five paced periods past PACE_NODES nodes). */
export const ATLAS_EXPIRY_MS: number = 5 * CAPACITY_INTERVAL_MS;
/** Nodes the atlas holds (the least recently heard is dropped first). */
export const ATLAS_MAX_NODES = 10_000;

const TAG_PREFIX = 'tag:';

/** What a node has to offer: its cores, memory in MiB, running jobs, and self-tags. */
export interface Capacity {
  readonly cpuCores: number;
  readonly memMb: number;
  readonly runningJobs: number;
  readonly tags: readonly string[];
}

/**
 * The capabilities of a capacity signal: cpu, mem_mb and jobs, then `tag:<t>` for each self-tag
 * while the node mines (node-api.md: self-tags are advertised only while the node mines).
 */
export function capacityCapabilities(capacity: Capacity, mining: boolean): Capability[] {
  return [
    { name: 'cpu', version: capacity.cpuCores },
    { name: 'mem_mb', version: capacity.memMb },
    { name: 'jobs', version: capacity.runningJobs },
    ...(mining ? [...new Set(capacity.tags)].map((t) => ({ name: `${TAG_PREFIX}${t}`, version: 1 })) : []),
  ];
}

interface Seen {
  readonly entry: AtlasEntry;
  readonly seenMs: number;
  readonly nonce: number;
}

/** The capacity map built from capacity signals. Time is passed in, so tests control it. */
export class Atlas {
  readonly #nodes: NodeTable<Seen>;

  constructor(options: { maxNodes?: number } = {}) {
    // Past PACE_NODES nodes each broadcasts less often (core/net/broadcast-pace.ts): five of its periods.
    this.#nodes = new NodeTable(
      options.maxNodes ?? ATLAS_MAX_NODES,
      (seen, nowMs) => nowMs - seen.seenMs <= 5 * pacedPeriodMs(CAPACITY_INTERVAL_MS, this.#nodes.size + 1),
    );
  }

  /**
   * Folds a validated signal in. One carrying cpu, mem_mb and jobs replaces its sender's entry
   * (tags from its `tag:` capabilities, prefix stripped); any other signal is not a capacity
   * signal and is ignored, as is one older (by nonce) than the entry it would replace.
   * @returns whether the signal updated the atlas.
   */
  observe(signal: SignalObject, nowMs: number): boolean {
    let cpu: number | undefined;
    let mem: number | undefined;
    let jobs: number | undefined;
    const tags: string[] = [];
    for (const { name, version } of signal.capabilities) {
      if (name === 'cpu') cpu = version;
      else if (name === 'mem_mb') mem = version;
      else if (name === 'jobs') jobs = version;
      else if (name.startsWith(TAG_PREFIX) && name.length > TAG_PREFIX.length) tags.push(name.slice(TAG_PREFIX.length));
    }
    if (cpu === undefined || mem === undefined || jobs === undefined) return false;
    const known = this.#nodes.get(signal.from, nowMs);
    if (known !== undefined && signal.nonce <= known.nonce) return false;
    this.#nodes.set(signal.from, {
      entry: {
        node_id: signal.from,
        cpu_cores: cpu,
        mem_mb: mem,
        running_jobs: jobs,
        last_seen_secs: Math.floor(nowMs / 1000),
        tags,
      },
      seenMs: nowMs,
      nonce: signal.nonce,
    });
    return true;
  }

  /** The live entries, sorted by node_id; entries older than ATLAS_EXPIRY_MS are dropped for good. */
  entries(nowMs: number): AtlasEntry[] {
    return this.#nodes.live(nowMs).map((seen) => ({ ...seen.entry, tags: seen.entry.tags.slice() }));
  }

  /** Nodes held, expired ones included until the next `entries`. */
  get size(): number {
    return this.#nodes.size;
  }
}
