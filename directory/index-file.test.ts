import { assert } from 'chai';
import { concatBytes } from '../core/encoding/bytes.ts';
import { test } from '../test/harness.ts';
import { scratchBits, storeBuffer } from './bitset-simd.ts';
import { type Dataset, serializeDataset } from './dataset.ts';
import type { IndexCache } from './http/data-source.ts';
import { indexFileChunks, readIndexFile } from './index-file.ts';
import { createDirectory } from './router.ts';
import { MemorySubmissionStore } from './submissions/store.ts';
import { fixtureDataset, fixtureText } from './testing/fixtures.ts';

/** An IndexCache in memory that counts what is done with it. */
function memoryCache(bytes?: Uint8Array): IndexCache & { bytes: Uint8Array | undefined; reads: number; writes: number } {
  const cache = {
    bytes,
    reads: 0,
    writes: 0,
    read: async () => {
      cache.reads++;
      return cache.bytes?.slice();
    },
    write: async (chunks: readonly Uint8Array[]) => {
      cache.writes++;
      cache.bytes = concatBytes(...chunks);
    },
  };
  return cache;
}

const PATHS = [
  '/api/v1/factories?q=steel&limit=7&offset=3',
  '/api/v1/factories?country=US&category=sheet-metal',
  '/api/v1/factories?q=northern%20ste&contact=website',
  '/api/v1/stats',
  '/directory.json',
  '/directory.ndjson',
];

/** What a directory over `text` answers to PATHS (bodies and ETags), and what it told onError. */
async function answers(text: string | Uint8Array, cache?: IndexCache): Promise<{ bodies: string[]; etags: (string | null)[]; errors: unknown[] }> {
  const errors: unknown[] = [];
  const data = () => Promise.resolve(new Blob([text as BlobPart]).stream() as ReadableStream<Uint8Array>);
  const directory = createDirectory({
    data,
    submissions: new MemorySubmissionStore(),
    onError: (e) => errors.push(e),
    ...(cache ? { indexCache: cache } : {}),
  });
  const bodies: string[] = [];
  const etags: (string | null)[] = [];
  for (const path of PATHS) {
    const response = await directory.fetch(new Request(`http://directory.test${path}`), { remoteAddress: 'test' });
    assert.equal(response.status, 200, path);
    bodies.push(await response.text());
    etags.push(response.headers.get('etag'));
  }
  await directory.close();
  return { bodies, etags, errors };
}

test('an index cache: written on the first start, read on the next, the same answers and ETags', async () => {
  const text = fixtureText();
  const plain = await answers(text);
  const cache = memoryCache();
  const first = await answers(text, cache);
  assert.deepEqual(first, plain);
  assert.equal(cache.writes, 1, 'made and written when missing');
  const written = cache.bytes!;
  const second = await answers(text, cache);
  assert.deepEqual(second, plain);
  assert.equal(cache.writes, 1, 'a current index is not written again');
  assert.deepEqual(cache.bytes, written);
});

test('an index made from other bytes, or broken, is made again', async () => {
  const text = fixtureText();
  const other: Dataset = { ...fixtureDataset(), records: fixtureDataset().records.slice(0, 5) };
  const cache = memoryCache();
  await answers(serializeDataset(other), cache);
  const stale = await answers(text, cache);
  assert.deepEqual(stale.bodies, (await answers(text)).bodies, 'the dataset answers, not the stale index');
  assert.equal(cache.writes, 2);
  assert.equal(readIndexFile(cache.bytes!).header.generated, fixtureDataset().generated);

  for (const broken of [new TextEncoder().encode('not an index'), cache.bytes!.slice(0, 100), cache.bytes!.slice(0, -8)]) {
    const damaged = memoryCache(broken);
    const result = await answers(text, damaged);
    assert.deepEqual(result.bodies, stale.bodies);
    assert.equal(damaged.writes, 1, 'written again');
    assert.deepEqual(damaged.bytes, cache.bytes);
    if (broken.length > 24) assert.match(String(result.errors[0]), /index file/, 'the broken file is reported');
  }
});

test('a source that is an index file (a deployment fetching one) answers as its dataset, ETags included', async () => {
  const text = fixtureText();
  const cache = memoryCache();
  const fromDataset = await answers(text, cache);
  assert.deepEqual(await answers(cache.bytes!), fromDataset);
});

test('readIndexFile refuses what is not an index file of this version', () => {
  const dataset = fixtureDataset();
  const cache = memoryCache();
  return answers(fixtureText(), cache).then(() => {
    const bytes = cache.bytes!;
    assert.throws(() => readIndexFile(bytes.slice(0, bytes.length - 1)), /bytes long/);
    const renamed = bytes.slice();
    renamed[0] = 0x58;
    assert.throws(() => readIndexFile(renamed), /does not begin as one/);
    const file = readIndexFile(bytes);
    assert.equal(file.parts.size, dataset.records.length);
    assert.match(file.datasetSha256, /^[0-9a-f]{64}$/);
    // Written again from what was read: the same bytes.
    assert.deepEqual(concatBytes(...indexFileChunks(file.parts, file.header, file.datasetSha256)), bytes);
  });
});

/** One chunk holding `bytes`, as a serving thread is handed the index file. */
const oneChunk = (bytes: Uint8Array) => () =>
  Promise.resolve(
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes);
        controller.close();
      },
    }),
  );

async function bodiesOf(directory: ReturnType<typeof createDirectory>): Promise<string[]> {
  const bodies: string[] = [];
  for (const path of PATHS) bodies.push(await (await directory.fetch(new Request(`http://directory.test${path}`), { remoteAddress: 'test' })).text());
  return bodies;
}

test("a thread's directory over another's shared index: the file's bytes and the bit sets used in place, the same answers", async () => {
  const cache = memoryCache();
  const built = createDirectory({
    data: () => Promise.resolve(new Blob([fixtureText()]).stream()),
    submissions: new MemorySubmissionStore(),
    indexCache: cache,
    index: { bitsetFrom: 2 },
  });
  const expected = await bodiesOf(built);
  assert.isUndefined(built.sharedIndex(), 'an index built from the dataset reads no file in place');

  const bytes = cache.bytes!;
  const first = createDirectory({ data: oneChunk(bytes), submissions: new MemorySubmissionStore(), index: { bitsetFrom: 2 } });
  assert.deepEqual(await bodiesOf(first), expected);
  const shared = first.sharedIndex()!;
  assert.strictEqual(shared.file, bytes, 'a whole file in one chunk is not copied');
  assert.isAbove(storeBuffer(shared.bitsets).byteLength, 0);

  const second = createDirectory({ data: oneChunk(shared.file), submissions: new MemorySubmissionStore(), index: { bitsetFrom: 2, bitsets: shared.bitsets } });
  assert.deepEqual(await bodiesOf(second), expected);
  assert.strictEqual(second.sharedIndex()!.bitsets, shared.bitsets);

  const errors: unknown[] = [];
  const wrong = createDirectory({
    data: oneChunk(shared.file),
    submissions: new MemorySubmissionStore(),
    index: { bitsetFrom: 2, bitsets: new ArrayBuffer(8) },
    onError: (e) => errors.push(e),
  });
  assert.equal((await wrong.fetch(new Request('http://directory.test/api/v1/stats'))).status, 503);
  assert.match(String(errors[0]), /bit sets given were made for another index/);
  // The store of an index with other bit sets (a lower bitsetFrom makes more of them), grown by a thread's scratch sets.
  const other = createDirectory({ data: oneChunk(bytes), submissions: new MemorySubmissionStore(), index: { bitsetFrom: 1 } });
  await bodiesOf(other);
  const otherStore = other.sharedIndex()!.bitsets;
  scratchBits(otherStore, 1024);
  const mismatched = createDirectory({
    data: oneChunk(shared.file),
    submissions: new MemorySubmissionStore(),
    index: { bitsetFrom: 2, bitsets: otherStore },
    onError: (e) => errors.push(e),
  });
  assert.equal((await mismatched.fetch(new Request('http://directory.test/api/v1/stats'))).status, 503);
  assert.match(String(errors.at(-1)), /bit sets given were made for another index/);
});
