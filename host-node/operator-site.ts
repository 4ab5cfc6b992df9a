/**
 * The operator's page on the node's HTTP port: `/node` (the page), `/node/app.js` (its bundle,
 * made by esbuild from host-browser/operator/main.ts as the wallet's is) and `/node/page.css` (the
 * style it shares with the wallet). The page reads the API's
 * open GET routes and streams from the browser; it is served to this machine only, with the
 * wallet's headers (docs/operator.md). The node serves no token here: the operator pastes it.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { requireLoopback, requireSameOrigin } from '../core/api/access.ts';
import { problemResponse, WebProblem } from '../core/web/problem.ts';
import type { ClientInfo } from '../core/web/router.ts';
import type { FetchHandler } from './http-server.ts';
import { PAGE_STYLE, pageAnswer, pageBundle, pageRefusal } from './wallet-site.ts';

const PAGE = fileURLToPath(new URL('../host-browser/operator/index.html', import.meta.url));
const ENTRY = fileURLToPath(new URL('../host-browser/operator/main.ts', import.meta.url));

/** The operator page's bundle. */
export function operatorBundle(): Promise<string> {
  return pageBundle(ENTRY);
}

/** `api` with the operator page's paths in front of it. */
export function withOperatorPage(api: FetchHandler): FetchHandler {
  return async (request: Request, client: ClientInfo): Promise<Response> => {
    const url = new URL(request.url);
    const path = url.pathname;
    if (path !== '/node' && !path.startsWith('/node/')) return api(request, client);
    const refused = pageRefusal(request, path, () => {
      requireLoopback(url, client.remoteAddress);
      // A page elsewhere (another port on localhost included) may not even fetch this one.
      requireSameOrigin(request, url);
    });
    if (refused !== undefined) return refused;
    if (path === '/node' || path === '/node/') return pageAnswer(await readFile(PAGE, 'utf8'), 'text/html; charset=utf-8', 'no-cache');
    if (path === '/node/app.js') return pageAnswer(await operatorBundle(), 'text/javascript; charset=utf-8', 'no-cache');
    if (path === '/node/page.css') return pageAnswer(await readFile(PAGE_STYLE, 'utf8'), 'text/css; charset=utf-8', 'no-cache');
    return problemResponse(new WebProblem('not-found', `no operator page file at ${path}`));
  };
}
