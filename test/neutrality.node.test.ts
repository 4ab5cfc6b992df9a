// core/ must run unchanged in browsers, Deno and Node: no Node built-ins, no Buffer, no process.

import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;

async function coreSources(dir = join(root, 'core')): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await coreSources(path)));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

test('core bundles for the browser with no Node built-in anywhere in its dependency graph', async () => {
  const entryPoints = await coreSources();
  assert.ok(entryPoints.length > 5, 'found the core sources');
  const result = await build({
    entryPoints,
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2023',
    write: false,
    outdir: '/tmp/mesh-neutrality',
    metafile: true,
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs);
  assert.deepEqual(
    inputs.filter((i) => i.startsWith('node:') || /^(fs|path|crypto|os|buffer)$/.test(i)),
    [],
  );
});

test('core sources never name Buffer, process, Deno or a node: module', async () => {
  const offenders: string[] = [];
  for (const file of await coreSources()) {
    const text = (await readFile(file, 'utf8')).replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    for (const pattern of [/\bBuffer\b/, /\bprocess\b/, /\bDeno\b/, /['"]node:/, /\brequire\(/]) {
      if (pattern.test(text)) offenders.push(`${file.slice(root.length)}: ${pattern}`);
    }
  }
  assert.deepEqual(offenders, []);
});
