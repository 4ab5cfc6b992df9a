import * as noble from '@noble/ed25519';
import { assert } from 'chai';
import fc from 'fast-check';
import { rejects, rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { speccheckCases as speccheck } from '../../test/vectors/ed25519-speccheck.ts';
import { concatBytes } from '../encoding/bytes.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { InvalidKeyError, InvalidSignatureError, WrongTypeError } from '../errors.ts';
import {
  checkSignature,
  defaultEd25519Backend,
  ed25519Backends,
  parsePublicKey,
  parseSignature,
  type SignatureRejection,
  SigningKey,
  verify,
  verifyBatch,
} from './ed25519.ts';
import { sha512 } from './sha256.ts';

const P = 2n ** 255n - 19n;
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

const le = (value: bigint, length = 32): Uint8Array => {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = Number((value >> BigInt(8 * i)) & 0xffn);
  return out;
};
const fromLe = (bytes: Uint8Array): bigint => {
  let v = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[i]!);
  return v;
};
const challenge = (r: Uint8Array, a: Uint8Array, m: Uint8Array): bigint => fromLe(sha512(concatBytes(r, a, m))) % L;

// RFC 8032 §7.1, tests 1, 2, 3 and SHA(abc).
const RFC8032 = [
  {
    seed: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
    publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    message: '',
    signature: 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  },
  {
    seed: '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb',
    publicKey: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c',
    message: '72',
    signature: '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
  },
  {
    seed: 'c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7',
    publicKey: 'fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025',
    message: 'af82',
    signature: '6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a',
  },
  {
    seed: '833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42',
    publicKey: 'ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf',
    message: 'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
    signature: 'dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704',
  },
];

interface EdgeCase {
  name: string;
  publicKey: Uint8Array;
  message: Uint8Array;
  signature: Uint8Array;
  /** null: must verify; otherwise the rule that must reject it. */
  expect: SignatureRejection | null;
}

// The ten ed25519-speccheck cases ("Taming the many EdDSAs"), with the verdict of the chain's rule.
const SPECCHECK_EXPECT: { why: string; expect: SignatureRejection | null }[] = [
  { why: 'small-order A and R, S = 0', expect: 'key-small-order' },
  { why: 'small-order A, mixed-order R', expect: 'key-small-order' },
  { why: 'mixed-order A, small-order R', expect: 'r-small-order' },
  { why: 'mixed-order A and R, passes the cofactorless equation', expect: null },
  { why: 'mixed-order A and R, passes only the cofactored equation', expect: 'mismatch' },
  { why: 'mixed-order A, R of order L, passes only the cofactored equation', expect: 'mismatch' },
  { why: 'S > L', expect: 's-non-canonical' },
  { why: 'S much larger than L', expect: 's-non-canonical' },
  { why: 'non-canonical R (y = p), passes only if R is reduced before hashing', expect: 'r-non-canonical' },
  { why: 'non-canonical R (y = p), passes only if R is hashed as given', expect: 'r-non-canonical' },
];

/** Edge cases built from the group law, deterministically. */
function constructedCases(): EdgeCase[] {
  const B = noble.Point.BASE;
  const T8 = noble.Point.fromBytes(fromHex('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a'));
  const a = 0x1234567890abcdef1234567890abcdef1234567890abcdefn % L;
  const r = 0xfedcba0987654321fedcba0987654321fedcba0987654321n % L;
  const A = B.multiply(a).toBytes();
  const R = B.multiply(r).toBytes();
  const mixedA = B.multiply(a).add(T8).toBytes();
  const mixedR = B.multiply(r).add(T8).toBytes();
  const sig = (rBytes: Uint8Array, s: bigint): Uint8Array => concatBytes(rBytes, le(s));
  const signWith = (aBytes: Uint8Array, rBytes: Uint8Array, m: Uint8Array): Uint8Array => sig(rBytes, (r + challenge(rBytes, aBytes, m) * a) % L);
  // A message whose challenge k satisfies `want(k)`, found by counting.
  const grind = (aBytes: Uint8Array, rBytes: Uint8Array, want: (k: bigint) => boolean): Uint8Array => {
    for (let i = 0; ; i++) {
      const m = new TextEncoder().encode(`mesh edge case ${i}`);
      if (want(challenge(rBytes, aBytes, m))) return m;
    }
  };
  const m = new TextEncoder().encode('mesh edge case');
  const valid = signWith(A, R, m);
  const s = fromLe(valid.subarray(32));
  const cases: EdgeCase[] = [
    { name: 'a valid signature', publicKey: A, message: m, signature: valid, expect: null },
    { name: 'the same with S + L (malleated)', publicKey: A, message: m, signature: sig(R, s + L), expect: 's-non-canonical' },
    { name: 'S = L', publicKey: A, message: m, signature: sig(R, L), expect: 's-non-canonical' },
    { name: 'S = 2^256 - 1', publicKey: A, message: m, signature: sig(R, 2n ** 256n - 1n), expect: 's-non-canonical' },
    { name: 'S = 0', publicKey: A, message: m, signature: sig(R, 0n), expect: 'mismatch' },
    { name: 'another message', publicKey: A, message: new Uint8Array([1]), signature: valid, expect: 'mismatch' },
  ];
  const mixedAOk = grind(mixedA, R, (k) => k % 8n === 0n);
  cases.push({
    name: 'mixed-order A, k ≡ 0 mod 8 (the torsion part vanishes: both equations hold)',
    publicKey: mixedA,
    message: mixedAOk,
    signature: signWith(mixedA, R, mixedAOk),
    expect: null,
  });
  const mixedABad = grind(mixedA, R, (k) => k % 8n !== 0n);
  cases.push({
    name: 'mixed-order A, k ≢ 0 mod 8 (only the cofactored equation holds)',
    publicKey: mixedA,
    message: mixedABad,
    signature: signWith(mixedA, R, mixedABad),
    expect: 'mismatch',
  });
  cases.push({
    name: 'mixed-order R (only the cofactored equation holds)',
    publicKey: A,
    message: m,
    signature: signWith(A, mixedR, m),
    expect: 'mismatch',
  });
  // Every point of small order, as the key and as R, with and without the sign bit.
  for (let i = 0; i < 8; i++) {
    const point = i === 0 ? noble.Point.ZERO : T8.multiply(BigInt(i), false);
    for (const sign of [0, 0x80]) {
      const enc = point.toBytes();
      enc[31] = (enc[31]! & 0x7f) | sign;
      cases.push({ name: `small-order key ${i}T8 sign ${sign}`, publicKey: enc, message: m, signature: valid, expect: 'key-small-order' });
      cases.push({ name: `small-order R ${i}T8 sign ${sign}`, publicKey: A, message: m, signature: sig(enc, s), expect: 'r-small-order' });
    }
  }
  // Non-canonical y (p ≤ y < 2^255) for the key and for R.
  for (const y of [P, P + 1n, P + 2n, P + 5n, 2n ** 255n - 1n]) {
    cases.push({ name: `key with y = p + ${y - P}`, publicKey: le(y), message: m, signature: valid, expect: 'key-non-canonical' });
    cases.push({ name: `R with y = p + ${y - P}`, publicKey: A, message: m, signature: sig(le(y), s), expect: 'r-non-canonical' });
  }
  // A canonical y that is not on the curve (y = 2: (y² − 1)/(dy² + 1) is not a square).
  cases.push({ name: 'key not on the curve', publicKey: le(2n), message: m, signature: valid, expect: 'mismatch' });
  cases.push({ name: 'key of 31 bytes', publicKey: A.subarray(1), message: m, signature: valid, expect: 'key-length' });
  cases.push({ name: 'signature of 63 bytes', publicKey: A, message: m, signature: valid.subarray(1), expect: 'signature-length' });
  cases.push({ name: 'empty signature', publicKey: A, message: m, signature: new Uint8Array(0), expect: 'signature-length' });
  return cases;
}

function allCases(): EdgeCase[] {
  const fromSpeccheck = speccheck.map((c, i) => ({
    name: `speccheck ${i}: ${SPECCHECK_EXPECT[i]!.why}`,
    publicKey: fromHex(c.pub_key),
    message: fromHex(c.message),
    signature: fromHex(c.signature),
    expect: SPECCHECK_EXPECT[i]!.expect,
  }));
  return [...fromSpeccheck, ...constructedCases()];
}

test('ed25519: the speccheck table has its ten cases', () => {
  assert.lengthOf(speccheck, 10);
});

test('ed25519: this runtime offers the expected backends', () => {
  const names = ed25519Backends.map((b) => b.name);
  assert.include(names, 'noble');
  // Node, Deno and current Chromium all implement Ed25519 in WebCrypto; it is preferred there.
  assert.deepEqual(names, ['webcrypto', 'noble']);
  assert.equal(defaultEd25519Backend.name, 'webcrypto');
});

for (const backend of ed25519Backends) {
  test(`ed25519 [${backend.name}]: every edge case gets the rule's verdict, one by one and in a batch`, async () => {
    const cases = allCases();
    const verdicts = await Promise.all(cases.map((c) => checkSignature(c.publicKey, c.message, c.signature, backend)));
    const mismatches = cases.map((c, i) => ({ name: c.name, expected: c.expect, got: verdicts[i] })).filter((x) => x.expected !== x.got);
    assert.deepEqual(mismatches, []);
    const batch = await verifyBatch(cases, backend);
    assert.deepEqual(
      batch,
      cases.map((c) => c.expect === null),
    );
  });

  test(`ed25519 [${backend.name}]: RFC 8032 §7.1 vectors sign and verify`, async () => {
    for (const v of RFC8032) {
      const key = SigningKey.fromSeed(fromHex(v.seed), backend);
      assert.equal(toHex(key.publicKey), v.publicKey);
      const signature = await key.sign(fromHex(v.message));
      assert.equal(toHex(signature), v.signature);
      assert.isTrue(await verify(fromHex(v.publicKey), fromHex(v.message), signature, backend));
      const tampered = signature.slice();
      tampered[63]! ^= 0x01;
      assert.isFalse(await verify(fromHex(v.publicKey), fromHex(v.message), tampered, backend));
    }
  });
}

test("ed25519: the rule is needed — noble's own cofactored verify accepts what the rule rejects", async () => {
  const cases = allCases().filter((c) => c.name.startsWith('mixed-order A, k ≢') || c.name.startsWith('mixed-order R'));
  assert.lengthOf(cases, 2);
  for (const c of cases) {
    assert.isTrue(noble.verify(c.signature, c.message, c.publicKey), c.name);
    assert.isFalse(await verify(c.publicKey, c.message, c.signature), c.name);
  }
});

test("ed25519: every backend makes the same signatures and accepts the others'", async () => {
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ maxLength: 300 }), async (seed, message) => {
      const signatures = await Promise.all(ed25519Backends.map((b) => SigningKey.fromSeed(seed, b).sign(message)));
      for (const s of signatures) assert.equal(toHex(s), toHex(signatures[0]!));
      const publicKey = SigningKey.fromSeed(seed).publicKey;
      for (const b of ed25519Backends) assert.isTrue(await verify(publicKey, message, signatures[0]!, b));
    }),
    { numRuns: 25 },
  );
});

test('ed25519: random bit flips in key, message or signature never verify, on any backend', async () => {
  const key = SigningKey.generate();
  const message = new TextEncoder().encode('transfer 5 credits');
  const signature = await key.sign(message);
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(0, 1, 2), fc.nat(), fc.integer({ min: 0, max: 7 }), async (part, at, bit) => {
      const parts = [key.publicKey.slice(), message.slice(), signature.slice()];
      const target = parts[part]!;
      target[at % target.length]! ^= 1 << bit;
      for (const b of ed25519Backends) assert.isFalse(await verify(parts[0]!, parts[1]!, parts[2]!, b));
    }),
    { numRuns: 40 },
  );
});

test('ed25519: a batch of 1,024 gives each item its own verdict', async () => {
  const keys = Array.from({ length: 16 }, () => SigningKey.generate());
  const items = await Promise.all(
    Array.from({ length: 1024 }, async (_, i) => {
      const key = keys[i % keys.length]!;
      const message = new TextEncoder().encode(`tx ${i}`);
      return { publicKey: key.publicKey, message, signature: await key.sign(message) };
    }),
  );
  const bad = new Set([0, 7, 511, 1023]);
  for (const i of bad) items[i] = { ...items[i]!, message: new TextEncoder().encode('forged') };
  const verdicts = await verifyBatch(items);
  assert.deepEqual(
    verdicts,
    items.map((_, i) => !bad.has(i)),
  );
});

test('ed25519: verdicts stay right while the key cache fills, turns over and evicts', async () => {
  const signer = SigningKey.fromSeed(new Uint8Array(32).fill(7));
  const message = new TextEncoder().encode('still valid');
  const signature = await signer.sign(message);
  const item = { publicKey: signer.publicKey, message, signature };
  // 10,000 other keys (random bytes: some on the curve, some not) push the signer's key through
  // both cache generations and out.
  const strangers = Array.from({ length: 10_000 }, (_, i) => {
    const publicKey = crypto.getRandomValues(new Uint8Array(32));
    publicKey[31]! &= 0x7f;
    publicKey[0] = i & 0xff;
    return { publicKey, message, signature };
  });
  for (const backend of ed25519Backends.filter((b) => b.name === 'webcrypto')) {
    assert.deepEqual(await verifyBatch([item], backend), [true]);
    for (let i = 0; i < strangers.length; i += 2500) {
      const verdicts = await verifyBatch([item, ...strangers.slice(i, i + 2500), item], backend);
      assert.isTrue(verdicts[0]);
      assert.isTrue(verdicts.at(-1));
      assert.isFalse(verdicts.slice(1, -1).some(Boolean), 'no stranger verifies');
    }
    // The same key again, after eviction, and a forged message under it.
    assert.deepEqual(await verifyBatch([item, { ...item, message: new Uint8Array(3) }], backend), [true, false]);
  }
});

test('ed25519: parsePublicKey and parseSignature name what is wrong', () => {
  const key = SigningKey.fromSeed(new Uint8Array(32).fill(9));
  assert.strictEqual(parsePublicKey(key.publicKey), key.publicKey);
  rejects(() => parsePublicKey(new Uint8Array(31)), InvalidKeyError, 'length', /public key must be 32 bytes/);
  rejects(() => parsePublicKey(le(P + 3n)), InvalidKeyError, 'non-canonical');
  rejects(() => parsePublicKey(le(1n)), InvalidKeyError, 'small-order');
  rejects(() => parsePublicKey(le(2n)), InvalidKeyError, 'not-on-curve');

  const good = concatBytes(key.publicKey, le(5n));
  assert.strictEqual(parseSignature(good), good);
  rejects(() => parseSignature(new Uint8Array(65)), InvalidSignatureError, 'length', /signature must be 64 bytes/);
  rejects(() => parseSignature(concatBytes(le(P), le(5n))), InvalidSignatureError, 'r-non-canonical');
  rejects(() => parseSignature(concatBytes(le(0n), le(5n))), InvalidSignatureError, 'r-small-order');
  rejects(() => parseSignature(concatBytes(key.publicKey, le(L))), InvalidSignatureError, 's-non-canonical');
});

test('ed25519: wrong types and seed lengths get named errors, not bare TypeErrors', async () => {
  rejects(() => SigningKey.fromSeed(new Uint8Array(31)), InvalidKeyError, 'seed-length');
  rejects(() => SigningKey.fromSeed('00' as unknown as Uint8Array), WrongTypeError, 'not-bytes');
  rejects(() => parsePublicKey([1, 2] as unknown as Uint8Array), WrongTypeError, 'not-bytes');
  const key = SigningKey.generate();
  await rejectsAsync(() => verify(key.publicKey, 'hello' as unknown as Uint8Array, new Uint8Array(64)), WrongTypeError, 'not-bytes');
  await rejectsAsync(() => key.sign([1] as unknown as Uint8Array), WrongTypeError, 'not-bytes');
});

test('ed25519: exportSeed round-trips the identity and is a copy', () => {
  const key = SigningKey.generate();
  const seed = key.exportSeed();
  assert.equal(toHex(SigningKey.fromSeed(seed).publicKey), toHex(key.publicKey));
  seed.fill(0);
  assert.notEqual(toHex(key.exportSeed()), toHex(seed));
});
