// The job machines without I/O: the transition tables of the payer and the host, what no sequence
// of events can do (leave a final state, change a paid cost, bill without a record), and the
// stored form read as the first form wrote it. Runs on Node, Deno and Chromium.
import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { type HostEvent, hostTransition } from './host-machine.ts';
import { type PayerEvent, payerTransition } from './payer-machine.ts';
import {
  decodeRecord,
  encodeRecord,
  type HostJobRecord,
  isFinal,
  type JobRecord,
  newHostRecord,
  newPayerRecord,
  type PayerJobRecord,
  statusOf,
} from './record.ts';
import { encodeSpec, specOf } from './spec.ts';
import type { Billing } from './types.ts';

const JOB = 'ab'.repeat(32);
const PAYER = 'aa'.repeat(32);
const HOST = 'bb'.repeat(32);
const OTHER = 'cc'.repeat(32);

function specHex(billing: Billing): string {
  const spec = specOf({ image: 'localhost/busybox', cmd: null, env: [], cpuCores: 1, memMb: 64, durationSecs: 60, gpus: 0, bid: 600n, billing });
  return toHex(encodeSpec(spec));
}

function payerRecord(billing: Billing = 'settle'): PayerJobRecord {
  return newPayerRecord({
    jobId: JOB,
    payer: PAYER,
    billing,
    spec: specHex(billing),
    bidTx: null,
    bid: '600',
    createdAt: 0,
    host: null,
    placeBy: 60_000,
    firstOfferMs: null,
  });
}

function hostRecord(billing: Billing = 'settle'): HostJobRecord {
  return newHostRecord({ jobId: JOB, payer: PAYER, host: HOST, billing, spec: specHex(billing), bidTx: null, bid: '600', createdAt: 0 });
}

const ended = { state: 'Ended', container_id: 'c1', started_ms: 1_000, finished_ms: 5_000, exit_code: 0, reason: null, cost: 40n } as const;

test('job machine, payer: an offered host takes the job, reports it running and ended, and the cost within what it earned is signed', () => {
  let r = payerRecord();
  r = payerTransition(r, { kind: 'offered', host: HOST, atMs: 10 }).record;
  assert.deepEqual([r.unanswered, r.firstOfferMs], [[HOST], 10]);
  const taken = payerTransition(r, { kind: 'taken', host: HOST });
  r = taken.record;
  assert.equal(r.host, HOST);
  assert.deepEqual(
    taken.effects.map((e) => e.kind),
    ['log', 'start-wait'],
  );
  const running = payerTransition(r, {
    kind: 'report',
    host: HOST,
    state: { state: 'Running', container_id: 'c1', started_ms: 1_000 },
    atMs: 20,
    lockOpen: true,
  });
  r = running.record;
  assert.equal(statusOf(r.state), 'running');
  assert.deepEqual(running.effects, [{ kind: 'answer', placedHere: true }]);
  const end = payerTransition(r, { kind: 'report', host: HOST, state: ended, atMs: 30, lockOpen: true });
  r = end.record;
  assert.equal(statusOf(r.state), 'awaiting_settlement');
  assert.deepEqual(
    end.effects.map((e) => e.kind),
    ['fetch-tail', 'weigh-cost', 'answer'],
  );
  assert.deepEqual(
    payerTransition(r, { kind: 'cost-asked', cost: 40n, most: 39n }).effects.map((e) => e.kind),
    ['log'],
    'more than it earned: not signed',
  );
  assert.deepEqual(payerTransition(r, { kind: 'cost-asked', cost: 40n, most: 40n }).effects, [{ kind: 'sign', cost: 40n }]);
  r = payerTransition(r, { kind: 'signed', cost: 40n, payerSig: new Uint8Array(64) }).record;
  assert.deepEqual(
    payerTransition(r, { kind: 'cost-asked', cost: 41n, most: 100n }).effects.map((e) => e.kind),
    ['log'],
    'one cost per job',
  );
  r = payerTransition(r, { kind: 'settle-mined', cost: 40n }).record;
  assert.deepEqual([statusOf(r.state), r.cost], ['settled', '40']);
});

test("job machine, payer: a host that is not the job's is told so; a job its host could not start fails with its words, and 0 is signed", () => {
  let r = payerTransition(payerRecord(), { kind: 'offered', host: HOST, atMs: 0 }).record;
  r = payerTransition(r, { kind: 'taken', host: HOST }).record;
  assert.deepEqual(payerTransition(r, { kind: 'report', host: OTHER, state: ended, atMs: 0, lockOpen: true }).effects, [{ kind: 'answer', placedHere: false }]);
  for (const billing of ['settle', 'heartbeat'] as const) {
    const notStarted = payerTransition(
      { ...r, billing },
      { kind: 'report', host: HOST, state: { state: 'NotStarted', reason: 'runc create failed: rlimit' }, atMs: 5_000, lockOpen: true },
    );
    assert.deepEqual([notStarted.record.host, statusOf(notStarted.record.state)], [HOST, 'failed: runc create failed: rlimit'], billing);
    assert.deepEqual(notStarted.record.refusals, [{ host: HOST, reason: 'runc create failed: rlimit', at: 5 }]);
    // Nothing ran: a settlement of 0 releases the bid the host accepted.
    assert.deepEqual(notStarted.effects, [
      { kind: 'sign', cost: 0n },
      { kind: 'answer', placedHere: true },
    ]);
  }
});

test('job machine, payer: a job cancelled while its offer was out, whose host accepted it first, is stopped there and paid', () => {
  let r = payerTransition(payerRecord(), { kind: 'offered', host: HOST, atMs: 0 }).record;
  r = payerTransition(r, { kind: 'cancel' }).record;
  assert.equal(statusOf(r.state), 'failed: cancelled by the payer before a host took it');
  const running = payerTransition(r, {
    kind: 'report',
    host: HOST,
    state: { state: 'Running', container_id: 'c1', started_ms: 1 },
    atMs: 0,
    lockOpen: true,
    acceptedBy: HOST,
  });
  assert.equal(running.record.host, HOST);
  assert.deepEqual(running.effects, [{ kind: 'stop-host' }, { kind: 'answer', placedHere: true }]);
  const end = payerTransition(running.record, {
    kind: 'report',
    host: HOST,
    state: { ...ended, reason: 'stopped by the payer' },
    atMs: 0,
    lockOpen: true,
    acceptedBy: HOST,
  });
  assert.deepEqual(
    end.effects.map((e) => e.kind),
    ['fetch-tail', 'weigh-cost', 'answer'],
    'what it ran is weighed, and signed within what it can have earned',
  );
  assert.deepEqual(
    payerTransition(r, { kind: 'report', host: HOST, state: { state: 'Running', container_id: 'c1', started_ms: 1 }, atMs: 0, lockOpen: true }).effects,
    [{ kind: 'answer', placedHere: false }],
    "without an acceptance on the chain, a cancelled job is no host's",
  );
});

test('job machine, payer: the chain gives the job to the host whose acceptance is in a block', () => {
  let r = payerTransition(payerRecord(), { kind: 'offered', host: OTHER, atMs: 0 }).record;
  r = payerTransition(r, { kind: 'offered', host: HOST, atMs: 0 }).record;
  r = payerTransition(r, { kind: 'taken', host: HOST }).record;
  // HOST lost the race to OTHER, whose answer to the offer was lost: the job is OTHER's, and nothing fails.
  const lost = payerTransition(r, {
    kind: 'report',
    host: HOST,
    state: { state: 'NotStarted', reason: 'another host accepted the job first' },
    atMs: 0,
    lockOpen: true,
    acceptedBy: OTHER,
  });
  assert.deepEqual([lost.record.host, statusOf(lost.record.state)], [OTHER, 'pending']);
  assert.deepEqual(lost.effects.at(-1), { kind: 'answer', placedHere: false });
  // Its report gets the job even when the payer had placed it with HOST.
  const running = payerTransition(r, {
    kind: 'report',
    host: OTHER,
    state: { state: 'Running', container_id: 'c1', started_ms: 1 },
    atMs: 0,
    lockOpen: true,
    acceptedBy: OTHER,
  });
  assert.deepEqual([running.record.host, statusOf(running.record.state)], [OTHER, 'running']);
  assert.deepEqual(running.effects.at(-1), { kind: 'answer', placedHere: true });
});

test('job machine, payer: a cancel before a host takes it fails the job; a host overdue to start it is passed over', () => {
  assert.equal(statusOf(payerTransition(payerRecord(), { kind: 'cancel' }).record.state), 'failed: cancelled by the payer before a host took it');
  let r = payerTransition(payerRecord(), { kind: 'offered', host: HOST, atMs: 0 }).record;
  r = payerTransition(r, { kind: 'taken', host: HOST }).record;
  assert.equal(payerTransition(r, { kind: 'cancel' }).record, r, 'placed: the host is asked to stop it instead');
  const overdue = payerTransition(r, { kind: 'start-overdue', host: HOST, atMs: 0 });
  assert.deepEqual([overdue.record.host, overdue.record.passedOver], [null, [HOST]]);
  assert.deepEqual(overdue.effects, [{ kind: 'place' }]);
});

test("job machine, host: started, beaten, asked to stop and exited, it reports each step; the payer's signature settles it once", () => {
  let r = hostRecord('heartbeat');
  const started = hostTransition(r, { kind: 'started', containerId: 'c1', atMs: 1_000 });
  r = started.record;
  assert.deepEqual(
    started.effects.map((e) => e.kind),
    ['log', 'watch', 'report'],
  );
  const beat = hostTransition(r, { kind: 'beat', atMs: 31_000, epoch: 1, last: false });
  r = beat.record;
  assert.deepEqual(beat.effects, [{ kind: 'heartbeat', epoch: 1, last: false, previousBeatMs: null }]);
  const stop = hostTransition(r, { kind: 'stop', cause: 'payer' });
  r = stop.record;
  assert.deepEqual(stop.effects, [{ kind: 'kill', containerId: 'c1', graceSecs: 5 }]);
  assert.equal(hostTransition(r, { kind: 'beat', atMs: 61_000, epoch: 2, last: false }).record, r, 'no beat once a stop is asked');
  assert.equal(hostTransition(r, { kind: 'stop', cause: 'duration' }).record.stopCause, 'payer', 'the first cause is kept');
  const exit = hostTransition(r, { kind: 'exited', finishedMs: 40_000, exitCode: 143, oomKilled: false, outputTail: null, askedCost: 9n, lockOpen: true });
  r = exit.record;
  assert.equal(statusOf(r.state), 'failed: stopped by the payer');
  assert.deepEqual(
    exit.effects.map((e) => e.kind),
    ['log', 'remove', 'report'],
  );
  const answered = hostTransition(r, { kind: 'answered', tag: 'Ended', placedHere: true, payerSig: new Uint8Array(64) });
  assert.deepEqual(answered.effects, [{ kind: 'settle', cost: 9n, payerSig: new Uint8Array(64) }]);
  r = hostTransition(answered.record, { kind: 'settle-signed', cost: 9n, payerSig: new Uint8Array(64) }).record;
  r = hostTransition(r, { kind: 'settle-sent', txId: 'dd'.repeat(32) }).record;
  assert.deepEqual(hostTransition(r, { kind: 'answered', tag: 'Ended', placedHere: true, payerSig: new Uint8Array(64) }).effects, [], 'sent once');
  r = hostTransition(r, { kind: 'settle-mined', cost: 9n }).record;
  assert.deepEqual([statusOf(r.state), r.cost], ['failed: stopped by the payer', '9'], 'a failed job keeps saying why');
});

test('job machine, host: a stop asked before the container runs is carried out when it starts; an expired bid stops it', () => {
  let r = hostTransition(hostRecord(), { kind: 'stop', cause: 'payer' }).record;
  assert.equal(r.stopCause, 'payer');
  assert.deepEqual(hostTransition(r, { kind: 'started', containerId: 'c1', atMs: 0 }).effects.at(-1), { kind: 'kill', containerId: 'c1', graceSecs: 5 });
  r = hostTransition(hostRecord(), { kind: 'started', containerId: 'c1', atMs: 0 }).record;
  assert.deepEqual(hostTransition(r, { kind: 'bid-expired' }).effects, [{ kind: 'stop', cause: 'expired' }]);
  const oom = hostTransition(r, { kind: 'exited', finishedMs: 1, exitCode: null, oomKilled: true, outputTail: [], askedCost: 0n, lockOpen: true }).record;
  assert.equal(statusOf(oom.state), 'failed: memory limit of 64 MiB hit (exit 137)');
  const ran = hostTransition(r, { kind: 'exited', finishedMs: 1, exitCode: 0, oomKilled: false, outputTail: [], askedCost: 0n, lockOpen: true }).record;
  assert.equal(statusOf(hostTransition(ran, { kind: 'bid-expired' }).record.state), 'expired');
  assert.equal(statusOf(hostTransition(hostRecord(), { kind: 'lost', atMs: 5 }).record.state), 'failed: the container was lost while the host was down');
});

test('job machine: an ended heartbeat-billed job whose heartbeats spent the lock is settled by them', () => {
  let r = hostTransition(hostRecord('heartbeat'), { kind: 'started', containerId: 'c1', atMs: 0 }).record;
  r = hostTransition(r, { kind: 'heartbeat-mined', amount: 30n }).record;
  r = hostTransition(r, { kind: 'exited', finishedMs: 1, exitCode: 0, oomKilled: false, outputTail: [], askedCost: 0n, lockOpen: false }).record;
  assert.deepEqual([statusOf(r.state), r.cost, r.heartbeats], ['settled', '30', { count: 1, paid: '30' }]);
});

// ---- properties ----

const hostArb = fc.constantFrom(HOST, OTHER);
const reasonArb = fc.constantFrom('no image', 'out of memory');
const reportStateArb = fc.oneof(
  fc.constant({ state: 'Running', container_id: 'c1', started_ms: 1 } as const),
  fc.constant(ended),
  fc.record({ state: fc.constant('NotStarted' as const), reason: reasonArb }),
  fc.bigInt({ min: 0n, max: 100n }).map((cost) => ({ ...ended, cost, reason: 'stopped' })),
);
const chainArb = fc.oneof(
  fc.bigInt({ min: 1n, max: 50n }).map((amount) => ({ kind: 'heartbeat-mined', amount }) as const),
  fc.bigInt({ min: 0n, max: 50n }).map((cost) => ({ kind: 'settle-mined', cost }) as const),
  fc.boolean().map((open) => ({ kind: 'lock-checked', open }) as const),
);
const payerEventArb: fc.Arbitrary<PayerEvent> = fc.oneof(
  chainArb,
  hostArb.map((host) => ({ kind: 'offered', host, atMs: 1 }) as const),
  fc.record({ host: hostArb, answered: fc.boolean() }).map(({ host, answered }) => ({ kind: 'refused', host, reasons: ['full'], atMs: 2, answered }) as const),
  hostArb.map((host) => ({ kind: 'taken', host }) as const),
  hostArb.map((host) => ({ kind: 'start-overdue', host, atMs: 3 }) as const),
  fc.constant({ kind: 'cancel' } as const),
  hostArb.map((host) => ({ kind: 'reserved-refused', host, reasons: ['full'], atMs: 4 }) as const),
  reasonArb.map((reason) => ({ kind: 'give-up', reason }) as const),
  fc
    .record({ host: hostArb, state: reportStateArb, lockOpen: fc.boolean(), acceptedBy: fc.option(hostArb) })
    .map((e) => ({ kind: 'report', atMs: 5, ...e }) as const),
  fc.record({ cost: fc.bigInt({ min: 0n, max: 100n }), most: fc.bigInt({ min: 0n, max: 100n }) }).map((e) => ({ kind: 'cost-asked', ...e }) as const),
  fc.constant({ kind: 'bid-expired' } as const),
);
const hostEventArb: fc.Arbitrary<HostEvent> = fc.oneof(
  chainArb,
  fc.constant({ kind: 'started', containerId: 'c1', atMs: 1 } as const),
  reasonArb.map((reason) => ({ kind: 'start-failed', reason }) as const),
  fc.constantFrom('duration', 'payer', 'dry', 'elsewhere').map((cause) => ({ kind: 'stop', cause }) as const),
  fc
    .record({ oomKilled: fc.boolean(), askedCost: fc.bigInt({ min: 0n, max: 100n }), lockOpen: fc.boolean() })
    .map((e) => ({ kind: 'exited', finishedMs: 9, exitCode: 0, outputTail: null, ...e }) as const),
  fc.boolean().map((last) => ({ kind: 'beat', atMs: 7, epoch: 1, last }) as const),
  fc
    .record({ placedHere: fc.boolean(), signed: fc.boolean() })
    .map(({ placedHere, signed }) => ({ kind: 'answered', tag: 'Ended', placedHere, payerSig: signed ? new Uint8Array(64) : null }) as const),
  fc.bigInt({ min: 0n, max: 100n }).map((cost) => ({ kind: 'settle-signed', cost, payerSig: new Uint8Array(64) }) as const),
  fc.constant({ kind: 'settle-sent', txId: 'ee'.repeat(32) } as const),
  fc.constant({ kind: 'bid-expired' } as const),
  fc.constant({ kind: 'restarted' } as const),
  fc.boolean().map((running) => ({ kind: 'adopted', containerId: 'c2', startedMs: 2, running }) as const),
  fc.constant({ kind: 'lost', atMs: 8 } as const),
);

/** Checks, after every event of a run, that a final state stays as it was and a paid cost never changes. */
function holdsOver<R extends JobRecord, E>(start: R, events: readonly E[], transition: (r: R, e: E) => { record: R }): void {
  let record = start;
  for (const event of events) {
    const next = transition(record, event).record;
    if (isFinal(record.state)) assert.deepEqual(next.state, record.state, 'nothing leaves a final state');
    if (record.cost !== null) assert.equal(next.cost, record.cost, 'a paid cost never changes');
    if (record.finishedMs !== null) assert.equal(next.finishedMs, record.finishedMs, 'a job ends once');
    record = next;
  }
}

test('job machine, payer (property): no sequence of events leaves a final state or changes a paid cost', () => {
  fc.assert(
    fc.property(fc.constantFrom<Billing>('settle', 'heartbeat'), fc.array(payerEventArb, { maxLength: 40 }), (billing, events) => {
      holdsOver(payerRecord(billing), events, payerTransition);
    }),
    { numRuns: 300 },
  );
});

test('job machine, host (property): no sequence of events leaves a final state, ends a job twice or settles a paid job', () => {
  fc.assert(
    fc.property(fc.constantFrom<Billing>('settle', 'heartbeat'), fc.array(hostEventArb, { maxLength: 40 }), (billing, events) => {
      let record = hostRecord(billing);
      for (const event of events) {
        const { record: next, effects } = hostTransition(record, event);
        if (record.cost !== null)
          assert.notInclude(
            effects.map((e) => e.kind),
            'submit-settle',
            'a paid job is not settled again',
          );
        if (record.state.kind !== 'running' || record.stopCause !== null)
          assert.notInclude(
            effects.map((e) => e.kind),
            'heartbeat',
            'billed only while it runs unstopped',
          );
        record = next;
      }
      holdsOver(hostRecord(billing), events, hostTransition);
    }),
    { numRuns: 300 },
  );
});

// ---- the stored form ----

test('job record: the stored form reads back as it was, and records written in the first form (status and reason) read into the state', () => {
  const payer = payerTransition(payerRecord(), { kind: 'give-up', reason: 'no host' }).record;
  assert.deepEqual(decodeRecord(encodeRecord(payer)), payer);
  // Exactly as the code before the state machine wrote them.
  const first = {
    jobId: JOB,
    role: 'host',
    payer: PAYER,
    host: HOST,
    unanswered: [],
    status: 'failed: killed at its duration of 60 s',
    billing: 'settle',
    spec: specHex('settle'),
    bidTx: 'ff',
    bid: '600',
    createdAt: 7,
    placeBy: 0,
    containerId: 'c1',
    startedMs: 1_000,
    finishedMs: 61_000,
    exitCode: 137,
    reason: 'killed at its duration of 60 s',
    askedCost: '600',
    cost: null,
    payerSig: null,
    settleTx: null,
    refusals: [],
    heartbeats: { count: 0, paid: '0' },
    lastBeatMs: null,
    stopCause: 'duration',
    reportedState: 'Ended',
    outputTail: [{ seq: 1, stream: 'stdout', text: 'hi', at: 2 }],
  };
  const host = decodeRecord(JSON.stringify(first));
  assert.equal(host.role, 'host');
  assert.deepInclude(host, {
    state: { kind: 'failed', reason: 'killed at its duration of 60 s' },
    containerId: 'c1',
    askedCost: '600',
    stopCause: 'duration',
    reportedState: 'Ended',
  });
  assert.deepEqual(decodeRecord(encodeRecord(host)), host);
  const waiting = decodeRecord(
    JSON.stringify({ ...first, role: 'payer', host: null, unanswered: [HOST], status: 'pending', reason: null, placeBy: 9, firstOfferMs: 3 }),
  );
  assert.deepInclude(waiting, { role: 'payer', state: { kind: 'pending' }, unanswered: [HOST], passedOver: [], firstOfferMs: 3, placeBy: 9 });
  for (const status of ['running', 'awaiting_settlement', 'settled', 'expired'] as const) {
    assert.equal(statusOf(decodeRecord(JSON.stringify({ ...first, status, reason: null })).state), status);
  }
});
