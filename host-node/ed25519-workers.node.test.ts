import { test } from 'node:test';
import { assert } from 'chai';
import {
  checkedEd25519Backend,
  defaultEd25519Backend,
  type Ed25519Backend,
  ed25519Backends,
  type SignedMessage,
  SigningKey,
  verifyBatch,
} from '../core/crypto/ed25519.ts';
import { fromHex } from '../core/encoding/hex.ts';
import { MeshError } from '../core/errors.ts';
import { rejectsAsync } from '../test/assert.ts';
import { speccheckCases } from '../test/vectors/ed25519-speccheck.ts';
import { workerEd25519Backend } from './ed25519-workers.ts';

const webcrypto = ed25519Backends[0]!;

// Good signatures of a few keys, with forgeries of every kind among them: another message, a
// flipped signature bit, a key that is not a curve point, and the speccheck edge cases.
async function mixedBatch(): Promise<SignedMessage[]> {
  const keys = Array.from({ length: 5 }, (_, i) => SigningKey.fromSeed(new Uint8Array(32).fill(i + 1)));
  const items: SignedMessage[] = [];
  for (let i = 0; i < 120; i++) {
    const key = keys[i % keys.length]!;
    const message = new TextEncoder().encode(`message ${i}`);
    const signature = await key.sign(message);
    if (i % 7 === 3) items.push({ publicKey: key.publicKey, message: new TextEncoder().encode('another'), signature });
    else if (i % 11 === 5) items.push({ publicKey: key.publicKey, message, signature: signature.map((b, j) => (j === 40 ? b ^ 1 : b)) });
    else if (i % 13 === 6) items.push({ publicKey: Uint8Array.of(2, ...new Uint8Array(31)), message, signature });
    else items.push({ publicKey: key.publicKey, message, signature });
  }
  for (const c of speccheckCases) {
    items.push({ publicKey: fromHex(c.pub_key), message: fromHex(c.message), signature: fromHex(c.signature) });
  }
  return items;
}

test('ed25519 workers: a batch on the worker threads gets the verdicts WebCrypto gives, in order', async () => {
  const backend = workerEd25519Backend(2);
  const items = await mixedBatch();
  const expected = await verifyBatch(items, webcrypto);
  assert.include(expected, true);
  assert.include(expected, false);
  assert.deepEqual(await verifyBatch(items, backend), expected);
  // Small batches and single checks stay on WebCrypto, with the same verdicts.
  assert.deepEqual(await verifyBatch(items.slice(0, 10), backend), expected.slice(0, 10));
  assert.equal(await backend.verifyEquation(items[0]!.publicKey, items[0]!.message, items[0]!.signature), expected[0]);
  // Several batches in flight at once each get their own verdicts.
  const halves = await Promise.all([verifyBatch(items.slice(0, 64), backend), verifyBatch(items.slice(64), backend)]);
  assert.deepEqual(halves.flat(), expected);
});

test('ed25519 workers: handed out once the core checked them, the default untouched; a backend with wrong verdicts is refused', async () => {
  const yes: Ed25519Backend = { ...webcrypto, name: 'yes-man', verifyEquation: async () => true, verifyEquations: async (items) => items.map(() => true) };
  await rejectsAsync(() => checkedEd25519Backend(yes), MeshError, 'ed25519-backend-wrong');
  const workers = await checkedEd25519Backend(workerEd25519Backend(1));
  assert.equal(workers.name, 'node-workers');
  assert.equal(defaultEd25519Backend.name, 'webcrypto');
  const items = await mixedBatch();
  assert.deepEqual(await verifyBatch(items, workers), await verifyBatch(items, webcrypto));
});
