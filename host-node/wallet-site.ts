/**
 * The wallet page on the node's HTTP port: `/wallet` (the page), `/wallet/app.js` (its bundle,
 * made by esbuild from host-browser/wallet/main.ts on first request and kept in memory),
 * `/wallet/page.css` (the style the node's pages share) and
 * `/wallet/config.json` (the network, this node's WebSocket addresses and a trusted checkpoint).
 * The node keeps nothing for the wallet: keys, chain and signatures stay in the page.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { requireLocalHostName } from '../core/api/access.ts';
import { ApiProblem } from '../core/api/problem.ts';
import type { Chain } from '../core/chain/chain.ts';
import { toHex } from '../core/encoding/hex.ts';
import { problemResponse, WebProblem } from '../core/web/problem.ts';
import type { ClientInfo } from '../core/web/router.ts';
import type { FetchHandler } from './http-server.ts';

const PAGE = fileURLToPath(new URL('../host-browser/wallet/index.html', import.meta.url));
const ENTRY = fileURLToPath(new URL('../host-browser/wallet/main.ts', import.meta.url));
/** The stylesheet the node's pages share, served beside each page as `page.css`. */
export const PAGE_STYLE = fileURLToPath(new URL('../host-browser/page.css', import.meta.url));

/** Checkpoints fall on multiples of this height, so pages starting near each other ask for one snapshot. */
export const CHECKPOINT_EVERY = 100;
/** A checkpoint is at least this many blocks below the tip, so a short reorganisation cannot drop it. */
export const CHECKPOINT_DEPTH = 10;

/** The height a page starts from when the tip is `tip` and the lowest held block `base`. */
export function checkpointHeight(tip: number, base: number): number {
  const below = Math.max(0, tip - CHECKPOINT_DEPTH);
  return Math.max(base, below - (below % CHECKPOINT_EVERY));
}

export interface WalletSiteOptions {
  readonly chain: Chain;
  /** This node's listen multiaddrs (the page picks the WebSocket ones). */
  readonly addresses: () => string[];
  /** This node's libp2p peer id, appended to the addresses the page dials. */
  readonly peerId: string;
}

/** How the page's bundle is built: one minified ES module for browsers (the benchmark builds its baseline the same way). */
export const WALLET_BUILD = {
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2023',
  minify: true,
  write: false,
  logLevel: 'silent',
} as const satisfies esbuild.BuildOptions;

// Each page's bundle, built once, by entry file.
const bundles = new Map<string, Promise<string>>();

/** The bundle of the page whose code starts at `entry` (a file path), built on first call and kept. */
export function pageBundle(entry: string): Promise<string> {
  let bundle = bundles.get(entry);
  if (bundle === undefined) {
    bundle = esbuild
      .build({ ...WALLET_BUILD, entryPoints: [entry] })
      .then((result) => result.outputFiles[0]!.text)
      .catch((error: unknown) => {
        bundles.delete(entry);
        throw error;
      });
    bundles.set(entry, bundle);
  }
  return bundle;
}

/** The wallet page's bundle. */
export function walletBundle(): Promise<string> {
  return pageBundle(ENTRY);
}

// WebSocket addresses the page can dial: the host the page was loaded from first, then the others.
function hostAddresses(options: WalletSiteOptions, requestHost: string): string[] {
  const ws = options
    .addresses()
    .filter((a) => a.includes('/ws') && !a.includes('/p2p-circuit'))
    .map((a) => (a.includes('/p2p/') ? a : `${a}/p2p/${options.peerId}`));
  const same = ws.filter((a) => a.includes(`/${requestHost}/`));
  return [...same, ...ws.filter((a) => !same.includes(a))];
}

/**
 * Headers on every wallet answer. The policy lets the page load only its own bundle, connect to its
 * host and to WebSocket hosts (ws: for loopback devnets, wss: on HTTPS), and be framed by nobody.
 * The inline style block needs 'unsafe-inline' for styles; scripts come from 'self' only, and
 * 'wasm-unsafe-eval' lets the bundle compile its WebAssembly (JavaScript eval stays refused).
 */
export const WALLET_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self' ws: wss:; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
} as const;

/** A page's file or data, with the pages' headers. */
export const pageAnswer = (body: string, type: string, cache: string): Response =>
  new Response(body, { headers: { 'content-type': type, 'cache-control': cache, ...WALLET_HEADERS } });

/**
 * The answer to a request for a page's file that `check` (the page's access rules, throwing an
 * ApiProblem) refuses, or that is not a read; undefined when it may be served.
 */
export function pageRefusal(request: Request, path: string, check: () => void): Response | undefined {
  try {
    check();
  } catch (error) {
    if (error instanceof ApiProblem) return problemResponse(error);
    throw error;
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    return problemResponse(new WebProblem('method-not-allowed', `${path} is read with GET`, {}, { allow: 'GET, HEAD' }));
  }
  return undefined;
}

/** `api` with the wallet's paths in front of it. */
export function withWallet(api: FetchHandler, options: WalletSiteOptions): FetchHandler {
  return async (request: Request, client: ClientInfo): Promise<Response> => {
    const url = new URL(request.url);
    const path = url.pathname;
    if (path !== '/wallet' && !path.startsWith('/wallet/')) return api(request, client);
    // The API's DNS-rebinding rule: a page on a name re-pointed at this machine gets nothing here either.
    const refused = pageRefusal(request, path, () => requireLocalHostName(url));
    if (refused !== undefined) return refused;
    if (path === '/wallet' || path === '/wallet/') return pageAnswer(await readFile(PAGE, 'utf8'), 'text/html; charset=utf-8', 'no-cache');
    if (path === '/wallet/app.js') return pageAnswer(await walletBundle(), 'text/javascript; charset=utf-8', 'no-cache');
    if (path === '/wallet/page.css') return pageAnswer(await readFile(PAGE_STYLE, 'utf8'), 'text/css; charset=utf-8', 'no-cache');
    if (path === '/wallet/config.json') {
      const chain = options.chain;
      const height = checkpointHeight(chain.tip.height, chain.base);
      const hash = await chain.hashAt(height);
      if (hash === undefined) return problemResponse(new WebProblem('internal', `the node holds no block at height ${height}`));
      const body = {
        network: chain.params.network,
        block_interval_ms: chain.params.blockIntervalMs,
        checkpoint: { height, hash: toHex(hash) },
        hosts: hostAddresses(options, url.hostname),
      };
      return pageAnswer(JSON.stringify(body), 'application/json', 'no-store');
    }
    return problemResponse(new WebProblem('not-found', `no wallet file at ${path}`));
  };
}
