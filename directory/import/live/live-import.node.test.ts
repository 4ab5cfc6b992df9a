// Live imports against a stand-in for the public sources on 127.0.0.1 (real sockets), and an
// import killed with SIGKILL in a real child process (Node: files, processes).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { fileExists } from '../../../host-node/file-exists.ts';
import { captureOutput } from '../../../test/capture-output.ts';
import { parseDataset } from '../../dataset.ts';
import { type ReplayOptions, startReplay } from '../../testing/replay-sources.ts';
import { DEFAULT_NAICS_MAP, runImport, SHARED_FRS_EXTRACT } from '../cli.ts';
import { EPA_LICENCE } from '../epa-frs.ts';
import { NaicsMap } from '../evidence.ts';
import { WIKIDATA_LICENCE } from '../wikidata.ts';
import { stagingDir } from './live-import.ts';
import { FetchFailedError, politeFetch, SourceUnreachableError } from './polite-fetch.ts';

const dir = await mkdtemp(join(tmpdir(), 'mesh-live-import-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

// Two NAICS codes of the map: 332710 machine shops (strong), 332322 sheet metal (strong).
const SHAPE: ReplayOptions = { frsRows: { '332710': 250, '332322': 120 }, wikidataItems: 7, malformedRow: { code: '332710', index: 130 } };

function liveArgs(out: string, replay: { frsBase: string; wikidataEndpoint: string }, codes = ['332710', '332322']): string[] {
  return [
    '--out',
    out,
    ...codes.flatMap((code) => ['--naics', code]),
    '--page-size',
    '100',
    '--retrieved',
    '2026-11-24',
    '--frs-url',
    replay.frsBase,
    '--wikidata-url',
    replay.wikidataEndpoint,
    '--contact',
    'tests@mesh.example',
  ];
}

async function run(args: string[]): Promise<{ code: number; stderr: string }> {
  const { result, output } = await captureOutput(process.stderr, () => runImport(args));
  return { code: result, stderr: output };
}

const OLD = '{"generated":"2025-01-01","sources":[],"records":[\n]}\n';

test('a live import: pages of both sources, 429 with Retry-After, a 503, a dropped connection, malformed rows reported and skipped', async () => {
  const replay = await startReplay({
    ...SHAPE,
    misbehave: (source, page, attempt) => {
      if (attempt > 1) return undefined;
      if (source === 'wikidata') return 'throttle';
      if (page === 'frs 332710 101:200') return 'drop';
      if (page === 'frs 332322 1:100') return 'unavailable';
      return undefined;
    },
  });
  try {
    const out = join(dir, 'live', 'directory.json');
    const { code, stderr } = await run(liveArgs(out, replay));
    assert.equal(code, 0, stderr);
    // Pages: 332710 at 0, 100, 200 (50 rows: the last); 332322 at 0, 100 (20 rows); Wikidata's industries and one page.
    assert.equal(replay.requests.size, 7);
    assert.equal(replay.requests.get('/sparql industries'), 2);
    assert.match(stderr, /wikidata industries: 4 industries name an activity of the directory/);
    assert.equal(replay.requests.get('frs 332710 101:200'), 2, 'the dropped page fetched again');
    assert.equal(replay.requests.get('/sparql offset 0'), 2, 'asked again after the Retry-After');
    assert.match(stderr, /wikidata offset 0: HTTP 429, Retry-After 1; retrying in 1 s/);
    assert.match(stderr, /epa-frs NAICS 332322 rows 0-99: HTTP 503; retrying in 1 s/);
    assert.match(stderr, /epa-frs NAICS 332710 rows 100-199: .*terminated.*; retrying in 1 s/);
    assert.match(stderr, /epa-frs NAICS 332710 rows 100-199, line 32: REGISTRY_ID "12345" .*\(skipped\)/);
    assert.match(stderr, /wikidata offset 0, line \d+: .*"XX".*\(skipped\)/);
    assert.match(stderr, /epa-frs: 370 rows, 1 skipped, retrieved 2026-11-24/);
    assert.match(stderr, /epa-frs NAICS 332710 rows 200-299: 50 rows; epa-frs so far 370 rows/);

    const dataset = parseDataset(await readFile(out, 'utf8'));
    assert.deepEqual(
      dataset.sources.map((s) => [s.key, s.url, s.licence, s.retrieved]),
      [
        ['epa-frs', replay.frsBase, EPA_LICENCE, '2026-11-24'],
        ['wikidata', replay.wikidataEndpoint, WIKIDATA_LICENCE, '2026-11-24'],
      ],
    );
    const epa = dataset.records.filter((r) => r.id.startsWith('epa-'));
    const wd = dataset.records.filter((r) => r.id.startsWith('wd-'));
    assert.ok(epa.length > 100);
    assert.ok(epa.some((r) => r.categories.includes('cnc-machining')) && epa.some((r) => r.categories.includes('sheet-metal')));
    assert.ok(!epa.some((r) => r.id === 'epa-12345'));
    // Every facility the service listed for a code carries that code's evidence, and its category.
    const map = NaicsMap.parse(await readFile(DEFAULT_NAICS_MAP, 'utf8'));
    for (const r of epa) {
      const codes = r.category_evidence.filter((e) => e.source === 'epa-frs').map((e) => e.value);
      assert.ok(codes.length > 0 && codes.every((c) => c === '332710' || c === '332322'), `${r.id}: ${codes.join(' ')}`);
      for (const code of codes) for (const m of map.lookup(code)) if (m.strength !== 'weak') assert.ok(r.categories.includes(m.category), `${r.id} ${code}`);
    }
    assert.equal(wd.length, 6, 'the item with country XX is skipped');
    // Items 1, 3 and 5 lie in a subdivision of their country (replay-sources.ts): DE-BY, JP-13, DE-BY.
    assert.deepEqual(
      wd.map((r) => (r.region === null ? null : `${r.country}-${r.region}`)),
      ['DE-BY', null, 'JP-13', null, 'DE-BY', null],
    );
    for (const r of wd) {
      assert.match(r.id, /^wd-Q9000000\d\d$/);
      assert.equal(r.contacts[0]!.kind, 'website');
      assert.ok(r.categories.length > 0);
    }
    assert.equal(await fileExists(stagingDir(out)), false, 'the staged pages are gone once the dataset is written');
  } finally {
    await replay.close();
  }
});

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('sources this machine cannot reach: given up at once, and the error names the offline import and the shared extract', async () => {
  const out = join(dir, 'offline', 'directory.json');
  // A name that never resolves (RFC 2606 .invalid), and a port nothing listens on.
  const { code, stderr } = await run([...liveArgs(out, { frsBase: 'http://frs.invalid/efservice', wikidataEndpoint: 'http://wikidata.invalid/sparql' })]);
  assert.equal(code, 1, stderr);
  assert.doesNotMatch(stderr, /retrying in/, 'an unresolvable name is not retried with back-off');
  assert.match(stderr, /frs\.invalid cannot be reached: .*(ENOTFOUND|EAI_AGAIN)/);
  assert.match(stderr, /npx mesh directory import --out \S+ --epa FILE/);
  assert.ok(stderr.includes(`--epa ${SHARED_FRS_EXTRACT}`), stderr);
  assert.equal(await fileExists(out), false);

  const port = await closedPort();
  const refused = await run(['--out', out, '--source', 'wikidata', '--wikidata-url', `http://127.0.0.1:${port}/sparql`]);
  assert.equal(refused.code, 1);
  assert.doesNotMatch(refused.stderr, /retrying in/);
  assert.match(refused.stderr, /ECONNREFUSED/);
  assert.match(refused.stderr, /--epa FILE/);
});

test('a host that answered earlier in the run and then cannot be reached is retried: a blip, not an offline machine', async () => {
  const url = `http://127.0.0.1:${await closedPort()}/page`;
  const waits: number[] = [];
  const reached = new Set([new URL(url).host]);
  const failure = await politeFetch(url, { headers: {} }, { attempts: 3, backoffMs: 1, reached, onRetry: (_reason, ms) => waits.push(ms) }).catch(
    (e: unknown) => e,
  );
  assert.ok(failure instanceof FetchFailedError && !(failure instanceof SourceUnreachableError), String(failure));
  assert.match(failure.message, /gave up after 3 attempts/);
  assert.deepEqual(waits, [1, 2]);
  await assert.rejects(politeFetch(url, { headers: {} }, { attempts: 3, backoffMs: 1 }), SourceUnreachableError);
});

test('a failed live import leaves the previous dataset whole; run again, it resumes without fetching the pages it has', async () => {
  const out = join(dir, 'resume', 'directory.json');
  await run(['--out', join(dir, 'resume', 'seed.json'), '--exhibitors', fileURLToPath(new URL('../fixtures/exhibitors-sample.csv', import.meta.url))]);
  await writeFile(out, await readFile(join(dir, 'resume', 'seed.json')));
  const before = await readFile(out, 'utf8');
  const broken = await startReplay({ ...SHAPE, misbehave: (source) => (source === 'wikidata' ? 'fail' : undefined) });
  let frsRequests: number;
  try {
    const { code, stderr } = await run([...liveArgs(out, broken), '--attempts', '2']);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /wikidata industries: HTTP 500; retrying in 1 s/);
    assert.match(stderr, /gave up after 2 attempts; last: HTTP 500/);
    assert.match(stderr, /left as it was; run the same command again to resume/);
    frsRequests = [...broken.requests.keys()].filter((k) => k.startsWith('frs ')).length;
    assert.equal(frsRequests, 5);
  } finally {
    await broken.close();
  }
  assert.equal(await readFile(out, 'utf8'), before, 'the previous dataset, byte for byte');
  assert.equal((await readdir(stagingDir(out))).filter((f) => f.startsWith('epa-frs-')).length, 5);

  // The same command against a source that answers now (same URLs: a stand-in on a new port
  // would be another run, so the staged pages are moved into the new run's terms below).
  const healthy = await startReplay(SHAPE);
  try {
    const manifestPath = join(stagingDir(out), 'manifest.json');
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { frsBase: string; wikidataEndpoint: string };
    await writeFile(manifestPath, JSON.stringify({ ...manifest, frsBase: healthy.frsBase, wikidataEndpoint: healthy.wikidataEndpoint }));
    const { code, stderr } = await run(liveArgs(out, healthy));
    assert.equal(code, 0, stderr);
    assert.match(stderr, /resuming the import begun 2026-11-24/);
    assert.match(stderr, /epa-frs NAICS 332710 rows 0-99: 100 rows \(kept from the earlier run\)/);
    assert.deepEqual([...healthy.requests.keys()], ['/sparql industries', '/sparql offset 0'], 'only what is missing is fetched');
  } finally {
    await healthy.close();
  }
  const dataset = parseDataset(await readFile(out, 'utf8'));
  assert.deepEqual(
    dataset.sources.map((s) => s.key),
    ['epa-frs', 'exhibitor:fixture-expo-2024', 'exhibitor:fixture-fair-2025', 'wikidata'],
  );
});

test('a source whose rows end on a page boundary ends at the empty page after it; --source takes one source alone', async () => {
  const replay = await startReplay({ frsRows: { '332710': 200 }, wikidataItems: 0 });
  try {
    const out = join(dir, 'boundary', 'directory.json');
    const { code, stderr } = await run([...liveArgs(out, replay, ['332710']), '--source', 'epa-frs']);
    assert.equal(code, 0, stderr);
    assert.deepEqual([...replay.requests.keys()], ['frs 332710 1:100', 'frs 332710 101:200', 'frs 332710 201:300']);
    assert.match(stderr, /rows 200-299: 0 rows; epa-frs so far 200 rows/);
    const dataset = parseDataset(await readFile(out, 'utf8'));
    assert.deepEqual(
      dataset.sources.map((s) => s.key),
      ['epa-frs'],
    );
  } finally {
    await replay.close();
  }
});

test('--naics over an existing dataset replaces the FRS records of the codes given, and keeps those of every other code', async () => {
  const codesOf = (text: string, code: string): string[] =>
    parseDataset(text)
      .records.filter((r) => r.category_evidence.some((e) => e.source === 'epa-frs' && e.value === code))
      .map((r) => r.id);
  const full = await startReplay(SHAPE);
  const out = join(dir, 'subset', 'directory.json');
  try {
    assert.equal((await run(liveArgs(out, full))).code, 0);
  } finally {
    await full.close();
  }
  const before = await readFile(out, 'utf8');
  // The source now lists fewer 332322 facilities (60 of the 120).
  const fewer = await startReplay({ frsRows: { '332710': 250, '332322': 60 }, wikidataItems: 0 });
  try {
    const { code, stderr } = await run([...liveArgs(out, fewer, ['332322']), '--source', 'epa-frs']);
    assert.equal(code, 0, stderr);
    assert.ok(
      [...fewer.requests.keys()].every((k) => k.includes('332322')),
      'only the code given is fetched',
    );
    const alone = join(dir, 'subset', 'alone.json');
    assert.equal((await run([...liveArgs(alone, fewer, ['332322']), '--source', 'epa-frs', '--fresh'])).code, 0);
    const after = await readFile(out, 'utf8');
    assert.ok(codesOf(before, '332710').length > 100);
    assert.deepEqual(codesOf(after, '332710'), codesOf(before, '332710'), 'the records of 332710 stay, with their evidence');
    assert.deepEqual(codesOf(after, '332322'), codesOf(await readFile(alone, 'utf8'), '332322'), 'those of 332322 are what the source lists now');
    assert.ok(codesOf(after, '332322').length < codesOf(before, '332322').length);
    assert.equal(parseDataset(after).records.filter((r) => r.id.startsWith('wd-')).length, 6, 'another source is untouched');
  } finally {
    await fewer.close();
  }
});

test('a page the CSV reader cannot finish (an unclosed quote) fails the import as not the format; it does not pass for a short last page', async () => {
  const out = join(dir, 'unclosed', 'directory.json');
  await run(['--out', out, '--exhibitors', fileURLToPath(new URL('../fixtures/exhibitors-sample.csv', import.meta.url))]);
  const before = await readFile(out, 'utf8');
  const replay = await startReplay({ ...SHAPE, misbehave: (_source, page) => (page === 'frs 332710 101:200' ? 'unclosed-quote' : undefined) });
  try {
    const { code, stderr } = await run(liveArgs(out, replay));
    assert.equal(code, 1, stderr);
    assert.match(stderr, /epa-frs NAICS 332710 rows 100-199, line \d+: not the source's format: .*Quote Not Closed/i);
    assert.ok(!replay.requests.has('frs 332710 201:300'), 'the import stopped at the broken page');
    assert.equal(await readFile(out, 'utf8'), before);
    assert.equal(await fileExists(join(stagingDir(out), 'epa-frs-332710-100.csv')), false, 'the broken page is not kept');
  } finally {
    await replay.close();
  }
});

test('a Query Service time-out (500 with its TimeoutException) stops the import at once instead of asking the same query again', async () => {
  const replay = await startReplay({ ...SHAPE, misbehave: (_source, page) => (page === '/sparql offset 0' ? 'query-timeout' : undefined) });
  try {
    const out = join(dir, 'timeout', 'directory.json');
    const { code, stderr } = await run([...liveArgs(out, replay), '--source', 'wikidata']);
    assert.equal(code, 1, stderr);
    assert.equal(replay.requests.get('/sparql offset 0'), 1, 'not retried');
    assert.match(stderr, /HTTP 500: the Query Service stopped the query at its time limit; .*smaller --page-size/);
    assert.equal(await fileExists(out), false);
  } finally {
    await replay.close();
  }
});

const mesh = fileURLToPath(new URL('../../../bin/mesh.js', import.meta.url));

/** Runs the import in a child process and kills it with SIGKILL at the first line of progress `kill` accepts. */
async function killedAt(args: string[], kill: (line: string, index: number) => boolean, env: NodeJS.ProcessEnv = {}): Promise<number | null> {
  const child = spawn(process.execPath, [mesh, 'directory', 'import', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let seen = 0;
  const exited = once(child, 'exit');
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (kill(line, ++seen)) child.kill('SIGKILL');
  });
  const [code] = await exited;
  return code as number | null;
}

test('an import killed with SIGKILL at any point leaves the old dataset or the new one, never a mix', async () => {
  const replay = await startReplay({ ...SHAPE, delayMs: 20 });
  try {
    const reference = join(dir, 'kill', 'reference.json');
    assert.equal((await run(liveArgs(reference, replay))).code, 0);
    const complete = await readFile(reference, 'utf8');
    // Killed after each line of progress in turn (each run resumes the one before), until one finishes.
    const out = join(dir, 'kill', 'directory.json');
    await writeFile(out, OLD);
    let finished = false;
    for (let lines = 1; lines < 40 && !finished; lines += 2) {
      const code = await killedAt(liveArgs(out, replay), (_line, index) => index === lines);
      const now = await readFile(out, 'utf8');
      assert.ok(now === OLD || now === complete, `after ${lines} lines: neither the old dataset nor the new one`);
      finished = code === 0;
    }
    assert.ok(finished, 'the import finished once the kills came too late');
    assert.equal(await readFile(out, 'utf8'), complete);
    assert.equal(await fileExists(stagingDir(out)), false);
    const leftovers = (await readdir(join(dir, 'kill'))).filter((f) => f.endsWith('.tmp'));
    assert.deepEqual(leftovers, [], 'what a killed write left, the next import removed');
  } finally {
    await replay.close();
  }
});

test('an import killed while the new dataset is written, before its rename, leaves the old dataset; the next run cleans up and finishes', async () => {
  const replay = await startReplay({ frsRows: { '332710': 150 }, wikidataItems: 3 });
  try {
    const folder = join(dir, 'kill-write');
    const reference = join(folder, 'reference.json');
    assert.equal((await run(liveArgs(reference, replay, ['332710']))).code, 0);
    const complete = await readFile(reference, 'utf8');
    const out = join(folder, 'directory.json');
    await writeFile(out, OLD);
    const temporaries = async (): Promise<string[]> => (await readdir(folder)).filter((f) => f.startsWith('.directory.json.') && f.endsWith('.tmp'));
    let killedWriting = false;
    const code = await killedAt(liveArgs(out, replay, ['332710']), (line) => (killedWriting = line.startsWith('temporary file written')), {
      MESH_TEST_PAUSE_BEFORE_RENAME_MS: '60000',
    });
    assert.equal(code, null, 'killed');
    assert.ok(killedWriting, 'the kill landed between writing the temporary file and renaming it');
    const [left] = await temporaries();
    assert.ok(left !== undefined, 'the interrupted write left its temporary file');
    assert.equal(await readFile(join(folder, left), 'utf8'), complete, 'whole, but never renamed into place');
    assert.equal(await readFile(out, 'utf8'), OLD, 'the old dataset, untouched');

    const { code: again, stderr } = await run(liveArgs(out, replay, ['332710']));
    assert.equal(again, 0, stderr);
    assert.match(stderr, new RegExp(`removed ${left.replaceAll('.', '\\.')}, left by an earlier import that was stopped while writing`));
    assert.match(stderr, /rows 0-99: 100 rows \(kept from the earlier run\)/);
    assert.match(
      stderr.trimEnd().split('\n').at(-1)!,
      /has no dataset yet serves this one within 16 s; one already serving a dataset keeps it until restarted/,
    );
    assert.equal(await readFile(out, 'utf8'), complete);
    assert.deepEqual(await temporaries(), []);
  } finally {
    await replay.close();
  }
});
