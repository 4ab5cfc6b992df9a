/**
 * Node profiles and fabric statistics (node-messaging.md §2 and §4 "Planned"; docs/fabric.md):
 * POST /profiles takes a profile an app measured and has the node sign and gossip it (202),
 * GET /profiles lists the verified profiles held, GET /profiles/:node_id one of them,
 * GET /fabric/stats sums them with the atlas into FabricStats.
 */
import { array, boolean, min, nullable, number, object, string } from 'superstruct';
import type { FabricService } from '../../netgraph/service.ts';
import type { Feature } from '../feature.ts';
import { checkBody, nodeIdParam, wholeInteger } from '../input.ts';
import { ApiProblem } from '../problem.ts';

/** A profile's body is small: 16 GPUs of long names stay under 8 KiB. */
export const MAX_PROFILE_BODY_BYTES = 16 * 1024;

const count = min(wholeInteger(), 0);
const measuredFigure = nullable(number());

/** The shape of POST /profiles (bounds are the core's: core/netgraph/profile.ts checkMeasurement). */
export const ProfileBody = object({
  measured_at: count,
  cpu: object({ cores: count, threads: count, gflops_fp32: measuredFigure, mem_bw_gbps: measuredFigure }),
  gpus: array(object({ model: string(), backend: string(), vram_mb: count, fp16_tflops: measuredFigure })),
  memory: object({ total_mb: count, available_mb: count }),
  storage: object({ total_gb: number(), free_gb: number(), read_mbps: measuredFigure, write_mbps: measuredFigure }),
  llm: nullable(object({ ref_model: string(), tokens_per_sec: number() })),
  runtime: object({ os: string(), arch: string(), docker: boolean(), gvisor: boolean(), wasm: boolean() }),
});

/** `value` with every -0 made 0: JSON's "-0" is the number 0 to a client, and the codec has one spelling of it. */
function withoutNegativeZero(value: unknown): unknown {
  if (Object.is(value, -0)) return 0;
  if (Array.isArray(value)) return value.map(withoutNegativeZero);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutNegativeZero(v)]));
  return value;
}

export const fabricRoutes: Feature<FabricService> = (service, { json, query, readJson, reader }) => [
  {
    path: '/profiles',
    get: ({ url }) => {
      query(url);
      return json({ profiles: service.listProfiles() });
    },
    post: async ({ request, url }) => {
      query(url);
      const body = await readJson(request, { maxBytes: MAX_PROFILE_BODY_BYTES });
      const measurement = checkBody(withoutNegativeZero(body), ProfileBody);
      return json(await service.publishProfile(measurement), 202);
    },
  },
  {
    path: '/profiles/:node_id',
    get: ({ url, params }) => {
      const id = params.node_id!;
      nodeIdParam(id);
      query(url);
      const found = service.getProfile(id);
      if (found === undefined) throw new ApiProblem('unknown-profile', `this node holds no live profile of ${id}`);
      return json(found);
    },
  },
  reader('/fabric/stats', () => service.fabricStats()),
];
