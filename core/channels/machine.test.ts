// The channel machines without I/O: each role's table, and that no sequence of events moves a
// channel out of closed or expired, or lowers the receipt it holds. Runs on Node, Deno and Chromium.
import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../../test/harness.ts';
import { type ChannelRecord, type HostChannelRecord, newChannelRecord, type PayerChannelRecord } from './book.ts';
import { applyStep, type ChannelFact, type HostChannelEvent, hostTransition, type PayerChannelEvent, payerTransition } from './machine.ts';
import type { ChannelStatus } from './types.ts';

function start(role: 'payer' | 'host', status: ChannelStatus = 'opening'): ChannelRecord {
  return newChannelRecord({
    channelId: 'ab'.repeat(32),
    role,
    payer: 'aa'.repeat(32),
    host: 'bb'.repeat(32),
    capacity: '100',
    expiryHeight: 50,
    status,
    createdMs: 0,
  });
}
const payer = (status?: ChannelStatus): PayerChannelRecord => start('payer', status) as PayerChannelRecord;
const host = (status?: ChannelStatus): HostChannelRecord => start('host', status) as HostChannelRecord;
const SIG = 'cd'.repeat(64);

test("channel machine, payer: a receipt signed before the open is mined waits; once open it is delivered, and the host's answer is kept", () => {
  let r = payer();
  const early = payerTransition(r, { kind: 'signed', cumulative: 5n, payerSig: SIG });
  assert.deepEqual([early.record.cumulative, early.effects], ['5', []]);
  r = payerTransition(early.record, { kind: 'open-mined', height: 3 }).record;
  assert.deepInclude(r, { status: 'open', openHeight: 3 });
  assert.deepEqual(payerTransition(r, { kind: 'signed', cumulative: 7n, payerSig: SIG }).effects, [{ kind: 'deliver' }]);
  assert.equal(payerTransition(r, { kind: 'signed', cumulative: 4n, payerSig: SIG }).record.cumulative, '5', 'the highest signed is kept');
  assert.equal(payerTransition(r, { kind: 'delivered', best: 5n }).record.delivered, '5');
});

test('channel machine: an ending is on record before it is pooled, goes back when refused or dropped, and a mined end is final', () => {
  const r = host('open');
  const ending = hostTransition(r, { kind: 'ending', txId: 'ee'.repeat(32) });
  assert.deepInclude(ending.record, { status: 'closing', endTx: 'ee'.repeat(32) });
  assert.deepEqual(ending.effects, [{ kind: 'pool' }]);
  assert.deepInclude(hostTransition(ending.record, { kind: 'ending-refused', status: 'open', endTx: null }).record, { status: 'open', endTx: null });
  assert.deepInclude(hostTransition(ending.record, { kind: 'end-dropped' }).record, { status: 'open', endTx: null });
  const closed = hostTransition(ending.record, { kind: 'end-mined', txId: 'ee'.repeat(32), settled: { cumulative: '5', burned: '0' } }).record;
  assert.deepInclude(closed, { status: 'closed', settled: { cumulative: '5', burned: '0' } });
  assert.equal(hostTransition(closed, { kind: 'on-chain', openHeight: 3, endPooled: false }).record, closed);
});

test('channel machine: applying a step keeps the record the book holds', () => {
  const r = host('open');
  const effects = applyStep(r, hostTransition(r, { kind: 'receipt', cumulative: 9n, payerSig: SIG }));
  assert.deepEqual(effects, []);
  assert.deepInclude(r, { cumulative: '9', payerSig: SIG });
});

const statusArb = fc.constantFrom<ChannelStatus>('opening', 'open', 'closing', 'closed', 'expired');
const factArb: fc.Arbitrary<ChannelFact> = fc.oneof(
  fc.constant({ kind: 'open-mined', height: 3 } as const),
  fc.boolean().map((close) => ({ kind: 'end-mined', txId: 'ee'.repeat(32), settled: close ? { cumulative: '5', burned: '0' } : null }) as const),
  fc.constant({ kind: 'ending', txId: 'ee'.repeat(32) } as const),
  statusArb.map((status) => ({ kind: 'ending-refused', status, endTx: null }) as const),
  fc.constant({ kind: 'end-dropped' } as const),
  fc.boolean().map((endPooled) => ({ kind: 'on-chain', openHeight: 3, endPooled }) as const),
  fc.constant({ kind: 'not-mined' } as const),
  fc.constant({ kind: 'mined-at', height: 4 } as const),
);
const cumulativeArb = fc.bigInt({ min: 0n, max: 100n });
const payerEventArb: fc.Arbitrary<PayerChannelEvent> = fc.oneof(
  factArb,
  cumulativeArb.map((cumulative) => ({ kind: 'signed', cumulative, payerSig: SIG }) as const),
  cumulativeArb.map((best) => ({ kind: 'delivered', best }) as const),
);
const hostEventArb: fc.Arbitrary<HostChannelEvent> = fc.oneof(
  factArb,
  cumulativeArb.map((cumulative) => ({ kind: 'receipt', cumulative, payerSig: SIG }) as const),
);

function holds(before: ChannelRecord, after: ChannelRecord): void {
  if (before.status === 'closed' || before.status === 'expired') {
    const { status, endTx, settled, cumulative, payerSig } = after;
    assert.deepEqual(
      { status, endTx, settled, cumulative, payerSig },
      { status: before.status, endTx: before.endTx, settled: before.settled, cumulative: before.cumulative, payerSig: before.payerSig },
      'nothing moves a final channel',
    );
  }
  if (before.payerSig !== null) assert.isAtLeast(Number(after.cumulative), Number(before.cumulative), 'a receipt is never lowered');
}

test('channel machine (property): no sequence of events leaves closed or expired, or lowers the receipt held, on either side', () => {
  fc.assert(
    fc.property(statusArb, fc.array(payerEventArb, { maxLength: 30 }), fc.array(hostEventArb, { maxLength: 30 }), (status, payerEvents, hostEvents) => {
      let p = payer(status);
      for (const event of payerEvents) {
        const next = payerTransition(p, event).record;
        holds(p, next);
        p = next;
      }
      let h = host(status);
      for (const event of hostEvents) {
        const next = hostTransition(h, event).record;
        holds(h, next);
        h = next;
      }
    }),
    { numRuns: 300 },
  );
});
