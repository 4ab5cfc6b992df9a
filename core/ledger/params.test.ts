// The ledger's constants as the contract's tables give them (node-api.md §2 "Ledger constants" and
// §8 "Limits"): each literal here fails the test when its value in params.ts changes, however
// consistently the rest of the code follows the constant.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { CREDIT } from '../encoding/amount.ts';
import {
  burnOf,
  devnet,
  EXPIRY_BLOCKS,
  emissionAt,
  HALVING_BLOCKS,
  HEARTBEAT_INTERVAL_SECS,
  HISTORY_WINDOW_BLOCKS,
  INITIAL_EMISSION,
  LIGHT_RETENTION_BLOCKS,
  MAINNET,
  MAX_TXS_PER_BLOCK,
  SETTLEMENT_BURN_BPS,
  SUPPLY_CAP,
} from './params.ts';

test('params: a credit is 10^18 base units', () => {
  assert.equal(CREDIT, 1_000_000_000_000_000_000n);
});

test('params: SUPPLY_CAP is 21e9 credits, and emission never passes it', () => {
  assert.equal(SUPPLY_CAP, 21_000_000_000n * 10n ** 18n);
  assert.equal(emissionAt(1, SUPPLY_CAP - 1n), 1n, 'the last base unit');
  assert.equal(emissionAt(1, SUPPLY_CAP), 0n);
});

test('params: emission is 1,000 credits a block, halving every 210,000 blocks', () => {
  assert.equal(INITIAL_EMISSION, 1_000n * 10n ** 18n);
  assert.equal(HALVING_BLOCKS, 210_000);
  assert.equal(emissionAt(0, 0n), 0n, 'genesis mints nothing');
  assert.equal(emissionAt(1, 0n), 1_000n * 10n ** 18n);
  assert.equal(emissionAt(210_000, 0n), 1_000n * 10n ** 18n, 'the last block of the first era');
  assert.equal(emissionAt(210_001, 0n), 500n * 10n ** 18n, 'the first of the second');
  assert.equal(emissionAt(420_001, 0n), 250n * 10n ** 18n);
});

test('params: the main network targets 10 s blocks', () => {
  assert.equal(MAINNET.blockIntervalMs, 10_000);
  assert.equal(MAINNET.network, 'mesh');
});

test('params: bids expire after 1,440 blocks', () => {
  assert.equal(EXPIRY_BLOCKS, 1_440);
});

test('params: at most 1,024 transactions a block', () => {
  assert.equal(MAX_TXS_PER_BLOCK, 1_024);
});

test('params: settlement burns 1.00 %, rounded down', () => {
  assert.equal(SETTLEMENT_BURN_BPS, 100n);
  assert.equal(burnOf(10_000n), 100n);
  assert.equal(burnOf(199n), 1n);
  assert.equal(burnOf(99n), 0n);
});

test('params: a heartbeat pays for 30 s', () => {
  assert.equal(HEARTBEAT_INTERVAL_SECS, 30);
});

test('params: a light node keeps the last 2,880 blocks; the history window is 259,200 blocks', () => {
  assert.equal(LIGHT_RETENTION_BLOCKS, 2_880);
  assert.equal(HISTORY_WINDOW_BLOCKS, 259_200);
});

test('params: a block may be ahead of local time by half an interval, never a whole one', () => {
  assert.equal(MAINNET.maxClockDriftMs, 5_000);
  for (const interval of [10, 11, 100, 1_000, 10_000, 3_600_000]) {
    const params = devnet(interval);
    assert.equal(params.maxClockDriftMs, Math.floor(interval / 2), String(interval));
    assert.isBelow(params.maxClockDriftMs, params.blockIntervalMs);
  }
});
