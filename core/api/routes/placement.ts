/**
 * Directed placement's routes (node-api.md §4 /mesh-deploy and /mesh-kill, §7; docs/placement.md):
 * this node carries the request to the target host, which decides.
 */
import type { DeployRequest, KillRequest } from '../../placement/caller.ts';
import type { Feature } from '../feature.ts';
import { meshDeployRequest, meshKillRequest } from '../input.ts';

export interface PlacementService {
  /**
   * Asks the target host to run a heartbeat-billed job, pays for it once the host holds room, and
   * resolves when the host reports it running. PlacementError: 'self' (400), a host's reason
   * (502), 'timeout' (504); CapabilityError 'malformed' (400) for a grant that does not decode.
   */
  meshDeploy(request: DeployRequest): Promise<{ job_id: string }>;
  /** Asks the target host to stop a job; the same errors. */
  meshKill(request: KillRequest): Promise<void>;
}

export const placementRoutes: Feature<PlacementService> = (service, { json, query, readJson }) => [
  {
    path: '/mesh-deploy',
    post: async ({ request, url }) => {
      query(url);
      return json(await service.meshDeploy(meshDeployRequest(await readJson(request))));
    },
  },
  {
    path: '/mesh-kill',
    post: async ({ request, url }) => {
      query(url);
      await service.meshKill(meshKillRequest(await readJson(request)));
      return new Response(null, { status: 204 });
    },
  },
];
