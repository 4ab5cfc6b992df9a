// The shared-data loader on Node and Deno, with a local upstream on 127.0.0.1 (run on Deno by `npm run test:deno`).
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert } from 'chai';
import { sha256 } from '../core/crypto/sha256.ts';
import type { SharedFiles } from '../core/data/shared-data.ts';
import { toHex } from '../core/encoding/hex.ts';
import { rejectsAsync } from '../test/assert.ts';
import { test } from '../test/harness.ts';
import { sharedDataSuite } from '../test/shared-data-suite.ts';
import { loadSharedData, SharedDataError } from './shared-data.ts';

// Answers /echo/<text> with the text, /stall with a first byte and then nothing, /endless with bytes
// until the client goes, anything else with 404; closes each connection so no socket outlives a test.
const server = createServer((request, response) => {
  const path = request.url ?? '/';
  response.setHeader('connection', 'close');
  request.on('close', () => response.destroy());
  if (path.startsWith('/echo/')) response.end(decodeURIComponent(path.slice('/echo/'.length)));
  else if (path === '/stall') response.write('p');
  else if (path === '/endless') {
    const more = (): void => {
      while (!response.destroyed && response.write('x'.repeat(16_384)));
      if (!response.destroyed) response.once('drain', more);
    };
    more();
  } else response.writeHead(404).end();
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
server.unref();
const address = server.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;

const dir = await mkdtemp(join(tmpdir(), 'mesh-shared-data-'));
const removeDir = (): void => rmSync(dir, { recursive: true, force: true });
// Node ends with 'exit'; `deno test` ends with the global 'unload' event instead.
process.on('exit', removeDir);
(globalThis as { addEventListener?: (type: string, listener: () => void) => void }).addEventListener?.('unload', removeDir);
const emptyRoot = join(dir, 'no-shared-data');
await mkdir(emptyRoot);
let caches = 0;

sharedDataSuite('shared data on the file system', {
  load: loadSharedData,
  emptyRoot,
  freshCache: async () => join(dir, `cache-${++caches}`),
  upstream: (text) => `${base}/echo/${encodeURIComponent(text)}`,
  missing: `${base}/missing`,
});

test('shared data on the file system: a damaged cached copy is dropped and downloaded again', async () => {
  const cacheDir = join(dir, 'damaged-cache');
  const pinned = new TextEncoder().encode('pinned bytes');
  const files = { 'test/pinned.txt': { upstream: `${base}/echo/pinned%20bytes`, sha256: toHex(sha256(pinned)) } };
  await mkdir(join(cacheDir, 'test'), { recursive: true });
  await writeFile(join(cacheDir, 'test', 'pinned.txt'), 'damaged bytes');
  const bytes = await loadSharedData('test/pinned.txt', { root: emptyRoot, cacheDir, files });
  assert.deepEqual([...bytes], [...pinned]);
  assert.equal(await readFile(join(cacheDir, 'test', 'pinned.txt'), 'utf8'), 'pinned bytes');
});

test('shared data on the file system: a stalled or endless upstream fails the load, within its time and bytes, caching nothing', async () => {
  const files = (path: string): SharedFiles => ({ 'test/pinned.txt': { upstream: `${base}${path}`, sha256: '0'.repeat(64) } });
  const cacheDir = join(dir, 'limits-cache');
  const started = Date.now();
  await rejectsAsync(
    () => loadSharedData('test/pinned.txt', { root: emptyRoot, cacheDir, files: files('/stall'), downloadTimeoutMs: 300 }),
    SharedDataError,
    'unavailable',
    /\/stall into .+: no complete answer within 0\.3 s/,
  );
  assert.isBelow(Date.now() - started, 10_000);
  await rejectsAsync(
    () => loadSharedData('test/pinned.txt', { root: emptyRoot, cacheDir, files: files('/endless'), maxDownloadBytes: 1_000_000 }),
    SharedDataError,
    'unavailable',
    /\/endless into .+: the upstream sends more than 1000000 bytes/,
  );
  await rejectsAsync(
    () => loadSharedData('test/pinned.txt', { root: emptyRoot, cacheDir, files: files('/echo/eleven%20bytes'), maxDownloadBytes: 10 }),
    SharedDataError,
    'unavailable',
    /more than 10 bytes/,
  );
  assert.deepEqual(await readdir(cacheDir).catch(() => []), []);
});
