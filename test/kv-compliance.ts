/**
 * The compliance suite every KeyValueStore implementation must pass (memory here; LevelDB and
 * IndexedDB in their hosts). `open` gives a fresh, empty store each call.
 */
import { assert } from 'chai';
import { type KeyValueStore, prefixRange } from '../core/store/kv.ts';
import { test } from './harness.ts';

const b = (...xs: number[]): Uint8Array => Uint8Array.from(xs);
const hex = (x: Uint8Array): string => [...x].map((v) => v.toString(16).padStart(2, '0')).join('');

async function collect(store: KeyValueStore, range?: Parameters<KeyValueStore['entries']>[0]): Promise<string[]> {
  const out: string[] = [];
  for await (const [k, v] of store.entries(range)) out.push(`${hex(k)}=${hex(v)}`);
  return out;
}

export function kvCompliance(name: string, open: () => Promise<KeyValueStore>): void {
  test(`${name}: get of a missing key is undefined; put then get returns a copy`, async () => {
    const store = await open();
    assert.isUndefined(await store.get(b(1)));
    const value = b(9, 9);
    await store.batch([{ type: 'put', key: b(1), value }]);
    value[0] = 0;
    const got = await store.get(b(1));
    assert.deepEqual([...got!], [9, 9]);
    got![1] = 0;
    assert.deepEqual([...(await store.get(b(1)))!], [9, 9]);
    await store.close();
  });

  test(`${name}: a batch applies in order, later operations on a key winning`, async () => {
    const store = await open();
    await store.batch([
      { type: 'put', key: b(1), value: b(1) },
      { type: 'put', key: b(1), value: b(2) },
      { type: 'put', key: b(2), value: b(3) },
      { type: 'del', key: b(2) },
      { type: 'del', key: b(3) },
    ]);
    assert.deepEqual(await collect(store), ['01=02']);
    await store.close();
  });

  test(`${name}: a staged batch applies nothing until written, then all in the order added; a discarded one nothing`, async () => {
    const store = await open();
    await store.batch([{ type: 'put', key: b(2), value: b(2) }]);
    const staged = store.stage();
    staged.add([
      { type: 'put', key: b(1), value: b(1) },
      { type: 'del', key: b(2) },
    ]);
    let refused = false;
    try {
      staged.add([{ type: 'put', key: 'not bytes' as unknown as Uint8Array, value: b(7) }]);
    } catch (error) {
      refused = error instanceof TypeError;
    }
    assert.isTrue(refused);
    staged.add([
      { type: 'put', key: b(1), value: b(3) },
      { type: 'put', key: b(4), value: b(4) },
    ]);
    assert.deepEqual(await collect(store), ['02=02'], 'nothing before the write');
    await staged.write();
    assert.deepEqual(await collect(store), ['01=03', '04=04']);
    const dropped = store.stage();
    dropped.add([{ type: 'del', key: b(1) }]);
    dropped.discard();
    assert.deepEqual(await collect(store), ['01=03', '04=04']);
    await store.close();
  });

  test(`${name}: a batch with a bad operation applies nothing`, async () => {
    const store = await open();
    await store.batch([{ type: 'put', key: b(5), value: b(5) }]);
    let failed = false;
    try {
      await store.batch([
        { type: 'put', key: b(6), value: b(6) },
        { type: 'put', key: 'not bytes' as unknown as Uint8Array, value: b(7) },
      ]);
    } catch {
      failed = true;
    }
    assert.isTrue(failed);
    assert.deepEqual(await collect(store), ['05=05']);
    await store.close();
  });

  test(`${name}: entries come in byte order within gte/lt, reversed and limited on request`, async () => {
    const store = await open();
    const keys = [b(2), b(1, 0), b(1), b(1, 255), b(0, 5), b(255, 255), b(3)];
    await store.batch(keys.map((key) => ({ type: 'put' as const, key, value: b(key.length) })));
    assert.deepEqual(await collect(store), ['0005=02', '01=01', '0100=02', '01ff=02', '02=01', '03=01', 'ffff=02']);
    assert.deepEqual(await collect(store, { gte: b(1), lt: b(2) }), ['01=01', '0100=02', '01ff=02']);
    assert.deepEqual(await collect(store, prefixRange(b(1))), ['01=01', '0100=02', '01ff=02']);
    assert.deepEqual(await collect(store, prefixRange(b(255))), ['ffff=02']);
    assert.deepEqual(await collect(store, { gte: b(1), lt: b(3), reverse: true, limit: 2 }), ['02=01', '01ff=02']);
    assert.deepEqual(await collect(store, { limit: 0 }), []);
    await store.close();
  });

  test(`${name}: writes during an iteration do not disturb it`, async () => {
    const store = await open();
    await store.batch([1, 2, 3].map((n) => ({ type: 'put' as const, key: b(n), value: b(n) })));
    const seen: string[] = [];
    for await (const [k] of store.entries()) {
      seen.push(hex(k));
      if (k[0] === 1)
        await store.batch([
          { type: 'del', key: b(1) },
          { type: 'put', key: b(0), value: b(0) },
        ]);
    }
    assert.deepEqual(seen, ['01', '02', '03']);
    assert.deepEqual(await collect(store), ['00=00', '02=02', '03=03']);
    await store.close();
  });
}
