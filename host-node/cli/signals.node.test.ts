/** `mesh signals`' lines for people: the burn behind a signal in credits, never base units. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SignalObject } from '../../core/signal/types.ts';
import { formatSignal } from './signals.ts';

const SIGNAL: SignalObject = {
  id: 'aa'.repeat(32),
  from: 'bb'.repeat(32),
  to: 'broadcast',
  nonce: 3,
  capabilities: [{ name: 'gpu', version: 1 }],
  payload_hex: '0001',
};

test('a signal is one line; its burn is in credits', () => {
  assert.equal(formatSignal(SIGNAL), `${'aa'.repeat(8)}  ${'bb'.repeat(8)} → broadcast  nonce 3  gpu=1  2 B\n`);
  const burnt = { ...SIGNAL, burn_proof: { tx_id: 'dd'.repeat(32), amount: '10000000000000000', block_height: 7, block_hash: 'ee'.repeat(32) } };
  assert.match(formatSignal(burnt), /  burn 0\.01 credits\n$/);
});
