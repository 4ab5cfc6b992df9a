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
