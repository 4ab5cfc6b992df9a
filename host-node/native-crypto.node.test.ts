import { createHash } from 'node:crypto';
import { assert } from 'chai';
import fc from 'fast-check';
import { checkSignature, nobleEd25519Backend, SigningKey } from '../core/crypto/ed25519.ts';
import { sha256 } from '../core/crypto/sha256.ts';
import { fromHex, toHex } from '../core/encoding/hex.ts';
import { test } from '../test/harness.ts';
import { speccheckCases } from '../test/vectors/ed25519-speccheck.ts';
import { nativeSha256, nodeSha256, opensslEd25519Backend } from './native-crypto.ts';

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

test("OpenSSL Ed25519 on the calling thread: noble's signatures, and noble's verdicts on good, forged and edge-case signatures", async () => {
  const openssl = await opensslEd25519Backend();
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ maxLength: 300 }), async (seed, message) => {
      const signature = await SigningKey.fromSeed(seed, openssl).sign(message);
      assert.equal(toHex(signature), toHex(await SigningKey.fromSeed(seed, nobleEd25519Backend).sign(message)));
      const publicKey = SigningKey.fromSeed(seed).publicKey;
      const forged = signature.map((b, i) => (i === 40 ? b ^ 1 : b));
      for (const s of [signature, forged]) {
        assert.equal(await checkSignature(publicKey, message, s, openssl), await checkSignature(publicKey, message, s, nobleEd25519Backend));
      }
    }),
    { numRuns: 30 },
  );
  for (const c of speccheckCases) {
    const [publicKey, message, signature] = [fromHex(c.pub_key), fromHex(c.message), fromHex(c.signature)];
    assert.equal(await checkSignature(publicKey, message, signature, openssl), await checkSignature(publicKey, message, signature, nobleEd25519Backend));
  }
});
