import { assert } from 'chai';
import { rejects, rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { sha256 } from '../crypto/sha256.ts';
import { bytesEqual, concatBytes } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { ALICE, BOB, credits, NETWORK } from '../ledger/fixtures.test-util.ts';
import { SIGNAL_ERRORS, SignalError } from './errors.ts';
import {
  decodeSignal,
  MAX_CAPABILITIES,
  MAX_PAYLOAD_BYTES,
  MAX_SIGNAL_BYTES,
  type SignalFields,
  type SignedSignal,
  signalObject,
  signalSigningBytes,
  signSignal,
  verifySignalSignature,
} from './signal.ts';

const TX_ID = sha256(Uint8Array.of(1));
const BLOCK_HASH = sha256(Uint8Array.of(2));

const plain: SignalFields = {
  to: 'broadcast',
  capabilities: [
    { name: 'cpu', version: 8 },
    { name: 'tag:linux', version: 1 },
  ],
  payload: new Uint8Array(0),
  burn_proof: null,
  nonce: 1_700_000_000_000,
};

const paid: SignalFields = {
  to: BOB.publicKey,
  capabilities: [],
  payload: new TextEncoder().encode('hello, mesh'),
  burn_proof: { tx_id: TX_ID, amount: credits(1_000), block_height: 42, block_hash: BLOCK_HASH },
  nonce: 7,
};

function sameSignal(a: SignedSignal, b: SignedSignal): void {
  assert.deepEqual(signalObject(a), signalObject(b));
  assert.equal(toHex(a.bytes), toHex(b.bytes));
  assert.equal(toHex(a.signature), toHex(b.signature));
}

test('signal: a signed signal decodes back to the same fields, bytes and id', async () => {
  for (const fields of [plain, paid]) {
    const signed = await signSignal(fields, ALICE, NETWORK);
    const decoded = decodeSignal(signed.bytes, NETWORK);
    sameSignal(decoded, signed);
    assert.equal(toHex(decoded.from), toHex(ALICE.publicKey));
    assert.deepEqual(decoded.capabilities, [...fields.capabilities]);
    assert.equal(toHex(decoded.payload), toHex(fields.payload));
    assert.equal(decoded.nonce, fields.nonce);
    await verifySignalSignature(decoded, NETWORK);
  }
});

test('signal: the API object has the spec fields, hex ids and a decimal amount', async () => {
  const broadcast = signalObject(await signSignal(plain, ALICE, NETWORK));
  assert.deepEqual(Object.keys(broadcast), ['from', 'to', 'capabilities', 'payload_hex', 'nonce', 'id']);
  assert.equal(broadcast.from, toHex(ALICE.publicKey));
  assert.equal(broadcast.to, 'broadcast');
  assert.equal(broadcast.payload_hex, '');
  assert.match(broadcast.id, /^[0-9a-f]{64}$/);

  const signed = await signSignal(paid, ALICE, NETWORK);
  const directed = signalObject(signed);
  assert.deepEqual(Object.keys(directed), ['from', 'to', 'capabilities', 'payload_hex', 'burn_proof', 'nonce', 'id']);
  assert.equal(directed.to, toHex(BOB.publicKey));
  assert.equal(directed.payload_hex, toHex(paid.payload));
  assert.deepEqual(directed.burn_proof, {
    tx_id: toHex(TX_ID),
    amount: '1000000000000000000000',
    block_height: 42,
    block_hash: toHex(BLOCK_HASH),
  });
  assert.equal(directed.nonce, 7);
  assert.equal(directed.id, toHex(signed.id));
  assert.deepEqual(JSON.parse(JSON.stringify(directed)), directed, 'the object is plain JSON');
});

test('signal: the id is the SHA-256 of the signed bytes, the same for the same content', async () => {
  const a = await signSignal(plain, ALICE, NETWORK);
  const again = await signSignal({ ...plain, from: ALICE.publicKey }, ALICE, NETWORK);
  assert.equal(toHex(a.id), toHex(sha256(a.bytes)));
  assert.equal(toHex(again.id), toHex(a.id), 'Ed25519 signatures are deterministic, so the content fixes the id');
  const ids = new Set([toHex(a.id)]);
  for (const change of [{ nonce: plain.nonce + 1 }, { to: BOB.publicKey }, { capabilities: [] }, { payload: Uint8Array.of(0) }]) {
    ids.add(toHex((await signSignal({ ...plain, ...change }, ALICE, NETWORK)).id));
  }
  ids.add(toHex((await signSignal(plain, BOB, NETWORK)).id));
  assert.equal(ids.size, 6, 'every change of content changes the id');
});

test('signal: a tampered body, signature or network fails verification with bad-signature (reject)', async () => {
  const signed = await signSignal(paid, ALICE, NETWORK);
  const sigStart = signed.bytes.length - 64;
  // Flip one byte of the payload (inside the body, so the result still decodes).
  const payloadAt = signed.bodyBytes.length - 8 - 1 - 88 - paid.payload.length;
  assert.isTrue(bytesEqual(signed.bytes.subarray(payloadAt, payloadAt + paid.payload.length), paid.payload));
  for (const at of [payloadAt, sigStart + 5, signed.bytes.length - 40]) {
    const bytes = signed.bytes.slice();
    bytes[at]! ^= 0x01;
    const tampered = decodeSignal(bytes, NETWORK);
    assert.notEqual(toHex(tampered.id), toHex(signed.id));
    const error = await rejectsAsync(() => verifySignalSignature(tampered, NETWORK), SignalError, 'bad-signature');
    assert.equal((error as SignalError).verdict, 'reject');
  }
  await rejectsAsync(() => verifySignalSignature(signed, 'mesh'), SignalError, 'bad-signature');
  // Someone else's key under the same body: the from field names the signer.
  const forged = decodeSignal(concatBytes(signed.bodyBytes, (await signSignal(paid, BOB, NETWORK)).signature), NETWORK);
  await rejectsAsync(() => verifySignalSignature(forged, NETWORK), SignalError, 'bad-signature');
});

test('signal: decoding refuses anything but one canonical v1 signal with bad-encoding (reject)', async () => {
  const signed = await signSignal(plain, ALICE, NETWORK);
  const bad = (bytes: Uint8Array): void => {
    const error = rejects(() => decodeSignal(bytes, NETWORK), SignalError, 'bad-encoding');
    assert.equal((error as SignalError).verdict, 'reject');
  };
  bad(new Uint8Array(0));
  bad(signed.bytes.subarray(0, 64));
  bad(signed.bytes.subarray(0, signed.bytes.length - 1));
  bad(concatBytes(signed.bytes, Uint8Array.of(0)));
  bad(new Uint8Array(MAX_SIGNAL_BYTES + 1).fill(1));
  const v2 = signed.bytes.slice();
  v2[0] = 2;
  rejects(() => decodeSignal(v2, NETWORK), SignalError, 'bad-encoding', /version 2/);
  const badTo = signed.bytes.slice();
  badTo[33] = 2; // the option tag of `to`
  bad(badTo);
  rejects(() => decodeSignal('00' as unknown as Uint8Array, NETWORK), SignalError, 'bad-encoding');
});

test('signal: signing refuses fields beyond the bounds with bad-encoding', async () => {
  const refuse = (fields: Partial<SignalFields>, message?: RegExp): Promise<unknown> =>
    rejectsAsync(() => signSignal({ ...plain, ...fields }, ALICE, NETWORK), SignalError, 'bad-encoding', message);
  const caps = (n: number): { name: string; version: number }[] => Array.from({ length: n }, (_, i) => ({ name: `c${i}`, version: i }));
  await refuse({ capabilities: caps(MAX_CAPABILITIES + 1) });
  await refuse({ capabilities: [{ name: 'x'.repeat(65), version: 1 }] });
  await refuse({ capabilities: [{ name: 'é'.repeat(33), version: 1 }] }, /UTF-8 bytes/);
  await refuse({ capabilities: [{ name: '', version: 1 }] }, /empty/);
  await refuse(
    {
      capabilities: [
        { name: 'cpu', version: 1 },
        { name: 'cpu', version: 2 },
      ],
    },
    /twice/,
  );
  await refuse({ capabilities: [{ name: 'cpu', version: 2 ** 32 }] });
  await refuse({ capabilities: [{ name: 'cpu', version: -1 }] });
  await refuse({ payload: new Uint8Array(MAX_PAYLOAD_BYTES + 1) });
  await refuse({ nonce: Number.MAX_SAFE_INTEGER + 1 });
  await refuse({ nonce: 1.5 });
  await refuse({ to: new Uint8Array(31) });
  await refuse({ from: BOB.publicKey }, /signing key/);
  await refuse({ burn_proof: { tx_id: TX_ID, amount: -1n, block_height: 1, block_hash: BLOCK_HASH } });

  // At every bound at once the signal is exactly MAX_SIGNAL_BYTES, and still decodes.
  const biggest = await signSignal(
    {
      to: BOB.publicKey,
      capabilities: Array.from({ length: MAX_CAPABILITIES }, (_, i) => ({ name: i.toString().padStart(64, 'n'), version: 2 ** 32 - 1 })),
      payload: new Uint8Array(MAX_PAYLOAD_BYTES).fill(0xff),
      burn_proof: { tx_id: TX_ID, amount: 2n ** 128n - 1n, block_height: Number.MAX_SAFE_INTEGER, block_hash: BLOCK_HASH },
      nonce: Number.MAX_SAFE_INTEGER,
    },
    ALICE,
    NETWORK,
  );
  assert.equal(biggest.bytes.length, MAX_SIGNAL_BYTES);
  sameSignal(decodeSignal(biggest.bytes, NETWORK), biggest);
});

test('signal: decoding refuses a duplicate capability name, which signing never writes', async () => {
  // Re-sign hand-made bodies: valid signatures, so only the structure rule can refuse them.
  const one = await signSignal(
    {
      ...plain,
      capabilities: [
        { name: 'aaa', version: 1 },
        { name: 'aab', version: 1 },
      ],
    },
    ALICE,
    NETWORK,
  );
  const body = one.bodyBytes.slice();
  const secondName = body.indexOf(0x62, 50); // the 'b' of 'aab'
  body[secondName] = 0x61; // now 'aaa' twice
  const signature = await ALICE.sign(signalSigningBytes(NETWORK, body));
  rejects(() => decodeSignal(concatBytes(body, signature), NETWORK), SignalError, 'bad-encoding', /twice/);
});

test('signal: every error code carries its gossip verdict', () => {
  assert.equal(new SignalError('stale-nonce', 'x').verdict, 'ignore');
  assert.equal(new SignalError('bad-signature', 'x').verdict, 'reject');
  const ignored = Object.entries(SIGNAL_ERRORS)
    .filter(([, rule]) => rule.verdict === 'ignore')
    .map(([k]) => k);
  assert.deepEqual(ignored.sort(), ['burn-fork', 'burn-not-found', 'burn-used', 'stale-nonce']);
  const error = new SignalError('burn-used', 'spent');
  assert.equal(error.name, 'SignalError');
  assert.equal(error.code, 'burn-used');
});
