// The directory's service code must run on Node, Deno and in a browser bundle: no Node built-in
// anywhere in its dependency graph, no Buffer or process in its sources. Only the Node adapter,
// the Node file store and the import command are Node's own.

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { build, type Metafile } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const NEUTRAL = [
  'directory/router.ts',
  'directory/mcp.ts',
  'directory/adapter/options.ts',
  'directory/adapter/deno-serve.ts',
  'directory/submissions/kv-store.ts',
];

async function bundleInputs(): Promise<Metafile['inputs']> {
  const result = await build({
    entryPoints: NEUTRAL.map((file) => root + file),
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2023',
    write: false,
    outdir: '/tmp/mesh-directory-neutrality',
    metafile: true,
    logLevel: 'silent',
  });
  return result.metafile.inputs;
}

test('the directory service bundles for the browser with no Node built-in, and its sources name none', async () => {
  const inputs = Object.keys(await bundleInputs());
  assert.deepEqual(
    inputs.filter((i) => i.startsWith('node:') || /^(fs|path|crypto|os|buffer|http|stream)$/.test(i)),
    [],
  );
  const ours = inputs.filter((i) => i.startsWith('directory/'));
  for (const file of ['directory/http/params.ts', 'directory/submissions/routes.ts', 'directory/search.ts']) assert.ok(ours.includes(file), file);
  const offenders: string[] = [];
  for (const file of ours) {
    const text = (await readFile(root + file, 'utf8')).replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    for (const pattern of [/\bBuffer\b/, /\bprocess\b/, /['"]node:/, /\brequire\(/]) {
      if (pattern.test(text)) offenders.push(`${file}: ${pattern}`);
    }
  }
  assert.deepEqual(offenders, []);
});
