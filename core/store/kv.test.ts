import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { kvCompliance } from '../../test/kv-compliance.ts';
import { MemoryStore, prefixEnd, SharedStrings } from './kv.ts';

kvCompliance('MemoryStore', async () => new MemoryStore());
kvCompliance('MemoryStore sharing strings', async () => new MemoryStore({ shared: new SharedStrings() }));

const entriesOf = async (store: MemoryStore): Promise<number[][]> => {
  const out: number[][] = [];
  for await (const [k, v] of store.entries()) out.push([...k, 0x100, ...v]);
  return out;
};

test('MemoryStore: every byte value and long values come back as written, in byte order', async () => {
  const store = new MemoryStore();
  const every = Uint8Array.from({ length: 256 }, (_, i) => i);
  const long = Uint8Array.from({ length: 20_000 }, (_, i) => (i * 131) % 256);
  const keys = [Uint8Array.of(0xff), Uint8Array.of(0x80), Uint8Array.of(0x7f), Uint8Array.of(0xff, 0), Uint8Array.of(0)];
  await store.batch(keys.map((key, i) => ({ type: 'put', key, value: i % 2 === 0 ? every : long })));
  assert.deepEqual([...(await store.get(Uint8Array.of(0x80)))!], [...long]);
  assert.deepEqual([...(await store.get(Uint8Array.of(0xff)))!], [...every]);
  const order: number[][] = [];
  for await (const [k] of store.entries()) order.push([...k]);
  assert.deepEqual(order, [[0], [0x7f], [0x80], [0xff], [0xff, 0]]);
});

test('MemoryStore: stores sharing strings hold one copy of what both write, and stay apart', async () => {
  const shared = new SharedStrings();
  const one = new MemoryStore({ shared });
  const two = new MemoryStore({ shared });
  const block = Uint8Array.from({ length: 1_000 }, (_, i) => i % 256);
  for (const store of [one, two]) await store.batch([{ type: 'put', key: Uint8Array.of(1), value: block }]);
  assert.strictEqual(shared.size, 2, 'the key and the value, once each');
  await two.batch([
    { type: 'put', key: Uint8Array.of(1), value: Uint8Array.of(9) },
    { type: 'put', key: Uint8Array.of(2), value: block },
  ]);
  const read = (await one.get(Uint8Array.of(1)))!;
  read[0] = 99;
  assert.deepEqual([...(await one.get(Uint8Array.of(1)))!], [...block], 'a copy comes out; the other store did not change it');
  assert.deepEqual(await entriesOf(two), [
    [1, 0x100, 9],
    [2, 0x100, ...block],
  ]);
});

test('SharedStrings: long values are shared too, and two with the same ends stay apart', async () => {
  // Past 16,383 chars V8 hashes a string by its length alone; such values are filed by their ends.
  const shared = new SharedStrings();
  const one = new MemoryStore({ shared });
  const two = new MemoryStore({ shared });
  const long = (middle: number): Uint8Array => Uint8Array.from({ length: 40_000 }, (_, i) => (i === 20_000 ? middle : i % 251));
  await one.batch([{ type: 'put', key: Uint8Array.of(1), value: long(1) }]);
  await two.batch([{ type: 'put', key: Uint8Array.of(1), value: long(1) }]);
  assert.strictEqual(shared.size, 2, 'the key and the long value, once each');
  await two.batch([{ type: 'put', key: Uint8Array.of(2), value: long(2) }]);
  assert.deepEqual([...(await two.get(Uint8Array.of(2)))!], [...long(2)]);
  assert.deepEqual([...(await two.get(Uint8Array.of(1)))!], [...long(1)]);
});

test('prefixEnd: the smallest key above every key with the prefix', () => {
  assert.deepEqual([...prefixEnd(Uint8Array.of(1, 2))], [1, 3]);
  assert.deepEqual([...prefixEnd(Uint8Array.of(1, 255))], [2]);
  assert.deepEqual([...prefixEnd(Uint8Array.of(255, 255))], []);
});

test('MemoryStore: a large batch, merged in one pass, leaves what its ops one by one would', async () => {
  // Past a few hundred ops a batch is merged rather than spliced in: the same outcome, the last op on a key winning.
  const ops = (round: number): { type: 'put' | 'del'; key: Uint8Array; value: Uint8Array }[] =>
    Array.from({ length: 900 }, (_, i) => ({
      type: (i * 7 + round) % 5 === 0 ? 'del' : 'put',
      key: Uint8Array.of((i * 37) % 311, round),
      value: Uint8Array.of(i, round),
    }));
  const merged = new MemoryStore();
  const oneByOne = new MemoryStore();
  for (const round of [0, 1, 0]) {
    const batch = ops(round).map((op) => (op.type === 'put' ? op : { type: 'del' as const, key: op.key }));
    await merged.batch(batch);
    for (const op of batch) await oneByOne.batch([op]);
  }
  assert.deepEqual(await entriesOf(merged), await entriesOf(oneByOne));
  assert.isAbove(merged.size, 300);
});
