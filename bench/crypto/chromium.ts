/**
 * Runs the shared crypto cases in headless Chromium (Debian's /usr/bin/chromium through
 * playwright-core): bundles bench/crypto/browser.ts with esbuild, serves it from a throwaway
 * node:http server on 127.0.0.1, relays the page's console and reads the result back.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../test/chromium.ts';
import type { RuntimeResult } from './cases.ts';

const HERE = dirname(fileURLToPath(import.meta.url));

/** The browser entry as one ES module (the core uses top-level await, so ESM it must be). */
export async function bundleBrowserEntry(): Promise<string> {
  const out = await build({
    entryPoints: [join(HERE, 'browser.ts')],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  });
  return out.outputFiles[0]!.text;
}

const PAGE = '<!doctype html><meta charset="utf-8"><title>mesh bench</title><link rel="icon" href="data:,"><script type="module" src="/bench.js"></script>';

function serve(bundle: string): Promise<Server> {
  const server = createServer((request, response) => {
    // Cross-origin isolation gives the page a 5 µs timer instead of 100 µs.
    const headers = {
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-embedder-policy': 'require-corp',
      'cache-control': 'no-store',
    };
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname;
    if (path === '/') response.writeHead(200, { ...headers, 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    else if (path === '/bench.js') response.writeHead(200, { ...headers, 'content-type': 'text/javascript' }).end(bundle);
    else response.writeHead(404, headers).end();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

export async function runChromium(quick: boolean, log: (text: string) => void): Promise<RuntimeResult> {
  const bundle = await bundleBrowserEntry();
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] });
  let server: Server | undefined;
  try {
    server = await serve(bundle);
    const page = await browser.newPage();
    page.on('console', (message) => log(message.text()));
    const failed = new Promise<never>((_, reject) => page.on('pageerror', reject));
    const { port } = server.address() as AddressInfo;
    await page.goto(`http://127.0.0.1:${port}/${quick ? '?quick' : ''}`);
    await Promise.race([page.waitForFunction(() => globalThis.meshBench !== undefined, undefined, { timeout: 60_000 }), failed]);
    const result = await Promise.race([page.evaluate(() => globalThis.meshBench!), failed]);
    // The user agent's version is reduced to 156.0.0.0; the browser object knows the build.
    return { ...result, version: browser.version(), details: { ...result.details, browser: browser.version() } };
  } finally {
    await browser.close();
    if (server) await new Promise((resolve) => server!.close(resolve));
  }
}
