// The shared-data loader on Node and Deno, with a local upstream on 127.0.0.1 (run on Deno by `npm run test:deno`).
import { rmSync } from 'node:fs';
import { mkdtemp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert } from 'chai';
import { sha256 } from '../core/crypto/sha256.ts';
import { toHex } from '../core/encoding/hex.ts';
import { test } from '../test/harness.ts';
import { sharedDataSuite } from '../test/shared-data-suite.ts';
import { loadSharedData } from './shared-data.ts';

// Answers /echo/<text> with the text, anything else with 404; closes each connection so no socket outlives a test.
const server = createServer((request, response) => {
  const path = request.url ?? '/';
  response.setHeader('connection', 'close');
  if (path.startsWith('/echo/')) response.end(decodeURIComponent(path.slice('/echo/'.length)));
  else response.writeHead(404).end();
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
