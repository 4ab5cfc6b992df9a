import { assert } from 'chai';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { test } from '../test/harness.ts';
import { sha256, sha256Batch } from '../core/crypto/sha256.ts';
import { toHex } from '../core/encoding/hex.ts';
import { installNativeSha256, nativeSha256, nativeSha256Batch } from './native-crypto.ts';

const reference = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

test('native SHA-256: one message and a batch agree with createHash, for no, one and many messages', () => {
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 }), (messages) => {
      const ends: number[] = [];
      let at = 0;
      for (const m of messages) ends.push((at += m.length));
      const data = new Uint8Array(at);
      messages.forEach((m, i) => data.set(m, at - messages.slice(i).reduce((n, x) => n + x.length, 0)));
      const out = new Uint8Array(32 * messages.length);
      nativeSha256Batch(data, ends, out);
      messages.forEach((m, i) => {
        assert.equal(toHex(out.subarray(32 * i, 32 * i + 32)), reference(m), `message ${i}`);
        assert.equal(toHex(nativeSha256(m)), reference(m));
      });
    }),
    { numRuns: 100 },
  );
});

test('native SHA-256: installed, it passes the checks of the core, whose digests stay right', () => {
  installNativeSha256();
  const data = new TextEncoder().encode('abcabc');
  const out = new Uint8Array(64);
  sha256Batch(data, [3, 6], out);
  const abc = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
  assert.equal(toHex(out.subarray(0, 32)), abc);
  assert.equal(toHex(out.subarray(32)), abc);
  assert.equal(toHex(sha256(data.subarray(0, 3))), abc);
});
