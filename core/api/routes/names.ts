/**
 * Node names' routes (node-messaging.md `/names/claim`, `/names/:name`; docs/names.md):
 * POST /names/claim claims or renews a name (202 once the NameClaim is pooled), GET /names/:name
 * resolves one on the chain this node holds, GET /names?owner=<node_id> lists a node's live names
 * (this node's without `owner`).
 */
import { object, refine, string } from 'superstruct';
import { isName, NAME_RULE } from '../../names/names.ts';
import type { NamesService } from '../../names/service.ts';
import type { Feature } from '../feature.ts';
import { badQuery, checkBody, nodeIdParam } from '../input.ts';
import { ApiProblem } from '../problem.ts';

export const ClaimBody = object({ name: refine(string(), 'name', (name) => isName(name) || `must be a name: ${NAME_RULE}`) });

function nameParam(value: string): string {
  if (isName(value)) return value;
  throw badQuery('name', `must be ${NAME_RULE}`);
}

export const nameRoutes: Feature<NamesService> = (service, { json, query, readJson }) => [
  {
    path: '/names/claim',
    post: async ({ request, url }) => {
      query(url);
      const { name } = checkBody(await readJson(request), ClaimBody);
      return json(await service.claimName(name), 202);
    },
  },
  {
    // GET /names/claim resolves the name "claim": the route above takes only POST.
    path: '/names/:name',
    get: ({ url, params }) => {
      const name = nameParam(params.name!);
      query(url);
      const found = service.resolveName(name);
      if (found === undefined) throw new ApiProblem('unknown-name', `no node holds the name ${name} on this node's chain (never claimed, or lapsed)`);
      return json(found);
    },
  },
  {
    path: '/names',
    get: ({ url }) => {
      const { owner } = query(url, ['owner']);
      return json(service.listNames(owner === undefined ? null : nodeIdParam(owner, 'owner')));
    },
  },
];
