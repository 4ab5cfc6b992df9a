// `mesh directory import` on real files, and the dataset tests build from the shared data (Node: files, processes).

import { createHash } from 'node:crypto';
import { createReadStream, existsSync, rmSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { assert } from 'chai';
import { loadSharedData } from '#shared-data';
import { captureOutput } from '../../test/capture-output.ts';
import { test } from '../../test/harness.ts';
import { parseDataset, readDataset } from '../dataset.ts';
import { readIndexFile } from '../index-file.ts';
import { buildSharedDataset, SHARED_FRS_EXTRACT } from '../testing/shared-dataset.ts';
import { runImport } from './cli.ts';
import { frsFacilityUrl } from './epa-frs.ts';

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

const dir = await mkdtemp(join(tmpdir(), 'mesh-import-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
// The command reads files: a temporary copy of the shared EPA extract (never one in the project).
const FRS_CSV = join(dir, 'frs-naics-32591.csv');
await writeFile(FRS_CSV, await loadSharedData(SHARED_FRS_EXTRACT));
const DEFAULT = join(dir, 'default.json');
await buildSharedDataset(DEFAULT);

/** Runs the command in-process, collecting what it writes to stderr. */
async function run(args: string[]): Promise<{ code: number; stderr: string }> {
  const { result, output } = await captureOutput(process.stderr, () => runImport(args));
  return { code: result, stderr: output };
}

test('the test dataset is exactly what the import command builds from the shared EPA extract, and the bytes shipped until now', async () => {
  const out = join(dir, 'rebuilt.json');
  const { code, stderr } = await run(['--out', out, '--epa', FRS_CSV, '--retrieved', '2026-11-21', '--fresh']);
  assert.include(stderr, `${FRS_CSV}: retrieval date 2026-11-21, from --retrieved`);
  assert.equal(code, 0, stderr);
  assert.match(stderr, /1755 rows, 998 records, 0 skipped/);
  assert.equal(await readFile(out, 'utf8'), await readFile(DEFAULT, 'utf8'));
  // directory/data/directory.json, as the project once shipped it.
  assert.equal(
    createHash('sha256')
      .update(await readFile(DEFAULT))
      .digest('hex'),
    'ed2686b262635f37df56c339a40d93f788e003fab55f7e4d9a62f954741711f3',
  );
});

test('the test dataset: 998 real FRS facilities, each with its FRS page, none with an invented category', async () => {
  const dataset = parseDataset(await readFile(DEFAULT, 'utf8'));
  assert.equal(dataset.records.length, 998);
  assert.equal(dataset.generated, '2026-11-21');
  for (const r of dataset.records) {
    assert.match(r.id, /^epa-\d{12}$/);
    assert.deepEqual(
      r.sources.map((s) => s.url),
      [frsFacilityUrl(r.id.slice(4))],
    );
    assert.deepEqual(r.categories, []);
    assert.deepEqual(r.category_evidence, [], 'printing ink (NAICS 32591) is in no category');
    assert.equal(r.verification, 'source-listed');
  }
  const streamed = await readDataset(Readable.toWeb(createReadStream(DEFAULT)) as ReadableStream<Uint8Array>);
  assert.deepEqual(streamed, dataset);
});

test('importing the same file again changes nothing; a new source merges in beside it', async () => {
  const out = join(dir, 'merge.json');
  await copyFile(DEFAULT, out);
  const before = await readFile(out, 'utf8');
  const again = await run(['--out', out, '--epa', FRS_CSV, '--retrieved', '2026-11-21']);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(await readFile(out, 'utf8'), before);
  assert.match(again.stderr, /998 records \(0 added, 0 updated, 0 removed; 1 sources\)/);
  const more = await run(['--out', out, '--exhibitors', here('fixtures/exhibitors-sample.csv')]);
  assert.equal(more.code, 0, more.stderr);
  assert.match(more.stderr, /exhibitors-sample\.csv:6: email "not-an-address"/, 'skipped rows are named by file and line');
  const merged = parseDataset(await readFile(out, 'utf8'));
  assert.equal(merged.records.length, 998 + 5);
  assert.deepEqual(
    merged.sources.map((s) => s.key),
    ['epa-frs', 'exhibitor:fixture-expo-2024', 'exhibitor:fixture-fair-2025'],
  );
  assert.equal(merged.generated, '2026-11-21', 'the latest retrieval date among the sources');
  const original = parseDataset(before);
  assert.deepEqual(
    merged.records.filter((r) => r.id.startsWith('epa-')),
    original.records,
  );
  // The server's index is written beside the dataset, made from the bytes written.
  assert.match(more.stderr, /merge\.json\.index: the prebuilt index/);
  const index = readIndexFile(await readFile(`${out}.index`));
  assert.equal(index.parts.size, 998 + 5);
  assert.equal(
    index.datasetSha256,
    createHash('sha256')
      .update(await readFile(out))
      .digest('hex'),
  );
});

test('re-importing a list that no longer names a record removes it, and says so', async () => {
  const sample = await readFile(here('fixtures/exhibitors-sample.csv'), 'utf8');
  const out = join(dir, 'removal.json');
  const first = await run(['--out', out, '--exhibitors', here('fixtures/exhibitors-sample.csv')]);
  assert.match(first.stderr, /5 records \(5 added, 0 updated, 0 removed; 2 sources\)/);
  const shorter = join(dir, 'exhibitors-shorter.csv');
  await writeFile(
    shorter,
    sample
      .split('\n')
      .filter((line) => !line.includes('Fixture Mould Works'))
      .join('\n'),
  );
  const second = await run(['--out', out, '--exhibitors', shorter]);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stderr, /4 records \(0 added, 0 updated, 1 removed; 2 sources\)/);
  const dataset = parseDataset(await readFile(out, 'utf8'));
  assert.isUndefined(dataset.records.find((r) => r.name === 'Fixture Mould Works'));
  assert.equal(dataset.records.length, 4);
});

test("without --retrieved a file is dated by its own date, its newest entry, and says so: a copy made today is not today's data", async () => {
  // A copy's modification time is the day it was copied, not the day the export was made.
  const epa = join(dir, 'copied-frs.csv');
  await copyFile(FRS_CSV, epa);
  const today = new Date();
  await utimes(epa, today, today);
  const out = join(dir, 'own-dated.json');
  const frs = await run(['--out', out, '--fresh', '--epa', epa]);
  assert.equal(frs.code, 0, frs.stderr);
  // The shared extract's newest entry: UPDATE_DATE 20-JUL-21.
  assert.match(frs.stderr, /retrieval date 2021-07-20, the export's own date \(UPDATE_DATE, the earliest it can have been made\)/);
  assert.notInclude(frs.stderr, today.toISOString().slice(0, 10));
  const dataset = parseDataset(await readFile(out, 'utf8'));
  assert.equal(dataset.sources[0]!.retrieved, '2021-07-20');
  assert.equal(dataset.generated, '2021-07-20');
  assert.isTrue(dataset.records.every((r) => r.sources[0]!.retrieved === '2021-07-20'));

  const wikidata = join(dir, 'wikidata.json');
  await writeFile(wikidata, await readFile(here('fixtures/wikidata-sample.json')));
  await utimes(wikidata, today, today);
  const wd = await run(['--out', join(dir, 'wd-dated.json'), '--fresh', '--wikidata', wikidata]);
  assert.equal(wd.code, 0, wd.stderr);
  assert.match(wd.stderr, /retrieval date 2025-03-04, the export's own date \(its newest \?modified/);
});

test('without --retrieved a file with no date of its own is dated by its modification time, and says so; never from the clock', async () => {
  const input = join(dir, 'wikidata-undated.json');
  const sample = JSON.parse(await readFile(here('fixtures/wikidata-sample.json'), 'utf8')) as { results: { bindings: Record<string, unknown>[] } };
  for (const binding of sample.results.bindings) delete binding.modified;
  await writeFile(input, JSON.stringify(sample));
  await utimes(input, new Date('2024-04-05T12:00:00Z'), new Date('2024-04-05T12:00:00Z'));
  const out = join(dir, 'dated.json');
  const { code, stderr } = await run(['--out', out, '--wikidata', input]);
  assert.equal(code, 0, stderr);
  assert.match(stderr, /retrieval date 2024-04-05 taken from the file's modification time \(the file carries no date of its own\)/);
  const dataset = parseDataset(await readFile(out, 'utf8'));
  assert.equal(dataset.sources[0]!.retrieved, '2024-04-05');
});

test('usage errors exit 2; an input that cannot be read exits 1 and leaves the output alone', async () => {
  assert.equal((await run(['--out', join(dir, 'x.json'), '--epa', FRS_CSV, '--naics', '332710'])).code, 2, 'live options with files');
  assert.equal((await run(['--out', join(dir, 'x.json'), '--epa', FRS_CSV, '--retrieved', '2026-13-01'])).code, 2);
  assert.equal((await run(['--out', join(dir, 'x.json'), '--bogus'])).code, 2);
  // The live import's own flags, refused before any request is made.
  for (const [flag, value] of [
    ['--naics', '1'],
    ['--naics', '3327100'],
    ['--naics', '33a'],
    ['--page-size', '0'],
    ['--page-size', '10001'],
    ['--attempts', '0'],
    ['--source', 'opencorporates'],
    ['--generated', '2026-02-30'],
  ]) {
    const refused = await run(['--out', join(dir, 'never.json'), flag!, value!]);
    assert.equal(refused.code, 2, `${flag} ${value}: ${refused.stderr}`);
    assert.include(refused.stderr, flag!.slice(2), `${flag} ${value}`);
  }
  assert.isFalse(existsSync(join(dir, 'never.json.import')), 'no staging folder: nothing was fetched');
  const out = join(dir, 'untouched.json');
  await copyFile(DEFAULT, out);
  const wrong = await run(['--out', out, '--wikidata', FRS_CSV, '--retrieved', '2026-11-21']);
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /not JSON/);
  assert.match(wrong.stderr, /left unchanged/);
  assert.equal(await readFile(out, 'utf8'), await readFile(DEFAULT, 'utf8'));
  const missing = await run(['--out', out, '--epa', join(dir, 'no-such.csv'), '--retrieved', '2026-11-21']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no-such\.csv/);
});
