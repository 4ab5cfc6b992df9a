import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { kvCompliance } from '../../test/kv-compliance.ts';
import { MemoryStore, prefixEnd } from './kv.ts';

kvCompliance('MemoryStore', async () => new MemoryStore());

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
  const all = async (store: MemoryStore): Promise<number[][]> => {
    const out: number[][] = [];
    for await (const [k, v] of store.entries()) out.push([...k, ...v]);
    return out;
  };
  assert.deepEqual(await all(merged), await all(oneByOne));
  assert.isAbove(merged.size, 300);
});
