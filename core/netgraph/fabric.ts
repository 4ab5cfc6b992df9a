/**
 * FabricStats (node-messaging.md §2 "Planned"; docs/fabric.md "Fabric statistics"): what the mesh
 * offers as one node sees it, summed over the node profiles it holds and the atlas, with a `mesh`
 * block on the links it measured (stats.ts `meshStats`).
 */
import type { AtlasEntry } from '../signal/types.ts';
import type { ProfileBody } from './profile.ts';
import type { MeshStats } from './stats.ts';

export type { MeshStats } from './stats.ts';

export interface FabricStats {
  /** Distinct nodes known: this node, the atlas's and the profiles'. */
  nodes: number;
  /** Cores: a node's profile where it has one, else what its capacity broadcast says. */
  cpu_cores: number;
  /** fp32 GFLOPS of the CPUs measured. */
  cpu_gflops: number;
  gpus: number;
  gpu_vram_mb: number;
  /** fp16 TFLOPS of the GPUs measured. */
  gpu_tflops: number;
  tokens_per_sec: number;
  storage_free_gb: number;
  /** cpu_gflops + 1000 × gpu_tflops: the measured compute in GFLOPS (docs/fabric.md "perf_score"). */
  perf_score: number;
  mesh: MeshStats;
}

/** One GPU TFLOPS in GFLOPS, the weight of gpu_tflops in perf_score. */
export const GPU_TFLOPS_WEIGHT = 1000;

// Sums of floating-point figures are shown to a thousandth: more digits are measurement noise.
const round = (value: number): number => Math.round(value * 1000) / 1000;

/** The node ids FabricStats counts: `self`, the atlas's and the profiles'. */
export function knownNodes(self: string, atlas: readonly AtlasEntry[], profiles: readonly { readonly nodeId: string }[]): Set<string> {
  return new Set([self, ...atlas.map((e) => e.node_id), ...profiles.map((p) => p.nodeId)]);
}

/**
 * FabricStats over `profiles` (verified, live; this node's among them when it has one) and the
 * atlas's entries, with `mesh` as given. A figure a profile leaves null adds nothing.
 */
export function fabricStats(
  known: ReadonlySet<string>,
  atlas: readonly AtlasEntry[],
  profiles: readonly { readonly nodeId: string; readonly body: ProfileBody }[],
  mesh: MeshStats,
): FabricStats {
  const profiled = new Map(profiles.map((p) => [p.nodeId, p.body]));
  let cores = 0;
  for (const entry of atlas) if (!profiled.has(entry.node_id)) cores += entry.cpu_cores;
  let gflops = 0;
  let gpus = 0;
  let vram = 0;
  let tflops = 0;
  let tokens = 0;
  let free = 0;
  for (const body of profiled.values()) {
    cores += body.cpu.cores;
    gflops += body.cpu.gflops_fp32 ?? 0;
    gpus += body.gpus.length;
    for (const gpu of body.gpus) {
      vram += gpu.vram_mb;
      tflops += gpu.fp16_tflops ?? 0;
    }
    tokens += body.llm?.tokens_per_sec ?? 0;
    free += body.storage.free_gb;
  }
  return {
    nodes: known.size,
    cpu_cores: cores,
    cpu_gflops: round(gflops),
    gpus,
    gpu_vram_mb: vram,
    gpu_tflops: round(tflops),
    tokens_per_sec: round(tokens),
    storage_free_gb: round(free),
    perf_score: round(gflops + GPU_TFLOPS_WEIGHT * tflops),
    mesh,
  };
}
