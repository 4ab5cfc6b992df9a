import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { goesFirst } from './tie.ts';

const tip = (timestampMs: number, byte: number) => ({ timestampMs, hash: new Uint8Array(32).fill(byte) });

test('tie: the earlier tip goes first, whatever its hash; at one instant the lower hash', () => {
  assert.isTrue(goesFirst(tip(1_000, 9), tip(2_000, 1)), 'a later producer cannot grind its way ahead');
  assert.isFalse(goesFirst(tip(2_000, 1), tip(1_000, 9)));
  assert.isTrue(goesFirst(tip(1_000, 1), tip(1_000, 2)));
  assert.isFalse(goesFirst(tip(1_000, 2), tip(1_000, 1)));
  assert.isFalse(goesFirst(tip(1_000, 1), tip(1_000, 1)), 'a tip does not go before itself');
});
