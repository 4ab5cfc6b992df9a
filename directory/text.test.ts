import { assert } from 'chai';
import { test } from '../test/harness.ts';
import { foldPhrase, foldText, words } from './text.ts';

test('folding drops case and accents, and spells out letters without a base form', () => {
  assert.equal(foldText('São Paulo'), 'sao paulo');
  assert.equal(foldText('MÜLLER'), 'muller');
  assert.equal(foldText('Straße'), 'strasse');
  assert.equal(foldText('Søren Łódź Æther Œuvre'), 'soren lodz aether oeuvre');
  assert.equal(foldText('Ｆｕｌｌｗｉｄｔｈ'), 'fullwidth', 'compatibility forms fold too');
  assert.equal(foldText('한국'), '한국', 'Hangul syllables survive NFKD and come back whole');
  assert.equal(foldText('plain ascii'), 'plain ascii');
});

test('words: letters and digits; punctuation separates; CJK characters one by one', () => {
  assert.deepEqual(words('INX INTL. INK CO.-ELK GROVE'), ['inx', 'intl', 'ink', 'co', 'elk', 'grove']);
  assert.deepEqual(words('3M  Company'), ['3m', 'company']);
  assert.deepEqual(words('深圳精密 Co'), ['深', '圳', '精', '密', 'co']);
  assert.deepEqual(words('Crème-Brûlée'), ['creme', 'brulee']);
  assert.deepEqual(words(' ... '), []);
  assert.equal(foldPhrase('  São   PAULO-SP '), 'sao paulo sp');
});
