/**
 * The directory benchmark's machinery: the generator's output, the percentiles, the goals, the
 * report, and one small end-to-end run against the real server. No speed is asserted.
 */
import assert from 'node:assert/strict';
import { createReadStream, rmSync } from 'node:fs';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { validate } from 'superstruct';
import { parseDataset, readDataset } from '../../directory/dataset.ts';
import { FactoryRecordStruct, isFactoryId } from '../../directory/record.ts';
import { DirectoryIndex } from '../../directory/search.ts';
import { percentile } from '../lib/timing.ts';
import { writeGeneratedDataset } from './generate.ts';
import { keptDataset, parseDirectoryBenchArgs, runDirectoryBench } from './node.ts';
import { type DirectoryReport, evaluateDirectoryGoals, renderDirectorySection } from './report.ts';

const dir = await mkdtemp(join(tmpdir(), 'mesh-directory-bench-test-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

test('generator: valid records in id order, the real mix of sources, deterministic from the seed', async () => {
  const a = join(dir, 'a.json');
  const b = join(dir, 'b.json');
  const c = join(dir, 'c.json');
  const bytes = await writeGeneratedDataset(a, 3000, 7);
  await writeGeneratedDataset(b, 3000, 7);
  await writeGeneratedDataset(c, 3000, 8);
  const text = await readFile(a, 'utf8');
  assert.equal(Buffer.byteLength(text), bytes);
  assert.equal(text, await readFile(b, 'utf8'), 'same seed, same bytes');
  assert.notEqual(text, await readFile(c, 'utf8'));
  const dataset = parseDataset(text);
  assert.equal(dataset.records.length, 3000);
  const ids = dataset.records.map((r) => r.id);
  assert.deepEqual(ids, [...ids].sort(), 'written in id order');
  assert.equal(new Set(ids).size, 3000);
  for (const r of dataset.records) {
    assert.ok(isFactoryId(r.id));
    assert.equal(validate(r, FactoryRecordStruct)[0], undefined, r.id);
  }
  const share = (prefix: string): number => ids.filter((id) => id.startsWith(prefix)).length / ids.length;
  assert.equal(share('epa-'), 0.6);
  assert.equal(share('wd-'), 0.15);
  assert.equal(share('cn-'), 0.25);
  const withCategory = dataset.records.filter((r) => r.categories.length > 0).length;
  assert.ok(withCategory > 300 && withCategory < 2700, `some records have categories (${withCategory})`);
  assert.ok(dataset.records.some((r) => r.contacts.some((x) => x.kind === 'observed-email')));
  assert.ok(
    dataset.records.some((r) => /[\u4e00-\u9fff]/.test(r.name)),
    'some Chinese names',
  );
  const streamed = await readDataset(Readable.toWeb(createReadStream(a)) as ReadableStream<Uint8Array>);
  assert.equal(new DirectoryIndex(streamed).search({ q: 'precision', limit: 5, offset: 0 }).factories.length, 5);
});

test('percentile is nearest-rank', () => {
  const values = Array.from({ length: 100 }, (_, i) => 100 - i);
  assert.equal(percentile(values, 50), 50);
  assert.equal(percentile(values, 99), 99);
  assert.equal(percentile(values, 100), 100);
  assert.equal(percentile([3], 99), 3);
  assert.throws(() => percentile([], 50), RangeError);
});

test('arguments: defaults, values, and refusals', () => {
  const defaults = parseDirectoryBenchArgs([]);
  assert.equal(defaults.records, 1_000_000);
  assert.equal(defaults.write, true);
  const quick = parseDirectoryBenchArgs(['--records', '5000', '--quick', '--seed=3']);
  assert.deepEqual([quick.records, quick.seed, quick.quick, quick.write], [5000, 3, true, false]);
  assert.equal(parseDirectoryBenchArgs(['--quick', '--write']).write, true);
  assert.throws(() => parseDirectoryBenchArgs(['--records', '10']), /at least 100/);
  assert.throws(() => parseDirectoryBenchArgs(['--records', 'many']), RangeError);
  assert.throws(() => parseDirectoryBenchArgs(['--fast']), /unknown option '--fast'/i);
});

function report(p99: { filtered: number; text: number }, exportGrowthMb: number): DirectoryReport {
  const run = (p99Ms: number, scale = 1) => [
    { concurrency: 1, requests: 10, medianMs: 1 * scale, p99Ms, maxMs: p99Ms, throughput: 100 },
    { concurrency: 32, requests: 10, medianMs: 2 * scale, p99Ms, maxMs: p99Ms, throughput: 100 },
  ];
  return {
    command: 'npx mesh bench directory',
    date: '2026-11-21T07:00:00.000Z',
    quick: false,
    machine: { cpu: 'test cpu', cores: 2, os: 'linux', node: '24' },
    dataset: { records: 1_000_000, seed: 1, bytes: 654e6, generateSeconds: null },
    startup: { ms: 2000, rssMb: 400, peakRssMb: 450, otherShare: 0.1 },
    coldStartup: { ms: 30000, rssMb: 600, peakRssMb: 800, otherShare: 0.2 },
    cases: [
      { group: 'filtered', name: 'country', path: '/api/v1/factories?country=US', matches: 600000, runs: run(p99.filtered) },
      { group: 'free text', name: 'word', path: '/api/v1/factories?q=x', matches: 10, runs: run(p99.text) },
      { group: 'floor', name: 'statistics', path: '/api/v1/stats', matches: null, runs: run(1, 0.25) },
    ],
    runs: Array.from({ length: 5 }, (_, i) => ({
      otherShare: 0.05,
      floor: { medianMs: 0.5, p99Ms: 1 },
      // The last run is the worst: a goal must hold in every one.
      filtered: { name: 'country', p99Ms: i === 4 ? p99.filtered : 1 },
      freeText: { name: 'word', p99Ms: i === 4 ? p99.text : 1 },
    })),
    export: { bytes: 654e6, seconds: 10, rssBeforeMb: 400, rssPeakMb: 400 + exportGrowthMb, rssAfterMb: 400, conditional: { status: 304, ms: 1 } },
    rssAfterMb: 400,
    library: [
      { engine: 'directory', buildSeconds: 30, rssMb: 500, heapMb: 10, cases: [{ name: 'word', queries: 10, medianMs: 0.01, p99Ms: 0.02, total: 10 }] },
      { engine: 'minisearch', buildSeconds: 90, rssMb: 2000, heapMb: 1500, cases: [{ name: 'word', queries: 10, medianMs: 10, p99Ms: 20, total: 10 }] },
    ],
    elapsedMs: 60000,
  };
}

test('goals: met under the thresholds, not met over them', () => {
  const met = evaluateDirectoryGoals(report({ filtered: 19, text: 49 }, 10));
  assert.deepEqual(
    met.map((g) => [g.title.replace(/ \(.*/, ''), g.met]),
    [
      ['serves within 5 s of start, from its index file on a warm disk', true],
      ['stays under 512 MB resident, so one process fits a Deno Deploy isolate', true],
      ['p99 under 20 ms for filtered queries at concurrency 1', true],
      ['p99 under 20 ms for filtered queries at concurrency 32', true],
      ['p99 under 50 ms for free-text queries, alone or with filters at concurrency 1', true],
      ['p99 under 50 ms for free-text queries, alone or with filters at concurrency 32', true],
      ['p99 under 20 ms for filtered queries at concurrency 32 in each of 5 consecutive runs', true],
      ['p99 under 50 ms for free-text queries, alone or with filters at concurrency 32 in each of 5 consecutive runs', true],
      ['the export streams in constant memory', true],
    ],
  );
  // Memory over 512 MB during the export fails the memory goal too.
  assert.deepEqual(
    evaluateDirectoryGoals(report({ filtered: 21, text: 51 }, 200)).map((g) => g.met),
    [true, false, false, false, false, false, false, false, false],
  );
});

test('the section names every case with its ratio to the stats floor', () => {
  const text = renderDirectorySection(report({ filtered: 5, text: 8 }, 10));
  assert.match(text, /^## Directory/);
  assert.match(text, /`\/api\/v1\/factories\?country=US`/);
  assert.match(text, /\| 1 \(floor\) \|/);
  assert.match(text, /\| 1 \| 1\.00 ms \| 5\.00 ms \| 5\.00 ms \| 100 \| 4\.00 \|/, 'median 1 ms over a floor of 0.25 ms');
  assert.match(text, /answered 304/);
  assert.match(text, /\| process spawn to the first successful response \| 2\.00 s \| 30\.0 s \|/, 'the start from the index file next to the first start');
  assert.match(text, /\| 5 \| 5 % \| 500 µs \| 1\.00 ms \| 5\.00 ms \(country\) \| 8\.00 ms \(word\) \|/, 'each run with the load of other processes');
  assert.match(text, /\| word \| 10 \| 10\.0 µs \/ 20\.0 µs \| 10\.0 ms \/ 20\.0 ms \| 1000× \|/, 'each query of both engines');
  assert.match(text, /\| build from the dataset file \| 30\.0 s \| 90\.0 s \| 3\.0× \|/);
});

test('a --data-dir that does not exist yet is created; a file error is a rejection that names the path', async () => {
  const fresh = join(dir, 'not', 'yet');
  const kept = await keptDataset(parseDirectoryBenchArgs(['--records', '100', '--data-dir', fresh]));
  assert.equal(kept.path, join(fresh, 'mesh-directory-bench-v1-100-s1.json'));
  assert.equal(Buffer.byteLength(await readFile(kept.path, 'utf8')), kept.bytes);
  // A folder where a file should be: the stream's error reaches the caller instead of ending the process.
  const blocked = join(fresh, 'mesh-directory-bench-v1-100-s1.json', 'x.json');
  await assert.rejects(writeGeneratedDataset(blocked, 100, 1), (error: Error) => error.message.includes(blocked));
});

test('a small end-to-end run starts the real server and measures every case', async () => {
  const before = new Set(await readdir(dir));
  const code = await runDirectoryBench(['--records', '500', '--quick', '--data-dir', dir]);
  assert.equal(code, 0);
  const created = (await readdir(dir)).filter((f) => !before.has(f));
  assert.deepEqual(
    created.sort(),
    ['mesh-directory-bench-v1-500-s1.json', 'mesh-directory-bench-v1-500-s1.json.index'],
    'the generated dataset is kept for the next run, with the index file its server wrote',
  );
});
