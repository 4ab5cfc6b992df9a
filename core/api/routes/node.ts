/**
 * The node itself: GET /health, /status and /bootstrap (node-api.md §4).
 */
import type { NodeInfoService } from '../../node/ledger-service.ts';
import type { Feature } from '../feature.ts';

export const nodeRoutes: Feature<NodeInfoService> = (service, { query, reader }) => [
  {
    path: '/health',
    get: ({ url }) => {
      query(url);
      return new Response('ok', { headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' } });
    },
  },
  reader('/status', () => service.status()),
  reader('/bootstrap', () => ({ peers: service.bootstrap() })),
];
