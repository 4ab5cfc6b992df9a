import { assert } from 'chai';
import { rejects } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { verifyBatch } from '../crypto/ed25519.ts';
import { sha256 } from '../crypto/sha256.ts';
import { bytesEqual, concatBytes } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { InvalidEncodingError } from '../errors.ts';
import { signedMessages } from './apply.ts';
import { ALICE, BOB, credits, type Fields, NETWORK, sign } from './fixtures.test-util.ts';
import { blockSigningBytes, HEADER_VERSION, type SignedHeader } from './header.ts';
import { MAINNET } from './params.ts';
import { BILLING_HEARTBEAT, channelReceiptBytes, decodeTx, MAX_TX_BYTES, STREAM_KINDS, settlementBytes, TX_KINDS, type Tx } from './tx.ts';

const ID = sha256(Uint8Array.of(1));
const SIG = new Uint8Array(64).fill(7);

async function evidenceHeader(salt: number): Promise<SignedHeader> {
  const header = {
    version: HEADER_VERSION,
    height: 2 ** 40,
    prev_hash: ID,
    timestamp_ms: 2 ** 50,
    producer: ALICE.publicKey,
    tx_count: 1_024,
    tx_root: ID,
    state_root: sha256(Uint8Array.of(salt)),
  };
  return { header, signature: await ALICE.sign(blockSigningBytes(NETWORK, header)) };
}

/** One body of every kind, in tag order, with its fields at or near their largest. */
async function samples(): Promise<Fields[]> {
  const big = 2n ** 128n - 1n;
  return [
    { kind: 'Transfer', to: BOB.publicKey, amount: big },
    { kind: 'UptimeReward', amount: credits(1_000) },
    {
      kind: 'JobBid',
      spec_hash: ID,
      bid: big,
      duration_secs: 2 ** 32 - 1,
      cpu_cores: 65_535,
      mem_mb: 2 ** 32 - 1,
      billing: BILLING_HEARTBEAT,
      host: BOB.publicKey,
    },
    { kind: 'JobSettle', job_id: ID, payer: BOB.publicKey, cost: 5n, payer_sig: SIG },
    { kind: 'JobExpire', job_id: ID },
    { kind: 'TrustGrant', subject: BOB.publicKey, trusted: false },
    { kind: 'Heartbeat', job_id: ID, cell: BOB.publicKey, epoch: Number.MAX_SAFE_INTEGER },
    { kind: 'ChannelOpen', host: BOB.publicKey, capacity: 9n, expiry_height: 99 },
    { kind: 'ChannelClose', channel_id: ID, payer: BOB.publicKey, cumulative: 3n, payer_sig: SIG },
    { kind: 'ChannelExpire', channel_id: ID },
    { kind: 'NameClaim', name: 'z'.repeat(32) },
    { kind: 'RevokeCapability', token_id: ID },
    { kind: 'HostBond', amount: 1n },
    { kind: 'HostUnbond', amount: 1n },
    { kind: 'SlashEquivocation', a: await evidenceHeader(1), b: await evidenceHeader(2) },
    { kind: 'JobAccept', job_id: ID },
  ];
}

test('tx: every one of the sixteen kinds signs, encodes and decodes back to itself', async () => {
  const bodies = await samples();
  assert.deepEqual(
    bodies.map((b) => b.kind),
    [...TX_KINDS],
  );
  assert.deepEqual([...STREAM_KINDS], ['Transfer', 'UptimeReward', 'JobBid', 'JobSettle', 'JobExpire', 'TrustGrant', 'Heartbeat']);
  for (const [i, fields] of bodies.entries()) {
    const tx = await sign(ALICE, fields, 2 ** 53 - 1);
    assert.equal(tx.bodyBytes[0], i + 1, `${fields.kind} has tag ${i + 1}`);
    assert.equal(toHex(tx.id), toHex(sha256(tx.bytes)));
    assert.isAtMost(tx.bytes.length, MAX_TX_BYTES, `${fields.kind} fits the transaction size bound`);
    const decoded = decodeTx(tx.bytes);
    assert.deepEqual(decoded.body, tx.body);
    assert.equal(toHex(decoded.id), toHex(tx.id));
    assert.isTrue(bytesEqual(decoded.bodyBytes, tx.bodyBytes));
    assert.isTrue((await verifyBatch(signedMessages(decoded, NETWORK)))[0], `${fields.kind} sender signature`);
  }
});

test('tx: malformed wire bytes are refused', async () => {
  const tx = await sign(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 1n }, 1);
  rejects(() => decodeTx(tx.bytes.subarray(0, 64)), InvalidEncodingError, 'truncated');
  rejects(() => decodeTx(new Uint8Array(MAX_TX_BYTES + 1)), InvalidEncodingError, 'too-long');
  rejects(() => decodeTx(concatBytes(tx.bodyBytes, Uint8Array.of(0), tx.signature)), InvalidEncodingError, 'trailing-bytes');
  for (const tag of [0, 17, 255]) {
    const body = tx.bodyBytes.slice();
    body[0] = tag;
    rejects(() => decodeTx(concatBytes(body, tx.signature)), InvalidEncodingError, 'bad-variant-tag');
  }
});

test('tx: a signature is bound to its network and its purpose', async () => {
  const tx = await sign(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: 1n }, 1);
  const verdict = async (t: Tx, network: string): Promise<boolean[]> => verifyBatch(signedMessages(t, network));
  assert.deepEqual(await verdict(tx, NETWORK), [true]);
  assert.deepEqual(await verdict(tx, MAINNET.network), [false], 'a devnet transaction is void on the main network');

  // The payer's settlement and channel receipt over the same ids and amount are different messages.
  const settlement = settlementBytes(NETWORK, ID, BOB.publicKey, 5n);
  const receipt = channelReceiptBytes(NETWORK, ID, BOB.publicKey, 5n);
  assert.isFalse(bytesEqual(settlement, receipt));
  const sig = await ALICE.sign(settlement);
  const close = await sign(BOB, { kind: 'ChannelClose', channel_id: ID, payer: ALICE.publicKey, cumulative: 5n, payer_sig: sig }, 1);
  assert.deepEqual(await verdict(close, NETWORK), [true, false]);
  const settle = await sign(BOB, { kind: 'JobSettle', job_id: ID, payer: ALICE.publicKey, cost: 5n, payer_sig: sig }, 1);
  assert.deepEqual(await verdict(settle, NETWORK), [true, true]);
});
