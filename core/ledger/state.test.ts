import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { ALICE, BOB, CAROL, snapshot } from './fixtures.test-util.ts';
import { EMPTY_ROOT } from './merkle.ts';
import { type Account, freeBalance, LedgerState, lockedBond, TABLE, weightOf } from './state.ts';

const RUNS = { numRuns: 100 };

const k = (n: number): Uint8Array => Uint8Array.of(0x01, n);
const v = (n: number): Uint8Array => Uint8Array.of(0xee, n);

// An account never written reads as all zeros.
const ZERO: Account = new LedgerState().account(new Uint8Array(32));

type Op = { put: number; value: number } | { del: number };
const opArb: fc.Arbitrary<Op> = fc.oneof(fc.record({ put: fc.nat(7), value: fc.nat(3) }), fc.record({ del: fc.nat(7) }));
const opsArb = fc.array(opArb, { maxLength: 25 });

function run(state: LedgerState, ops: readonly Op[]): void {
  for (const op of ops) {
    if ('put' in op) state.put(k(op.put), v(op.value));
    else state.delete(k(op.del));
  }
}

test('state: revert to a mark restores every value and the state root exactly', () => {
  fc.assert(
    fc.property(opsArb, opsArb, opsArb, fc.boolean(), (first, second, third, readRoot) => {
      const state = new LedgerState();
      run(state, first);
      const atOuter = snapshot(state);
      const outer = state.mark();
      run(state, second);
      const atInner = snapshot(state);
      const inner = state.mark();
      run(state, third);
      if (readRoot) state.stateRoot();
      state.revert(inner);
      assert.deepEqual(snapshot(state), atInner);
      state.revert(outer);
      assert.deepEqual(snapshot(state), atOuter);
    }),
    RUNS,
  );
});

test('state: changesSince lists net changes, one per key, in key order', () => {
  const state = LedgerState.fromEntries([
    [k(1), v(1)],
    [k(2), v(2)],
    [k(3), v(3)],
  ]);
  const mark = state.mark();
  state.put(k(3), v(9)); // changed twice: one change, first before and last after
  state.put(k(3), v(8));
  state.put(k(5), v(5)); // added then deleted: no change
  state.delete(k(5));
  state.delete(k(2)); // deleted
  state.put(k(4), v(4)); // added
  state.put(k(1), v(7)); // changed and written back with equal bytes: no change
  state.put(k(1), v(1));
  state.delete(k(6)); // absent: nothing
  const changes = state.changesSince(mark).map((c) => [toHex(c.key), c.before && toHex(c.before), c.after && toHex(c.after)]);
  assert.deepEqual(changes, [
    [toHex(k(2)), toHex(v(2)), undefined],
    [toHex(k(3)), toHex(v(3)), toHex(v(8))],
    [toHex(k(4)), undefined, toHex(v(4))],
  ]);
  assert.deepEqual(state.changesSince(state.mark()), []);
});

test('state: applyChanges undoes and redoes a change set to the identical root', () => {
  fc.assert(
    fc.property(opsArb, opsArb, (first, second) => {
      const state = new LedgerState();
      run(state, first);
      const before = snapshot(state);
      const copy = LedgerState.fromEntries(state.entries());
      const mark = state.mark();
      run(state, second);
      const after = snapshot(state);
      const changes = state.changesSince(mark);
      state.applyChanges(changes, 'undo');
      assert.deepEqual(snapshot(state), before, 'undo');
      state.applyChanges(changes, 'redo');
      assert.deepEqual(snapshot(state), after, 'redo');
      copy.applyChanges(changes, 'redo');
      assert.deepEqual(snapshot(copy), after, 'redo on a copy of the parent state');
    }),
    RUNS,
  );
});

test('state: the root depends on the entries only, not on the order or history that produced them', () => {
  fc.assert(
    fc.property(opsArb, (ops) => {
      const state = new LedgerState();
      run(state, ops.slice(0, ops.length >> 1));
      state.stateRoot(); // a root read half-way must not stick
      run(state, ops.slice(ops.length >> 1));
      const copy = LedgerState.fromEntries(state.entries().reverse());
      assert.deepEqual(snapshot(copy), snapshot(state));
      assert.equal(copy.size, state.size);
    }),
    RUNS,
  );
  assert.equal(toHex(new LedgerState().stateRoot()), toHex(EMPTY_ROOT));
});

test('state: a state from entries starts with an empty journal', () => {
  const state = LedgerState.fromEntries([[k(1), v(1)]]);
  assert.equal(state.mark(), 0);
  state.revert(0);
  assert.equal(toHex(state.get(k(1))!), toHex(v(1)));
});

test('state: commit forgets the journal, so revert can no longer undo what was committed', () => {
  const state = new LedgerState();
  state.put(k(1), v(1));
  const mark = state.mark();
  state.put(k(2), v(2));
  state.commit(mark);
  assert.equal(state.mark(), mark);
  state.revert(mark);
  assert.equal(toHex(state.get(k(2))!), toHex(v(2)), 'the committed write stays');
  state.commit(0);
  state.revert(0);
  assert.equal(state.size, 2);
  assert.deepEqual(state.changesSince(0), []);
});

test('state: the weight index follows min(bond, work_earned) through writes, revert and copies', () => {
  const state = new LedgerState();
  const a = ALICE.publicKey;
  const b = BOB.publicKey;
  const id = (key: Uint8Array): string => toHex(key);
  const mark = state.mark();
  state.setAccount(a, { ...ZERO, balance: 100n, bond: 50n, work_earned: 20n });
  assert.deepEqual(state.weights(), [[id(a), 20n]]);
  assert.equal(toHex(state.get(Uint8Array.of(TABLE.weight, ...a))!), toHex(new Uint8Array(16).fill(20, 15)));
  state.setAccount(a, { ...state.account(a), work_earned: 80n });
  assert.deepEqual(state.weights(), [[id(a), 50n]]);
  state.setAccount(b, { ...ZERO, balance: 10n, bond: 10n, work_earned: 10n });
  assert.deepEqual(
    state.weights(),
    [
      [id(a), 50n],
      [id(b), 10n],
    ].sort((x, y) => (x[0]! < y[0]! ? -1 : 1)) as [string, bigint][],
    'ascending by id',
  );
  const inner = state.mark();
  state.setAccount(a, { ...state.account(a), bond: 0n });
  assert.deepEqual(state.weights(), [[id(b), 10n]], 'zero weight leaves the index');
  assert.isUndefined(state.get(Uint8Array.of(TABLE.weight, ...a)));
  state.setAccount(a, { ...state.account(a), nonce: 1 });
  assert.deepEqual(state.weights(), [[id(b), 10n]], 'a write that keeps weight 0 adds nothing');
  assert.deepEqual(LedgerState.fromEntries(state.entries()).weights(), state.weights());
  state.revert(inner);
  assert.equal(state.weights().find(([x]) => x === id(a))?.[1], 50n);
  state.revert(mark);
  assert.deepEqual(state.weights(), []);
});

test('state: the names of a holder follow the name table through claims, transfers of a lapsed name, revert and copies', () => {
  const state = new LedgerState();
  const a = ALICE.publicKey;
  const b = BOB.publicKey;
  const names = (owner: Uint8Array, s: LedgerState = state): string[] => s.namesOf(owner).map(([name]) => name);
  assert.deepEqual(names(a), []);
  const mark = state.mark();
  state.setName('zeta', { owner: a, expires: 10 });
  state.setName('alpha', { owner: a, expires: 20 });
  state.setName('bob', { owner: b, expires: 30 });
  assert.deepEqual(names(a), ['alpha', 'zeta'], 'sorted by name');
  assert.deepEqual(state.namesOf(b), [['bob', { owner: b, expires: 30 }]]);
  const inner = state.mark();
  // A lapsed name claimed by another holder moves to it.
  state.setName('zeta', { owner: b, expires: 40 });
  assert.deepEqual(names(a), ['alpha']);
  assert.deepEqual(names(b), ['bob', 'zeta']);
  assert.deepEqual(names(a, LedgerState.fromEntries(state.entries())), ['alpha'], 'a state rebuilt from its entries has the same index');
  assert.deepEqual(names(b, LedgerState.fromEntries(state.entries())), ['bob', 'zeta']);
  state.revert(inner);
  assert.deepEqual(names(a), ['alpha', 'zeta']);
  assert.deepEqual(names(b), ['bob']);
  state.revert(mark);
  assert.deepEqual([names(a), names(b)], [[], []]);
});

test('state: typed tables read back what was written and default sensibly', () => {
  const state = new LedgerState();
  const [a, b, c] = [ALICE.publicKey, BOB.publicKey, CAROL.publicKey];
  assert.isTrue(
    Object.values(state.account(a)).every((x) => x === 0 || x === 0n),
    'a fresh account is all zeros',
  );
  assert.deepEqual(state.supply(), { emitted: 0n, burned: 0n });
  assert.isUndefined(state.job(c));
  assert.isUndefined(state.channel(c));
  assert.isUndefined(state.name('x'));
  assert.isUndefined(state.epoch(a, b));
  assert.isUndefined(state.trust(a, b));
  assert.isUndefined(state.revoked(a, c));
  assert.isUndefined(state.slashed(a, 5));

  const job = { payer: a, host: null, bid: 9n, locked: 9n, rate: 3n, billing: 1, bid_height: 4, active_height: 6, accepted: true };
  const channel = { payer: a, host: b, capacity: 7n, expiry_height: 99, open_height: 3 };
  state.setAccount(a, { ...ZERO, balance: -5n, nonce: 3 });
  state.setSupply({ emitted: 10n, burned: 2n });
  state.setJob(c, job);
  state.setChannel(c, channel);
  state.setName('my-name', { owner: b, expires: 77 });
  state.setEpoch(a, b, 12);
  state.setTrust(a, b, 8);
  state.setRevoked(a, c, 9);
  state.setSlashed(a, 5, 11);
  assert.equal(state.account(a).balance, -5n, 'balances are signed');
  assert.deepEqual(state.supply(), { emitted: 10n, burned: 2n });
  assert.deepEqual(state.job(c), job);
  assert.deepEqual(state.channel(c), channel);
  assert.deepEqual(state.name('my-name'), { owner: b, expires: 77 });
  assert.equal(state.epoch(a, b), 12);
  assert.isUndefined(state.epoch(b, a), 'epochs are per ordered (cell, host) pair');
  assert.equal(state.trust(a, b), 8);
  assert.equal(state.revoked(a, c), 9);
  assert.equal(state.slashed(a, 5), 11);
  assert.isUndefined(state.slashed(a, 6));

  state.setJob(c, undefined);
  state.setChannel(c, undefined);
  state.setTrust(a, b, undefined);
  assert.isUndefined(state.job(c));
  assert.isUndefined(state.channel(c));
  assert.isUndefined(state.trust(a, b));
});

test('state: free balance is balance minus bid, channel and bond locks; an unbonding stays locked until release', () => {
  const account: Account = {
    ...ZERO,
    balance: 100n,
    locked_bids: 10n,
    locked_channels: 20n,
    bond: 30n,
    unbonding: 15n,
    unbond_release: 50,
  };
  assert.equal(lockedBond(account, 49), 45n);
  assert.equal(freeBalance(account, 49), 25n);
  assert.equal(lockedBond(account, 50), 30n, 'released at its release height');
  assert.equal(freeBalance(account, 50), 40n);
  assert.equal(freeBalance({ ...account, balance: 50n }, 49), 0n, 'never below zero');
  assert.equal(weightOf({ ...account, work_earned: 12n }), 12n);
  assert.equal(weightOf({ ...account, work_earned: 99n }), 30n, 'unbonding carries no weight');
});

test('state: a value is held as a copy, so bytes the caller changes and puts back are hashed anew', () => {
  const state = new LedgerState();
  const k = Uint8Array.of(0x63, 0);
  const value = Uint8Array.of(1);
  state.put(k, value);
  state.stateRoot();
  value[0] = 2;
  assert.equal(state.get(k)![0], 1, "the held bytes did not change with the caller's");
  state.put(k, value);
  assert.equal(toHex(state.stateRoot()), toHex(LedgerState.fromEntries(state.entries()).stateRoot()));
  assert.equal(state.get(k)![0], 2);
});

test('state: an account reads as the bytes the state holds now, through writes of raw bytes, undo and redo', () => {
  fc.assert(
    fc.property(fc.array(fc.bigInt({ min: 0n, max: 2n ** 70n }), { minLength: 1, maxLength: 6 }), fc.boolean(), (balances, rootBetween) => {
      const state = new LedgerState();
      const id = ALICE.publicKey;
      const key = Uint8Array.of(TABLE.account, ...id);
      const encoded = (balance: bigint): Uint8Array => {
        // Another state's encoding of the same account: the bytes a snapshot or a peer would bring.
        const other = new LedgerState();
        other.setAccount(id, { ...ZERO, balance });
        return other.get(key)!;
      };
      const base = state.mark();
      balances.forEach((balance, i) => {
        // Alternate the two ways an account changes: the typed setter and a raw write of its bytes.
        if (i % 2 === 0) state.setAccount(id, { ...ZERO, balance, nonce: i });
        else state.put(key, encoded(balance));
        if (rootBetween) state.stateRoot();
        assert.equal(state.account(id).balance, balance);
      });
      const last = balances[balances.length - 1]!;
      const changes = state.changesSince(base);
      state.revert(base);
      assert.equal(state.account(id).balance, 0n, 'undone');
      state.applyChanges(changes, 'redo');
      assert.equal(state.account(id).balance, last, 'redone');
      state.applyChanges(changes, 'undo');
      assert.equal(state.account(id).balance, 0n, 'undone by the change set');
    }),
    RUNS,
  );
});

// ---- concealed changes ---------------------------------------------------------------------

const id = (n: number): Uint8Array => new Uint8Array(32).fill(n);
const acct = (balance: bigint, bond = 0n, work = 0n): Account => ({ ...ZERO, balance, bond, work_earned: work });

// A state with an entry in every table; `block` writes more on top, as a block would.
function base(): LedgerState {
  const state = new LedgerState();
  state.setAccount(id(1), acct(100n, 5n, 7n));
  state.setAccount(id(2), acct(50n));
  state.setName('alpha', { owner: id(1), expires: 90 });
  state.setJob(id(3), { payer: id(1), host: null, bid: 4n, locked: 4n, rate: 0n, billing: 0, bid_height: 1, active_height: 0, accepted: false });
  state.setChannel(id(4), { payer: id(1), host: id(2), capacity: 9n, expiry_height: 80, open_height: 2 });
  state.setEpoch(id(5), id(2), 3);
  state.setTrust(id(1), id(2), 4);
  state.setRevoked(id(1), id(6), 5);
  state.setSlashed(id(2), 6, 7);
  state.setSupply({ emitted: 150n, burned: 0n });
  state.setProducerSeed(id(8));
  state.put(k(1), v(1));
  state.stateRoot();
  state.commit(0);
  return state;
}

function block(state: LedgerState): void {
  state.setAccount(id(1), acct(60n, 9n, 9n));
  state.setAccount(id(9), acct(40n, 1n, 1n));
  state.setName('alpha', { owner: id(2), expires: 95 });
  state.setName('beta', { owner: id(1), expires: 99 });
  state.setJob(id(3), undefined);
  state.setChannel(id(4), { payer: id(1), host: id(2), capacity: 12n, expiry_height: 80, open_height: 2 });
  state.setEpoch(id(5), id(2), 4);
  state.setTrust(id(1), id(2), undefined);
  state.setRevoked(id(2), id(6), 6);
  state.setSlashed(id(1), 7, 8);
  state.setSupply({ emitted: 190n, burned: 3n });
  state.setProducerSeed(id(10));
  state.delete(k(1));
  state.put(k(2), v(2));
}

// Every public member of LedgerState but the three that conceal, with a call to make: each must
// act on the state as it was before the concealed changes.
const CALLS: Record<string, (s: LedgerState) => unknown> = {
  size: (s) => s.size,
  get: (s) => s.get(k(1)),
  put: (s) => s.put(k(3), v(3)),
  delete: (s) => s.delete(k(1)),
  mark: (s) => s.mark(),
  revert: (s) => s.revert(s.mark()),
  changesSince: (s) => s.changesSince(0),
  commit: (s) => s.commit(s.mark()),
  applyChanges: (s) => s.applyChanges([{ key: k(4), before: undefined, after: v(4) }], 'redo'),
  stateRoot: (s) => toHex(s.stateRoot()),
  entries: (s) => s.entries(),
  account: (s) => s.account(id(1)),
  setAccount: (s) => s.setAccount(id(1), acct(1n, 1n, 1n)),
  weights: (s) => s.weights(),
  producerSeed: (s) => s.producerSeed(),
  setProducerSeed: (s) => s.setProducerSeed(id(11)),
  supply: (s) => s.supply(),
  setSupply: (s) => s.setSupply({ emitted: 1n, burned: 1n }),
  job: (s) => s.job(id(3)),
  setJob: (s) => s.setJob(id(3), undefined),
  channel: (s) => s.channel(id(4)),
  setChannel: (s) => s.setChannel(id(4), undefined),
  epoch: (s) => s.epoch(id(5), id(2)),
  setEpoch: (s) => s.setEpoch(id(5), id(2), 9),
  name: (s) => s.name('alpha'),
  setName: (s) => s.setName('gamma', { owner: id(2), expires: 1 }),
  namesOf: (s) => s.namesOf(id(1)),
  trust: (s) => s.trust(id(1), id(2)),
  setTrust: (s) => s.setTrust(id(2), id(1), 1),
  revoked: (s) => s.revoked(id(1), id(6)),
  setRevoked: (s) => s.setRevoked(id(3), id(6), 1),
  slashed: (s) => s.slashed(id(2), 6),
  setSlashed: (s) => s.setSlashed(id(3), 1, 1),
};

test('state: while changes are concealed, every member acts on the state as it was before them', () => {
  const members = Object.getOwnPropertyNames(LedgerState.prototype).filter((n) => !['constructor', 'conceal', 'reveal', 'discard'].includes(n));
  assert.sameMembers(Object.keys(CALLS), members, 'every public member has a call here');
  for (const [name, call] of Object.entries(CALLS)) {
    const reference = base();
    const concealed = base();
    const mark = concealed.mark();
    block(concealed);
    concealed.stateRoot();
    concealed.conceal(mark);
    assert.deepEqual(call(concealed), call(reference), `${name} answers as before the block`);
    assert.deepEqual(snapshot(concealed), snapshot(reference), `after ${name}, the state is as before the block`);
    assert.deepEqual(concealed.namesOf(id(2)), reference.namesOf(id(2)), `after ${name}, the name index too`);
  }
});

test('state: concealed changes stand once revealed, undone by a caller or not, and go once discarded', () => {
  const applied = base();
  block(applied);
  const after = snapshot(applied);
  const before = snapshot(base());
  for (const touch of [false, true]) {
    const state = base();
    const mark = state.mark();
    block(state);
    state.stateRoot();
    state.conceal(mark);
    if (touch) assert.deepEqual(state.account(id(1)), acct(100n, 5n, 7n));
    state.reveal();
    assert.deepEqual(snapshot(state), after, `revealed${touch ? ' after a read' : ''}`);
    assert.deepEqual(state.weights(), applied.weights());
    assert.deepEqual(state.namesOf(id(1)), [['beta', { owner: id(1), expires: 99 }]]);
    // Journaled either way: the block can still be undone to its mark.
    state.revert(mark);
    assert.deepEqual(snapshot(state), before);

    const dropped = base();
    block(dropped);
    dropped.conceal(0);
    if (touch) dropped.stateRoot();
    dropped.discard();
    assert.deepEqual(snapshot(dropped), before, `discarded${touch ? ' after a read' : ''}`);
    // Discarded, the state takes a concealment again.
    dropped.conceal(dropped.mark());
    dropped.reveal();
  }
});

test('state: a second conceal is refused with the state at its mark, and the first still reveals', () => {
  const applied = base();
  block(applied);
  const state = base();
  const mark = state.mark();
  block(state);
  state.conceal(mark);
  // A second writer (a second block applied meanwhile) comes, writes, and tries to conceal too.
  const second = state.mark();
  state.setAccount(id(12), acct(5n, 5n, 5n));
  assert.throws(() => state.conceal(second), /concealed already/);
  assert.deepEqual(snapshot(state), snapshot(base()), 'the refused changes are gone');
  state.reveal();
  assert.deepEqual(snapshot(state), snapshot(applied), 'the first concealment stands');
});
