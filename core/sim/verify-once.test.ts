import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import type { Ed25519Backend } from '../crypto/ed25519.ts';
import { verifyOnce } from './verify-once.ts';

// A backend that counts its checks and calls a signature good when its last byte is the message's first.
function counting(): { backend: Ed25519Backend; checks: () => number } {
  let checks = 0;
  const backend: Ed25519Backend = {
    name: 'counting',
    signer: async () => async () => new Uint8Array(64),
    async verifyEquation(_publicKey, message, signature) {
      checks++;
      return signature[63] === message[0];
    },
  };
  return { backend, checks: () => checks };
}

test('verifyOnce: checks a key, signature and message once, and tells apart any two that differ in one of them', async () => {
  const { backend, checks } = counting();
  const once = verifyOnce(backend);
  const key = new Uint8Array(32).fill(1);
  const signature = new Uint8Array(64).fill(2);
  const message = new Uint8Array([2, 3]);
  assert.isTrue(await once.verifyEquation(key, message, signature));
  // The same bytes in other arrays, as each simulated node decodes its own copy.
  assert.isTrue(await once.verifyEquation(key.slice(), message.slice(), signature.slice()));
  assert.equal(checks(), 1);
  // One signature's first bytes shared by all: each differing triple is checked for itself.
  assert.isFalse(await once.verifyEquation(key, new Uint8Array([3, 3]), signature));
  const otherSignature = signature.slice();
  otherSignature[63] = 3;
  assert.isFalse(await once.verifyEquation(key, message, otherSignature));
  assert.isTrue(await once.verifyEquation(new Uint8Array(32).fill(9), message, signature));
  assert.equal(checks(), 4);
  assert.isFalse(await once.verifyEquation(key, new Uint8Array([3, 3]), signature));
  assert.equal(checks(), 4);
});

test('verifyOnce: keeps copies, so a caller reusing its arrays does not change a kept verdict', async () => {
  const { backend, checks } = counting();
  const once = verifyOnce(backend);
  const key = new Uint8Array(32);
  const signature = new Uint8Array(64);
  const message = new Uint8Array([0]);
  assert.isTrue(await once.verifyEquation(key, message, signature));
  message[0] = 5;
  assert.isFalse(await once.verifyEquation(key, message, signature), 'checked anew: the message is another');
  assert.equal(checks(), 2);
});
