// The send form's check: what it refuses, with which message, and what it lets through.
import { assert } from 'chai';
import { CREDIT } from '../../core/encoding/amount.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { test } from '../../test/harness.ts';
import { checkSend, type SendContext } from './send-check.ts';

const self = new Uint8Array(32).fill(1);
const other = new Uint8Array(32).fill(2);
const context: SendContext = { self, free: 5n * CREDIT, resolveName: (name) => (name === 'alice' ? other : undefined) };

test('checkSend: a NodeId or a held name, and credits within the free balance, pass', () => {
  assert.deepEqual(checkSend(toHex(other).toUpperCase(), '1.5', context), { ok: true, to: other, amount: (15n * CREDIT) / 10n });
  assert.deepEqual(checkSend(' alice ', '5', context), { ok: true, to: other, amount: 5n * CREDIT });
});

test('checkSend: each bad field is named with a message', () => {
  const refused = (to: string, amount: string): { field: string; message: string } => {
    const check = checkSend(to, amount, context);
    if (check.ok) throw new Error(`${to} ${amount} passed`);
    return { field: check.field, message: check.message };
  };
  assert.deepInclude(refused('', '1'), { field: 'to' });
  assert.match(refused('bob', '1').message, /No one holds the name "bob"/);
  assert.match(refused('not a name', '1').message, /neither a NodeId/);
  assert.match(refused(toHex(self), '1').message, /own NodeId/);
  assert.match(refused('alice', '0').message, /more than 0/);
  assert.match(refused('alice', '5.000000000000000001').message, /more than the free balance of 5 credits/);
  for (const amount of ['', '-1', '1e3', '.5', '1,5', 'one']) assert.deepInclude(refused('alice', amount), { field: 'amount' }, amount);
});
