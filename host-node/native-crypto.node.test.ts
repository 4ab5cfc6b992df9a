import { createHash } from 'node:crypto';
import { assert } from 'chai';
import fc from 'fast-check';
import { sha256 } from '../core/crypto/sha256.ts';
import { toHex } from '../core/encoding/hex.ts';
import { test } from '../test/harness.ts';
import { nativeSha256, nodeSha256 } from './native-crypto.ts';

const reference = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

test('native SHA-256: agrees with createHash', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (m) => assert.equal(toHex(nativeSha256(m)), reference(m))),
    { numRuns: 100 },
  );
});

test('native SHA-256: it passes the checks of the core, and its digests and batches are right', () => {
  const native = nodeSha256();
  const data = new TextEncoder().encode('abcabc');
  const out = new Uint8Array(64);
  native.batch(data, [3, 6], out);
  const abc = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
  assert.equal(toHex(out.subarray(0, 32)), abc);
  assert.equal(toHex(out.subarray(32)), abc);
  assert.equal(toHex(native.hash(data.subarray(0, 3))), abc);
  assert.equal(toHex(sha256(data.subarray(0, 3))), abc);
});
