/**
 * Imports flow one way (docs/architecture.md "Layers"): this test reads every import of the
 * tree's source files and fails on an arrow from a folder of core/ to a folder on its own layer or
 * above, on an import across the tree's top folders that DESIGN.md does not allow, and on any
 * circle of files. Tests and test utilities may import anything and are not read.
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assert } from 'chai';
import { test } from './harness.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * core/'s layers, from the top down: a folder imports only folders on layers below its own.
 * The files at core/'s root are named by their file name.
 */
export const CORE_LAYERS: readonly (readonly string[])[] = [
  ['sim'],
  ['index.ts'],
  ['api'],
  ['node'],
  ['placement'],
  ['capabilities', 'channels'],
  ['jobs'],
  ['messaging', 'netgraph', 'tunnel'],
  ['names', 'signal'],
  ['chain'],
  ['ledger', 'net', 'web', 'store', 'data'],
  ['crypto', 'collections', 'time'],
  ['encoding', 'lifecycle.ts'],
  ['errors.ts'],
];

/**
 * The tree's top folders and which others each may import (DESIGN.md §1). The directory's Node
 * entries (its adapter and importer commands) are host code on the host's CLI kit and files.
 */
const TOP: Readonly<Record<string, readonly string[]>> = {
  core: [],
  'host-node': ['core'],
  'host-browser': ['core'],
  directory: ['core', 'host-node'],
  bench: ['core', 'host-node', 'host-browser', 'directory', 'test'],
  test: ['core', 'host-node', 'host-browser', 'directory', 'bench'],
  bin: ['host-node', 'core', 'directory', 'bench'],
};

/** The `mesh` command's table names every command, the directory's and the benchmarks' too. */
const ENTRIES: Readonly<Record<string, readonly string[]>> = { 'host-node/cli.ts': ['directory', 'bench'] };

const isTest = (path: string): boolean => /\.test(-util)?\.ts$|-suite\.ts$|\/testing\//.test(path) || path.startsWith('test/');

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await sourceFiles(path)));
    else if (entry.name.endsWith('.ts') && !isTest(path)) out.push(path);
  }
  return out;
}

// Comments first, so a `from '…'` in a doc comment's example is not read as an import.
const COMMENTS = /\/\*[\s\S]*?\*\/|(^|[^:'"`])\/\/[^\n]*/g;
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"`](\.{1,2}\/[^'"`]+)['"`]/gm;

/** Each source file's relative imports, as paths from the root. */
async function importGraph(): Promise<Map<string, string[]>> {
  const files = (await Promise.all(Object.keys(TOP).map(sourceFiles))).flat();
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = (await readFile(join(ROOT, file), 'utf8')).replace(COMMENTS, '$1');
    const targets = [...text.matchAll(IMPORT)].map((m) => relative(ROOT, resolve(ROOT, dirname(file), m[1]!)));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** A core/ path's place: its folder under core/, or its file name at core/'s root. */
const place = (path: string): string => path.split('/')[1]!;

function layerOf(path: string): number {
  const at = CORE_LAYERS.findIndex((layer) => layer.includes(place(path)));
  if (at < 0) throw new Error(`${path}: core/${place(path)} is on no layer of CORE_LAYERS (docs/architecture.md)`);
  return at;
}

/** Every elementary circle found by a depth-first walk, each once, as its files in order. */
function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const walk = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') found.push(stack.slice(stack.indexOf(next)));
      else if (!state.has(next)) walk(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) walk(file);
  return found;
}

test('layers: every import in core/ runs down its layers', async () => {
  const wrong: string[] = [];
  for (const [file, targets] of await importGraph()) {
    if (!file.startsWith('core/')) continue;
    for (const target of targets) {
      if (!target.startsWith('core/') || place(file) === place(target)) continue;
      if (layerOf(target) <= layerOf(file)) wrong.push(`${file} -> ${target}`);
    }
  }
  assert.deepEqual(wrong, [], 'imports against the layer order of docs/architecture.md');
});

test('layers: the top folders import only what DESIGN.md allows', async () => {
  const wrong: string[] = [];
  for (const [file, targets] of await importGraph()) {
    const from = file.split('/')[0]!;
    for (const target of targets) {
      const to = target.split('/')[0]!;
      if (to !== from && !TOP[from]!.includes(to) && !ENTRIES[file]?.includes(to)) wrong.push(`${file} -> ${target}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('layers: no circle of imports among the source files', async () => {
  assert.deepEqual(circles(await importGraph()), []);
});

test('layers: the reader finds imports and circles it is shown', () => {
  const text =
    "import { a } from './a.ts';\nexport { b } from \"../b.ts\";\n// import { c } from './c.ts';\nconst d = await import(`./d.ts`);\nimport './e.ts';";
  assert.deepEqual(
    [...text.replace(COMMENTS, '$1').matchAll(IMPORT)].map((m) => m[1]),
    ['./a.ts', '../b.ts', './d.ts', './e.ts'],
  );
  const graph = new Map([
    ['x', ['y']],
    ['y', ['z']],
    ['z', ['x']],
    ['w', ['x']],
  ]);
  assert.deepEqual(circles(graph), [['x', 'y', 'z']]);
});
