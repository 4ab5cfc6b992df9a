/**
 * Directed placement's routes (node-api.md §4 /mesh-deploy and /mesh-kill, §7; docs/placement.md):
 * this node carries the request to the target host, which decides.
 */
import type { PlacementService } from '../../placement/service.ts';
import type { Feature } from '../feature.ts';
import { meshDeployRequest, meshKillRequest } from '../input.ts';

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
