import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { MemoryStore } from '../store/kv.ts';
import { SlashingProtection, SlashingProtectionError } from './slashing-protection.ts';
import { key, mine, nextBlock, openChain, params } from './testnet.test-util.ts';

const A = key(1);
const B = key(2);

test('slashing protection: a key signs above its last height only; the recorded block passes again', async () => {
  const chain = await openChain();
  await mine(chain, B, 2);
  const protection = new SlashingProtection(new MemoryStore(), params.network);
  assert.isNull(await protection.last(A.publicKey));
  const first = await nextBlock(chain, A);
  const second = await nextBlock(chain, A, null, 1);
  await protection.record(first);
  assert.equal((await protection.last(A.publicKey))?.height, 3);
  await protection.record(first);
  const refused = await rejectsAsync(() => protection.record(second), SlashingProtectionError, 'already-signed');
  assert.equal((refused as SlashingProtectionError).record.height, 3);
  // Another key has a record of its own.
  assert.isNull(await protection.last(B.publicKey));
  await protection.record(await nextBlock(chain, B));
  // Above the recorded height, A signs again.
  await mine(chain, B, 1);
  await protection.record(await nextBlock(chain, A));
  assert.equal((await protection.last(A.publicKey))?.height, 4);
});

test('slashing protection: the record survives a restart, block and all', async () => {
  const chain = await openChain();
  const store = new MemoryStore();
  const block = await nextBlock(chain, A);
  await new SlashingProtection(store, params.network).record(block);
  const reopened = new SlashingProtection(store, params.network);
  const last = await reopened.last(A.publicKey);
  assert.equal(last?.height, 1);
  assert.equal(toHex(last!.block.hash), toHex(block.hash));
  await rejectsAsync(async () => reopened.record(await nextBlock(chain, A, null, 5)), SlashingProtectionError, 'already-signed');
  // Two records at once: only one of two different blocks at one height gets through.
  const racing = new SlashingProtection(new MemoryStore(), params.network);
  const outcomes = await Promise.allSettled([racing.record(block), racing.record(await nextBlock(chain, A, null, 7))]);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected'],
  );
});
