/**
 * The node itself: GET /health, /status and /bootstrap (node-api.md §4).
 */
import type { LedgerStatus } from '../../ledger/status.ts';
import type { Feature } from '../feature.ts';

/** GET /status: the ledger figures plus the node's identity and tip. */
export interface NodeStatus extends LedgerStatus {
  node_id: string;
  height: number;
  difficulty: 0;
}

export interface NodeInfoService {
  /** 64-hex NodeId. */
  readonly nodeId: string;
  status(): NodeStatus;
  /** Multiaddrs a newcomer can join through: this node's own dialable addresses, then its peers'. */
  bootstrap(): string[];
}

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
