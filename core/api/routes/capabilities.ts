/**
 * The capability routes (node-messaging.md `POST /capabilities/revoke`, node-api.md §5 items 4–6;
 * docs/capabilities.md): POST /capabilities/revoke revokes a link this node issued, POST /trust
 * grants or withdraws this node's admin trust in another node. Both answer 202 once the transaction
 * is pooled; the chain takes it in its next blocks.
 *
 * There is no GET /trust: the ledger state has no scan of one granter's trust entries, and listing
 * them would mean reading the whole state.
 */
import { boolean, object, optional, refine, string } from 'superstruct';
import type { CapabilitiesService } from '../../capabilities/service.ts';
import { decodeToken, MAX_LINKS } from '../../capabilities/token.ts';
import { fromHex } from '../../encoding/hex.ts';
import type { Feature } from '../feature.ts';
import { checkBody, NodeId, wholeInteger } from '../input.ts';

/** POST /capabilities/revoke. The token is decoded after the body passes (400 `bad-grant` if it does not). */
export const RevokeBody = object({
  token: refine(string(), 'token', (text) => text.length > 0 || 'must be a capability token (mcap1.…)'),
  link: optional(refine(wholeInteger(), 'link index', (n) => (n >= 0 && n < MAX_LINKS) || `must be a link's index, 0 to ${MAX_LINKS - 1}`)),
});

/** POST /trust. */
export const TrustBody = object({ node_id: NodeId, trusted: boolean() });

export const capabilityRoutes: Feature<CapabilitiesService> = (service, { json, query, readJson }) => [
  {
    path: '/capabilities/revoke',
    post: async ({ request, url }) => {
      query(url);
      const body = checkBody(await readJson(request), RevokeBody);
      const answer = await service.revokeCapability(decodeToken(body.token), body.link);
      return json(answer, 202);
    },
  },
  {
    path: '/trust',
    post: async ({ request, url }) => {
      query(url);
      const body = checkBody(await readJson(request), TrustBody);
      return json(await service.setTrust(fromHex(body.node_id, 32), body.trusted), 202);
    },
  },
];
