// The chain's limits as the contract's table gives them (node-api.md §8 "Limits").
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { DEFAULT_TX_PAGE, MAX_BLOCKS_PER_RESPONSE, MAX_TX_PAGE } from './chain.ts';

test('chain limits: up to 500 blocks per sync response', () => {
  assert.equal(MAX_BLOCKS_PER_RESPONSE, 500);
});

test('chain limits: a transactions page is 100 by default, 500 at most', () => {
  assert.equal(DEFAULT_TX_PAGE, 100);
  assert.equal(MAX_TX_PAGE, 500);
});
