// Runs the same *.test.ts files as Node and Deno, in Debian's headless Chromium.
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { esbuildPlugin } from '@web/dev-server-esbuild';
import { playwrightLauncher } from '@web/test-runner-playwright';
import * as esbuild from 'esbuild';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './test/chromium.ts';

const SHARED_DATA = fileURLToPath(new URL('../shared/data/', import.meta.url));

/**
 * `/shared-data/<path>`: the project's shared data folder (`../shared/data`), which pages read
 * through `host-browser/shared-data.ts` as Node and Deno read the folder itself; 404 when it is not
 * there. `/echo/<text>`: the text as bytes, a stand-in upstream for the loader's download tests.
 */
async function sharedData(context, next) {
  if (context.path.startsWith('/shared-data/')) {
    const path = resolve(SHARED_DATA, decodeURIComponent(context.path.slice('/shared-data/'.length)));
    if (!path.startsWith(SHARED_DATA)) return next();
    try {
      context.body = await readFile(path);
      context.type = 'application/octet-stream';
    } catch {
      context.status = 404;
    }
    return undefined;
  }
  if (context.path.startsWith('/echo/')) {
    context.body = Buffer.from(decodeURIComponent(context.path.slice('/echo/'.length)));
    context.type = 'application/octet-stream';
    return undefined;
  }
  return next();
}

/**
 * A test file that imports libp2p's packages or multiaddrs itself (peer routing over a memory
 * transport, address rules) is served as one esbuild bundle, as the wallet page is: libp2p's
 * dependencies include a CommonJS module (netmask) and packages whose `browser` field swaps Node's
 * crypto out, which the dev server's file-by-file transforms do not handle.
 */
const IMPORTS_LIBP2P = /from '(libp2p|@libp2p\/[^']+|@multiformats\/[^']+)'/;
const libp2pBundles = {
  name: 'libp2p-bundles',
  async serve(context) {
    if (!context.path.endsWith('.test.ts')) return undefined;
    const file = fileURLToPath(new URL(`.${context.path}`, import.meta.url));
    const source = await readFile(file, 'utf8').catch(() => '');
    if (!IMPORTS_LIBP2P.test(source)) return undefined;
    const built = await esbuild.build({
      entryPoints: [file],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2023',
      write: false,
      logLevel: 'silent',
    });
    return { body: built.outputFiles[0].text, type: 'js' };
  },
};

export default {
  // The directory's data layer (records, index, importers) is runtime-neutral too; its service
  // suite needs sockets and runs on Node and Deno.
  files: [
    'core/**/*.test.ts',
    'host-browser/**/*.test.ts',
    'directory/{record,dataset,text,postings,bitset-simd,search}.test.ts',
    'directory/import/*.test.ts',
    '!**/*.node.test.ts',
  ],
  // `browser` picks the browser's file of a `#…` import (package.json `imports`), as bundlers do.
  nodeResolve: { exportConditions: ['development', 'browser'] },
  middleware: [sharedData],
  concurrency: 1,
  testFramework: { config: { timeout: 60000 } },
  testsFinishTimeout: 600000,
  plugins: [libp2pBundles, esbuildPlugin({ ts: true, target: 'es2023' })],
  browsers: [
    playwrightLauncher({
      product: 'chromium',
      launchOptions: { executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] },
    }),
  ],
};
