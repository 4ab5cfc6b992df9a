// The IndexedDB store in the browser: the shared compliance suite, and data that outlives a close.
import { assert } from 'chai';
import { test } from '../test/harness.ts';
import { kvCompliance } from '../test/kv-compliance.ts';
import { IndexedDbStore } from './indexeddb-store.ts';

let counter = 0;
const freshName = (): string => `mesh-kv-test-${Date.now()}-${counter++}`;

kvCompliance('IndexedDbStore', () => IndexedDbStore.open(freshName()));

test('IndexedDbStore: reopening keeps the data; a closed store refuses reads; destroy empties it', async () => {
  const name = freshName();
  const store = await IndexedDbStore.open(name);
  await store.batch([{ type: 'put', key: Uint8Array.of(1), value: Uint8Array.of(7) }]);
  await store.close();
  let refused = false;
  try {
    await store.get(Uint8Array.of(1));
  } catch {
    refused = true;
  }
  assert.isTrue(refused);
  const again = await IndexedDbStore.open(name);
  const value = await again.get(Uint8Array.of(1));
  assert.strictEqual(Object.getPrototypeOf(value), Uint8Array.prototype);
  assert.deepEqual([...value!], [7]);
  await again.close();
  await IndexedDbStore.destroy(name);
  const fresh = await IndexedDbStore.open(name);
  assert.isUndefined(await fresh.get(Uint8Array.of(1)));
  await fresh.close();
});
