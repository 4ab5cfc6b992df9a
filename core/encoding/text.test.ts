import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { clip } from './text.ts';

test('clip: text within the bound is kept; longer text is cut at a character boundary, never mid-character', () => {
  assert.equal(clip('hello', 5), 'hello');
  assert.equal(clip('hello', 3), 'hel');
  // é is 2 bytes, 😀 is 4: a cut inside either backs up to before it.
  assert.equal(clip('aé', 2), 'a');
  assert.equal(clip('a😀b', 4), 'a');
  assert.equal(clip('a😀b', 5), 'a😀');
  assert.equal(clip('😀', 0), '');
});
