import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { SUBMISSION_ID_PATTERN } from '../http/schemas.ts';
import { constantTimeEqual, hashToken, newSubmissionId, newToken, tokenMatches } from './token.ts';

test('ids are 128 random bits in hex, tokens 256 bits in base64url', () => {
  const ids = new Set(Array.from({ length: 200 }, newSubmissionId));
  assert.equal(ids.size, 200);
  for (const id of ids) assert.match(id, SUBMISSION_ID_PATTERN);
  const tokens = new Set(Array.from({ length: 200 }, newToken));
  assert.equal(tokens.size, 200);
  for (const token of tokens) assert.match(token, /^[A-Za-z0-9_-]{43}$/);
});

test('a token is stored as its SHA-256 and matched against it', async () => {
  // FIPS 180-2 B.1.
  assert.equal(await hashToken('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  const token = newToken();
  const stored = await hashToken(token);
  assert.isTrue(await tokenMatches(token, stored));
  assert.isFalse(await tokenMatches(`${token}x`, stored));
  assert.isFalse(await tokenMatches('', stored));
});

test('constantTimeEqual is equality', () => {
  assert.isTrue(constantTimeEqual('', ''));
  assert.isTrue(constantTimeEqual('abc', 'abc'));
  assert.isFalse(constantTimeEqual('abc', 'abd'));
  assert.isFalse(constantTimeEqual('abc', 'ab'));
  assert.isFalse(constantTimeEqual('ab', 'abc'));
  assert.isFalse(constantTimeEqual('\u0000', ''));
});
