import { assert } from 'chai';
import { rejects, rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import type { SignedHeader } from '../ledger/header.ts';
import { EVIDENCE_MAX_AGE_BLOCKS } from '../ledger/params.ts';
import type { Chain } from './chain.ts';
import {
  checkEvidenceShape,
  checkEvidenceSignatures,
  checkEvidenceUseful,
  decodeEvidence,
  type Evidence,
  EvidenceError,
  encodeEvidence,
  evidenceOf,
} from './evidence.ts';
import { key, mine, nextBlock, openChain, params, tx } from './testnet.test-util.ts';

const A = key(1);
const B = key(2);

async function signed(chain: Chain, producer: SigningKey, delayMs: number): Promise<SignedHeader> {
  const block = await nextBlock(chain, producer, null, delayMs);
  return { header: block.header, signature: block.signature };
}

test('evidence: one producer, one height, two headers, both signed; one wire form per pair', async () => {
  const chain = await openChain();
  await mine(chain, B, 1);
  const x = await signed(chain, A, 0);
  const y = await signed(chain, A, 1);
  const evidence = evidenceOf(x, y);
  assert.deepEqual(encodeEvidence(evidenceOf(y, x)), encodeEvidence(evidence), 'either order, one encoding');
  assert.deepEqual(decodeEvidence(encodeEvidence(evidence)), evidence);
  checkEvidenceShape(evidence);
  await checkEvidenceSignatures(evidence, params.network);

  rejects(() => checkEvidenceShape(evidenceOf(x, x)), EvidenceError, 'same-block');
  const byB = await signed(chain, B, 0);
  rejects(() => checkEvidenceShape(evidenceOf(x, byB)), EvidenceError, 'producers-differ');
  await mine(chain, B, 1);
  const later = await signed(chain, A, 0);
  rejects(() => checkEvidenceShape(evidenceOf(x, later)), EvidenceError, 'heights-differ');
  const forged: Evidence = { a: evidence.a, b: { header: evidence.b.header, signature: evidence.a.signature } };
  await rejectsAsync(() => checkEvidenceSignatures(forged, params.network), EvidenceError, 'bad-signature');
  await rejectsAsync(() => checkEvidenceSignatures(evidence, 'another-network'), EvidenceError, 'bad-signature');
});

test('evidence: of use only while it could take a bond: within the age, unpunished, a bond to take', async () => {
  const chain = await openChain();
  await mine(chain, B, 1);
  const evidence = evidenceOf(await signed(chain, A, 0), await signed(chain, A, 1));
  const at = evidence.a.header.height;
  rejects(() => checkEvidenceUseful(evidence, chain.state, chain.tip.height), EvidenceError, 'no-bond');
  await mine(chain, B, 1, [await tx(B, { kind: 'Transfer', nonce: 1, to: A.publicKey, amount: 10n })]);
  await mine(chain, B, 1, [await tx(A, { kind: 'HostBond', nonce: 1, amount: 10n })]);
  checkEvidenceUseful(evidence, chain.state, chain.tip.height);
  // Judged as the next block would judge it: the age counts from the tip's next height.
  checkEvidenceUseful(evidence, chain.state, at + EVIDENCE_MAX_AGE_BLOCKS - 1);
  rejects(() => checkEvidenceUseful(evidence, chain.state, at + EVIDENCE_MAX_AGE_BLOCKS), EvidenceError, 'too-old');
  checkEvidenceUseful(evidence, chain.state, at - EVIDENCE_MAX_AGE_BLOCKS);
  rejects(() => checkEvidenceUseful(evidence, chain.state, at - EVIDENCE_MAX_AGE_BLOCKS - 1), EvidenceError, 'too-far-ahead');
  await mine(chain, B, 1, [await tx(B, { kind: 'SlashEquivocation', nonce: 2, a: evidence.a, b: evidence.b })]);
  assert.equal(chain.state.account(A.publicKey).bond, 0n);
  rejects(() => checkEvidenceUseful(evidence, chain.state, chain.tip.height), EvidenceError, 'already-slashed');
});
