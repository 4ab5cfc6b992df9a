import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { type Dataset, serializeDataset } from '../dataset.ts';
import { fixtureDataset, textSource } from '../testing/fixtures.ts';
import { DataLoader, type LoadedData } from './data-source.ts';
import { factoryById, factoryByIdJson, registryStats, registryStatsJson, searchFactories, searchFactoriesJson } from './reads.ts';

const decoder = new TextDecoder();

async function load(text: string): Promise<LoadedData> {
  const state = await new DataLoader(textSource(text), { now: () => 0 }, { minMs: 1000, maxMs: 1000 }, () => {}).get();
  if (!state.ok) throw new Error('the dataset did not load');
  return state.data;
}

const QUERIES = [
  { limit: 20, offset: 0 },
  { q: 'steel', limit: 3, offset: 0 },
  { q: 'steel', limit: 3, offset: 3 },
  { country: 'US', limit: 100, offset: 0 },
  { q: 'nothing-matches-this', limit: 20, offset: 0 },
  { limit: 5, offset: 10_000 },
];

/** The fixture with its lines spelt otherwise: spaces, escapes, members in another order. */
function respelt(dataset: Dataset): string {
  const lines = serializeDataset(dataset).split('\n');
  return lines
    .map((line, i) => {
      if (i === 1) return line.replaceAll('":', '": ').replaceAll(',"', ', "');
      if (i === 2) return line.replace(/"name":"(.)/, (_, c: string) => `"name":"\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      if (i === 3) return line.replace('"country":', '"region":"duplicate","country":');
      if (i === 4) return line.replace(/"region":(null|"[^"]*"),"city":(null|"[^"]*")/, '"city":$2,"region":$1');
      if (i === 5) return line.replace(/^\{"id":("[^"]+"),"name":("[^"]+"),/, '{"name":$2,"id":$1,');
      return line;
    })
    .join('\n');
}

test('the bodies assembled from stored bytes are JSON.stringify of the objects, byte for byte', async () => {
  for (const text of [serializeDataset(fixtureDataset()), respelt(fixtureDataset())]) {
    const data = await load(text);
    for (const query of QUERIES) {
      assert.equal(decoder.decode(searchFactoriesJson(data, query)), JSON.stringify(searchFactories(data, query)), JSON.stringify(query));
    }
    for (const record of fixtureDataset().records) {
      assert.equal(decoder.decode(factoryByIdJson(data, record.id)), JSON.stringify(factoryById(data, record.id)));
    }
    assert.equal(decoder.decode(registryStatsJson(data).bytes), JSON.stringify(registryStats(data)));
  }
});

test('a search body is copied by its Response: the next search does not change it', async () => {
  const data = await load(serializeDataset(fixtureDataset()));
  const first = new Response(searchFactoriesJson(data, QUERIES[1]!) as Uint8Array<ArrayBuffer>);
  const second = new Response(searchFactoriesJson(data, QUERIES[3]!) as Uint8Array<ArrayBuffer>);
  assert.deepEqual(await first.json(), JSON.parse(JSON.stringify(searchFactories(data, QUERIES[1]!))));
  assert.deepEqual(await second.json(), JSON.parse(JSON.stringify(searchFactories(data, QUERIES[3]!))));
});

test('the statistics body is made once per dataset, with a strong ETag of its bytes', async () => {
  const data = await load(serializeDataset(fixtureDataset()));
  const stats = registryStatsJson(data);
  assert.strictEqual(registryStatsJson(data), stats);
  assert.match(stats.etag, /^"[0-9a-f]{32}"$/);
  const other = await load(serializeDataset({ ...fixtureDataset(), records: fixtureDataset().records.slice(1) }));
  assert.notEqual(registryStatsJson(other).etag, stats.etag);
});
