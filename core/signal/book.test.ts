import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import type { Chain } from '../chain/chain.ts';
import { key, mine, openChain, params, tx } from '../chain/testnet.test-util.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { sha256 } from '../crypto/sha256.ts';
import { CREDIT } from '../encoding/amount.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { burnOf, NAME_COST } from '../ledger/params.ts';
import { BILLING_HEARTBEAT, type Tx, type TxOf } from '../ledger/tx.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { ANY_SIGNAL, type BurnLookup, burnProofFor, chainBurnLookup, type KeptSignal, SignalBook, type SignalBookOptions, type TxLocator } from './book.ts';
import { heartbeatRate } from './burn.ts';
import { SignalError, type SignalErrorCode } from './errors.ts';
import { type BurnProof, type SignalFields, type SignedSignal, signSignal } from './signal.ts';

const A = key(1);
const B = key(2);
const C = key(3);
const NETWORK = params.network;
const PAYLOAD = new TextEncoder().encode('a paid message');

/** A locator that scans the main chain from the tip (what a transaction index answers). */
function scanLocator(chain: Chain): TxLocator {
  return async (id) => {
    for (let h = chain.tip.height; h >= chain.base; h--) {
      const block = await chain.blockAt(h);
      if (block?.txs.some((t) => bytesEqual(t.id, id))) return h;
    }
    return undefined;
  };
}

interface World {
  chain: Chain;
  claim: Tx;
  transfer: Tx;
  job: Tx;
  beat: Tx;
  lookupBurn: BurnLookup;
  locateTx: TxLocator;
}

/**
 * A memory chain where A claimed a name (height 3, a burn of NAME_COST) and sent a transfer,
 * bid for a heartbeat-billed job with host B (height 4), and B billed it once (height 5).
 */
async function world(): Promise<World> {
  const chain = await openChain();
  await mine(chain, A, 2);
  const claim = await tx(A, { kind: 'NameClaim', nonce: 1, name: 'alice' });
  const transfer = await tx(A, { kind: 'Transfer', nonce: 2, to: B.publicKey, amount: 1n });
  const job = await tx(A, {
    kind: 'JobBid',
    nonce: 3,
    spec_hash: sha256(Uint8Array.of(1)),
    bid: 60n * CREDIT,
    duration_secs: 60,
    cpu_cores: 1,
    mem_mb: 64,
    billing: BILLING_HEARTBEAT,
    host: B.publicKey,
  });
  const beat = await tx(B, { kind: 'Heartbeat', nonce: 1, job_id: job.id, cell: A.publicKey, epoch: 1 });
  const [b3] = await mine(chain, A, 1, [claim, transfer]);
  const [b4] = await mine(chain, A, 1, [job]);
  const [b5] = await mine(chain, A, 1, [beat]);
  assert.deepEqual([b3!.txs.length, b4!.txs.length, b5!.txs.length], [3, 2, 2], 'every transaction was confirmed');
  return { chain, claim, transfer, job, beat, lookupBurn: chainBurnLookup(chain), locateTx: scanLocator(chain) };
}

function book(w: World, options: Partial<SignalBookOptions> = {}): SignalBook {
  return new SignalBook({ network: NETWORK, self: C.publicKey, lookupBurn: w.lookupBurn, locateTx: w.locateTx, ...options });
}

function signal(from: SigningKey, nonce: number, fields: Partial<SignalFields> = {}): Promise<SignedSignal> {
  return signSignal({ to: 'broadcast', capabilities: [], payload: new Uint8Array(0), burn_proof: null, nonce, ...fields }, from, NETWORK);
}

async function refused(b: SignalBook, s: SignedSignal, code: SignalErrorCode, verdict: 'reject' | 'ignore'): Promise<void> {
  const error = (await rejectsAsync(() => b.accept(s), SignalError, code)) as SignalError;
  assert.equal(error.verdict, verdict, code);
}

test('signal book: a valid signal is accepted and kept when broadcast or addressed here', async () => {
  const w = await world();
  const b = book(w);
  const heard: string[] = [];
  const stop = b.subscribe((s) => heard.push(s.id));
  const broadcast = await signal(A, 1, { capabilities: [{ name: 'chat', version: 2 }] });
  const object = await b.accept(broadcast);
  assert.equal(object.id, toHex(broadcast.id));
  assert.deepEqual(object.capabilities, [{ name: 'chat', version: 2 }]);
  const toMe = await signal(B, 1, { to: C.publicKey });
  const toOther = await signal(A, 2, { to: B.publicKey });
  await b.accept(toMe);
  const passing = await b.accept(toOther);
  assert.equal(passing.to, toHex(B.publicKey), 'a signal for another node is valid and returned');
  assert.deepEqual(
    b.list().map((s) => s.id),
    [toHex(broadcast.id), toHex(toMe.id)],
    'but only ours are kept',
  );
  assert.deepEqual(heard, [toHex(broadcast.id), toHex(toMe.id)]);
  assert.equal(b.lastNonce(A.publicKey), 2, 'its nonce still counts');
  stop();
  await b.accept(await signal(A, 3));
  assert.equal(heard.length, 2, 'unsubscribed');
});

test('signal book: a bad signature is rejected before anything else, and consumes no nonce', async () => {
  const w = await world();
  const b = book(w);
  const good = await signal(A, 5);
  const bytes = good.bytes.slice();
  bytes[bytes.length - 1]! ^= 0x40;
  const forged: SignedSignal = { ...good, signature: bytes.slice(bytes.length - 64), bytes };
  await refused(b, forged, 'bad-signature', 'reject');
  // Forged with a payload and no proof: the signature is still what is named.
  await refused(b, { ...(await signal(A, 6, { payload: PAYLOAD })), signature: new Uint8Array(64) }, 'bad-signature', 'reject');
  assert.isUndefined(b.lastNonce(A.publicKey));
  await b.accept(good);
});

test("signal book: a nonce must rise above the sender's last accepted one (else ignored)", async () => {
  const w = await world();
  const b = book(w);
  await b.accept(await signal(A, 10));
  await refused(b, await signal(A, 10, { capabilities: [{ name: 'x', version: 1 }] }), 'stale-nonce', 'ignore');
  await refused(b, await signal(A, 9), 'stale-nonce', 'ignore');
  await b.accept(await signal(B, 1)); // senders count separately
  await refused(b, await signal(A, 11, { payload: PAYLOAD }), 'burn-proof-required', 'reject');
  assert.equal(b.lastNonce(A.publicKey), 10, 'a refused signal does not move the nonce');
  await b.accept(await signal(A, 11));
  assert.equal(b.lastNonce(A.publicKey), 11);
});

test("signal book: a payload needs a burn proof; a proof of the sender's confirmed burn is accepted once", async () => {
  const w = await world();
  const b = book(w);
  await refused(b, await signal(A, 1, { payload: PAYLOAD }), 'burn-proof-required', 'reject');
  const proof = await burnProofFor(w.claim.id, A.publicKey, w.locateTx, w.lookupBurn);
  assert.deepEqual(
    { ...proof, tx_id: toHex(proof.tx_id), block_hash: toHex(proof.block_hash) },
    { tx_id: toHex(w.claim.id), amount: NAME_COST, block_height: 3, block_hash: toHex((await w.chain.blockAt(3))!.hash) },
  );
  const paid = await signal(A, 2, { payload: PAYLOAD, burn_proof: proof });
  const object = await b.accept(paid);
  assert.deepEqual(object.burn_proof, {
    tx_id: toHex(w.claim.id),
    amount: NAME_COST.toString(),
    block_height: 3,
    block_hash: toHex(proof.block_hash),
  });
  assert.equal(object.payload_hex, toHex(PAYLOAD));
  await refused(b, await signal(A, 3, { payload: PAYLOAD, burn_proof: proof }), 'burn-used', 'ignore');
  await refused(b, await signal(A, 4, { burn_proof: proof }), 'burn-used', 'ignore');
  // A proof with an empty payload is checked all the same.
  const other = book(w);
  await other.accept(await signal(A, 1, { burn_proof: proof }));
});

test('signal book: every burn rule refuses with its verdict', async () => {
  const w = await world();
  const b = book(w);
  const good = await burnProofFor(w.claim.id, A.publicKey, w.locateTx, w.lookupBurn);
  const hashAt = async (h: number): Promise<Uint8Array> => (await w.chain.blockAt(h))!.hash;
  const cases: [BurnProof, SignalErrorCode, 'reject' | 'ignore'][] = [
    // The block is above this node's tip: it may simply not have arrived yet.
    [{ ...good, block_height: 99 }, 'burn-not-found', 'ignore'],
    // Another block at that height: the proof may come from a competing branch.
    [{ ...good, block_hash: sha256(Uint8Array.of(7)) }, 'burn-fork', 'ignore'],
    // The right block of height 2, which does not hold the claim: forged.
    [{ ...good, block_height: 2, block_hash: await hashAt(2) }, 'burn-not-in-block', 'reject'],
    // A confirmed transfer: it burns nothing.
    [{ ...good, tx_id: w.transfer.id }, 'not-a-burn', 'reject'],
    // The block's reward: it burns nothing either.
    [{ ...good, tx_id: (await w.chain.blockAt(3))!.txs[0]!.id }, 'not-a-burn', 'reject'],
    [{ ...good, amount: NAME_COST - 1n }, 'burn-mismatch', 'reject'],
    [{ ...good, amount: NAME_COST + 1n }, 'burn-mismatch', 'reject'],
  ];
  let nonce = 1;
  for (const [proof, code, verdict] of cases) {
    await refused(b, await signal(A, nonce++, { payload: PAYLOAD, burn_proof: proof }), code, verdict);
  }
  // B shows A's burn: the burn must come from the sender.
  await refused(b, await signal(B, 1, { payload: PAYLOAD, burn_proof: good }), 'burn-not-sender', 'reject');
  assert.isUndefined(b.lastNonce(A.publicKey), 'no refused signal counted');
  await b.accept(await signal(A, nonce, { payload: PAYLOAD, burn_proof: good }));
});

test('signal book: a lookup that answers undefined for a held block without the transaction only ignores', async () => {
  const w = await world();
  const strict: BurnLookup = async (id, height) => {
    const found = await w.lookupBurn(id, height);
    return found?.tx === undefined ? undefined : found;
  };
  const b = book(w, { lookupBurn: strict });
  const good = await burnProofFor(w.claim.id, A.publicKey, w.locateTx, w.lookupBurn);
  const hash2 = (await w.chain.blockAt(2))!.hash;
  await refused(b, await signal(A, 1, { payload: PAYLOAD, burn_proof: { ...good, block_height: 2, block_hash: hash2 } }), 'burn-not-found', 'ignore');
  await b.accept(await signal(A, 2, { payload: PAYLOAD, burn_proof: good }));
});

test('signal book: a proof from another branch is ignored as a possible fork', async () => {
  const w = await world();
  const fork = await openChain();
  await mine(fork, B, 5);
  const b = book(w, { lookupBurn: chainBurnLookup(fork), locateTx: scanLocator(fork) });
  const proof = await burnProofFor(w.claim.id, A.publicKey, w.locateTx, w.lookupBurn);
  await refused(b, await signal(A, 1, { payload: PAYLOAD, burn_proof: proof }), 'burn-fork', 'ignore');
});

test("signal book: a heartbeat burns the cell's credits at the bid's rate", async () => {
  const w = await world();
  const proof = await burnProofFor(w.beat.id, A.publicKey, w.locateTx, w.lookupBurn);
  assert.equal(proof.block_height, 5);
  const rate = heartbeatRate(w.job.body as TxOf<'JobBid'>);
  assert.equal(rate, (60n * CREDIT) / 2n);
  assert.equal(proof.amount, burnOf(rate));
  await rejectsAsync(() => burnProofFor(w.beat.id, B.publicKey, w.locateTx, w.lookupBurn), SignalError, 'burn-not-sender');
  await book(w).accept(await signal(A, 1, { payload: PAYLOAD, burn_proof: proof }));
  // Without a way to find the job's bid, the burn's size is unknown here: ignored, not rejected.
  const blind = new SignalBook({ network: NETWORK, self: C.publicKey, lookupBurn: w.lookupBurn });
  await refused(blind, await signal(A, 1, { payload: PAYLOAD, burn_proof: proof }), 'burn-not-found', 'ignore');
});

test('signal book: burn proofs for sending name what is wrong', async () => {
  const w = await world();
  const proofOf = (id: Uint8Array, sender: SigningKey): Promise<BurnProof> => burnProofFor(id, sender.publicKey, w.locateTx, w.lookupBurn);
  await rejectsAsync(() => proofOf(sha256(Uint8Array.of(3)), A), SignalError, 'burn-not-found', /not confirmed/);
  await rejectsAsync(() => proofOf(w.transfer.id, A), SignalError, 'not-a-burn', /Transfer/);
  await rejectsAsync(() => proofOf(w.claim.id, B), SignalError, 'burn-not-sender');
  // A book makes its own node's proofs, and refuses a burn it already spent.
  const own = book(w, { self: A.publicKey });
  const proof = await own.burnProof(w.claim.id);
  await own.accept(await signal(A, own.nextNonce(0), { payload: PAYLOAD, burn_proof: proof }));
  await rejectsAsync(() => own.burnProof(w.claim.id), SignalError, 'burn-used');
  const noIndex = new SignalBook({ network: NETWORK, self: A.publicKey, lookupBurn: w.lookupBurn });
  await rejectsAsync(() => noIndex.burnProof(w.claim.id), SignalError, 'burn-not-found', /index/);
});

test('signal book: the last 100 kept signals are listed, newest last', async () => {
  const w = await world();
  const b = book(w);
  const ids: string[] = [];
  for (let n = 1; n <= 105; n++) {
    const s = await signal(n % 2 === 0 ? A : B, n);
    ids.push(toHex(s.id));
    await b.accept(s);
  }
  const listed = b.list();
  assert.equal(listed.length, 100);
  assert.deepEqual(
    listed.map((s) => s.id),
    ids.slice(5),
  );
  listed.pop();
  assert.equal(b.list().length, 100, 'list returns a copy');
  const small = book(w, { keep: 3 });
  for (let n = 1; n <= 5; n++) await small.accept(await signal(A, n));
  assert.deepEqual(
    small.list().map((s) => s.nonce),
    [3, 4, 5],
  );
});

test('signal book: kept signals get rising positions from the clock; follow filters by sender and addressee and resumes after a position', async () => {
  const w = await world();
  const clock = testScheduler(1_000_000);
  const b = book(w, { clock, keep: 4 });
  const all: KeptSignal[] = [];
  b.follow(null, ANY_SIGNAL, (kept) => all.push(kept));
  const fromA: string[] = [];
  const toC: string[] = [];
  const fromBToC: string[] = [];
  b.follow(null, { from: toHex(A.publicKey), to: null }, (kept) => fromA.push(kept.signal.id));
  b.follow(null, { from: null, to: toHex(C.publicKey) }, (kept) => toC.push(kept.signal.id));
  b.follow(null, { from: toHex(B.publicKey), to: toHex(C.publicKey) }, (kept) => fromBToC.push(kept.signal.id));
  const s1 = await signal(A, 1);
  const s2 = await signal(B, 1, { to: C.publicKey });
  const s3 = await signal(A, 2, { to: C.publicKey });
  const s4 = await signal(B, 2);
  for (const s of [s1, s2, s3]) await b.accept(s);
  await clock.advance(5);
  await b.accept(s4);
  const id = (s: SignedSignal): string => toHex(s.id);
  // Two in the same millisecond still rise by one; a later one takes the clock's time.
  assert.deepEqual(
    all.map((k) => k.seq),
    [1_000_000, 1_000_001, 1_000_002, 1_000_005],
  );
  assert.deepEqual(fromA, [id(s1), id(s3)]);
  assert.deepEqual(toC, [id(s2), id(s3)]);
  assert.deepEqual(fromBToC, [id(s2)]);
  assert.deepEqual(
    b.list({ from: null, to: 'broadcast' }).map((s) => s.id),
    [id(s1), id(s4)],
  );
  // A follower that resumes gets what is still kept after its position, then what comes.
  const resumed: number[] = [];
  b.follow(1_000_001, { from: toHex(A.publicKey), to: null }, (kept) => resumed.push(kept.seq));
  assert.deepEqual(resumed, [1_000_002]);
  const s5 = await signal(A, 3);
  await b.accept(s5);
  assert.deepEqual(resumed, [1_000_002, 1_000_006]);
  // A position from before anything still kept replays all that is kept (the oldest went: keep is 4).
  const replayed: string[] = [];
  b.follow(0, ANY_SIGNAL, (kept) => replayed.push(kept.signal.id));
  assert.deepEqual(replayed, [id(s2), id(s3), id(s4), id(s5)]);
});

test('signal book: nonce and burn memories are bounded, forgetting the oldest', async () => {
  const w = await world();
  const b = book(w, { maxSenders: 2, maxUsedBurns: 1 });
  await b.accept(await signal(A, 5));
  await b.accept(await signal(B, 5));
  await b.accept(await signal(A, 6)); // A is now the most recent
  await b.accept(await signal(C, 5)); // evicts B
  assert.isUndefined(b.lastNonce(B.publicKey));
  assert.equal(b.lastNonce(A.publicKey), 6);
  assert.equal(b.lastNonce(C.publicKey), 5);
  await b.accept(await signal(B, 1));

  // Two burns of A (the claim and the heartbeat): with room for one, the first is forgotten.
  const claim = await burnProofFor(w.claim.id, A.publicKey, w.locateTx, w.lookupBurn);
  const beat = await burnProofFor(w.beat.id, A.publicKey, w.locateTx, w.lookupBurn);
  await b.accept(await signal(A, 10, { payload: PAYLOAD, burn_proof: claim }));
  await refused(b, await signal(A, 11, { payload: PAYLOAD, burn_proof: claim }), 'burn-used', 'ignore');
  await b.accept(await signal(A, 12, { payload: PAYLOAD, burn_proof: beat }));
  await b.accept(await signal(A, 13, { payload: PAYLOAD, burn_proof: claim }));
});

test('signal book: concurrent signals cannot share a nonce or a burn', async () => {
  const w = await world();
  const proof = await burnProofFor(w.claim.id, A.publicKey, w.locateTx, w.lookupBurn);
  const beat = await burnProofFor(w.beat.id, A.publicKey, w.locateTx, w.lookupBurn);
  // Signed first, then handed in together, so the accepts interleave at their lookups.
  const race = async (b: SignalBook, signals: SignedSignal[]): Promise<string[]> => {
    const results = await Promise.allSettled(signals.map((s) => b.accept(s)));
    return results.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as SignalError).code));
  };

  // A slow lookup keeps both inside their burn checks at once.
  const slow: BurnLookup = async (id, height) => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    return w.lookupBurn(id, height);
  };
  const b = book(w, { lookupBurn: slow });
  const spend = await race(b, [
    await signal(A, 1, { payload: PAYLOAD, burn_proof: proof }),
    await signal(A, 2, { payload: Uint8Array.of(1), burn_proof: proof }),
  ]);
  // Whichever finished first wins: the other is a spent burn, or (if nonce 2 won) a stale nonce.
  assert.equal(spend.filter((r) => r === 'ok').length, 1, `one burn backs one signal: ${spend}`);
  assert.includeMembers(['ok', 'burn-used', 'stale-nonce'], spend);
  await refused(b, await signal(A, 3, { payload: PAYLOAD, burn_proof: proof }), 'burn-used', 'ignore');

  // The same nonce on two different burns: both wait on their lookups, and only one may land.
  const twins = await race(book(w, { lookupBurn: slow }), [
    await signal(A, 5, { payload: PAYLOAD, burn_proof: proof }),
    await signal(A, 5, { payload: PAYLOAD, burn_proof: beat }),
  ]);
  assert.deepEqual(twins.sort(), ['ok', 'stale-nonce']);

  const same = await race(b, [
    await signal(B, 7, { capabilities: [{ name: 'x', version: 1 }] }),
    await signal(B, 7, { capabilities: [{ name: 'y', version: 1 }] }),
  ]);
  assert.deepEqual(same.sort(), ['ok', 'stale-nonce']);
});

test('signal book: own nonces follow the clock but never repeat or fall', async () => {
  const w = await world();
  const b = book(w, { self: A.publicKey });
  assert.equal(b.nextNonce(1_000.7), 1_000);
  assert.equal(b.nextNonce(1_000), 1_001, 'the same millisecond still rises');
  assert.equal(b.nextNonce(500), 1_002, 'a clock going back does not lower it');
  assert.equal(b.nextNonce(5_000), 5_000);
  // A signal of ours accepted with a higher nonce (say, sent before a restart) moves it on.
  await b.accept(await signal(A, 9_000));
  assert.equal(b.nextNonce(6_000), 9_001);
  // A restarted node starts from the clock, which is above every nonce it gave before.
  const restarted = book(w, { self: A.publicKey });
  const next = restarted.nextNonce(Date.now());
  assert.isAbove(next, 9_001);
  await restarted.accept(await signal(A, next));
});
