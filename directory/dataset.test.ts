import { assert } from 'chai';
import fc from 'fast-check';
import { rejects, rejectsAsync } from '../test/assert.ts';
import { test } from '../test/harness.ts';
import { canonicalRecord, type Dataset, datasetChunks, InvalidDatasetError, parseDataset, readDataset, serializeDataset } from './dataset.ts';
import type { FactoryRecord } from './record.ts';

function record(id: string, name: string): FactoryRecord {
  return {
    id,
    name,
    country: 'DE',
    region: null,
    city: 'Zürich',
    address: null,
    postal_code: null,
    categories: [],
    category_evidence: [],
    contacts: [],
    sources: [{ key: 'wikidata', name: 'Wikidata', url: `https://www.wikidata.org/wiki/${id.slice(3)}`, licence: 'CC0 1.0', retrieved: '2025-01-01' }],
    verification: 'unverified',
    first_seen: '2025-01-01',
    updated: '2025-01-01',
  };
}

const dataset: Dataset = {
  generated: '2025-01-01',
  sources: [{ key: 'wikidata', name: 'Wikidata', url: 'https://query.wikidata.org/', licence: 'CC0 1.0', retrieved: '2025-01-01' }],
  records: [record('wd-Q1', 'Fixture Eins'), record('wd-Q10', 'Fixture Zehn — 深圳'), record('wd-Q2', 'Fixture Zwei')],
};

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

test('dataset: serialize then parse gives the dataset back; one record per line', () => {
  const text = serializeDataset(dataset);
  assert.deepEqual(parseDataset(text), dataset);
  const lines = text.split('\n');
  assert.equal(lines.length, 3 + 3, 'header, three records, closing, final newline');
  assert.match(lines[0]!, /^\{"generated":"2025-01-01","sources":\[.*\],"records":\[$/);
  assert.equal(lines[4], ']}');
  assert.equal(text, [...datasetChunks(dataset)].join(''));
});

test('dataset: the bytes do not depend on the order of members in the input', () => {
  const shuffled = dataset.records.map((r) => Object.fromEntries(Object.entries(r).reverse()) as unknown as FactoryRecord);
  assert.equal(serializeDataset({ ...dataset, records: shuffled }), serializeDataset(dataset));
  assert.deepEqual(Object.keys(canonicalRecord(shuffled[0]!)), Object.keys(dataset.records[0]!));
});

test('dataset: records out of order are sorted; a repeated id or a bad record is refused', () => {
  const reversed = JSON.stringify({ ...dataset, records: [...dataset.records].reverse() });
  assert.deepEqual(
    parseDataset(reversed).records.map((r) => r.id),
    ['wd-Q1', 'wd-Q10', 'wd-Q2'],
  );
  const twice = JSON.stringify({ ...dataset, records: [dataset.records[0], dataset.records[0]] });
  rejects(() => parseDataset(twice), InvalidDatasetError, 'duplicate-id', /wd-Q1/);
  const bad = JSON.stringify({ ...dataset, records: [dataset.records[0], { ...dataset.records[1], country: 'Germany' }] });
  rejects(() => parseDataset(bad), InvalidDatasetError, 'bad-record', /record 1 \(wd-Q10\): country/);
  rejects(() => parseDataset('{"generated":"2025-01-01"'), InvalidDatasetError, 'not-json');
  rejects(() => parseDataset('[]'), InvalidDatasetError, 'bad-shape');
  rejects(() => parseDataset('{"generated":"2025-1-1","sources":[],"records":[]}'), InvalidDatasetError, 'bad-shape', /generated/);
  rejects(() => parseDataset('{"generated":"2025-01-01","sources":[]}'), InvalidDatasetError, 'bad-shape', /records/);
});

test('dataset: readDataset reads the line layout from a stream cut anywhere, even inside a character', async () => {
  const bytes = new TextEncoder().encode(serializeDataset(dataset));
  await fc.assert(
    fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 12 }), async (cuts) => {
      const points = [0, ...cuts.sort((a, b) => a - b), bytes.length];
      const chunks = points.slice(1).map((end, i) => bytes.slice(points[i], end));
      assert.deepEqual(await readDataset(streamOf(chunks)), dataset);
    }),
    { numRuns: 100 },
  );
});

test('dataset: readDataset falls back to whole-text parsing for another layout', async () => {
  const pretty = new TextEncoder().encode(JSON.stringify(dataset, null, 2));
  assert.deepEqual(await readDataset(streamOf([pretty])), dataset);
  const empty = { ...dataset, records: [] };
  assert.deepEqual(await readDataset(streamOf([new TextEncoder().encode(serializeDataset(empty))])), empty);
});

test('dataset: readDataset names the line of a bad record and refuses a cut-off file', async () => {
  const lines = serializeDataset(dataset).split('\n');
  const read = (text: string): Promise<Dataset> => readDataset(streamOf([new TextEncoder().encode(text)]));
  const badLine = [...lines];
  badLine[2] = badLine[2]!.replace('"DE"', '"de"');
  await rejectsAsync(() => read(badLine.join('\n')), InvalidDatasetError, 'bad-record', /^line 3 \(wd-Q10\): country/);
  await rejectsAsync(() => read(lines.slice(0, 3).join('\n')), InvalidDatasetError, 'truncated');
  const garbled = [...lines];
  garbled[1] = '{"id":';
  await rejectsAsync(() => read(garbled.join('\n')), InvalidDatasetError, 'not-json', /line 2/);
  const noComma = [...lines];
  noComma[1] = noComma[1]!.slice(0, -1);
  await rejectsAsync(() => read(noComma.join('\n')), InvalidDatasetError, 'not-json', /line 3: expected ","/);
  await rejectsAsync(() => read(''), InvalidDatasetError, 'not-json', /empty/);
  await rejectsAsync(() => readDataset(streamOf([new Uint8Array([0x7b, 0xff, 0x0a])])), InvalidDatasetError, 'not-utf8');
  await rejectsAsync(() => read(`${lines.join('\n')}{}\n`), InvalidDatasetError, 'not-json', /after the end/);
});
