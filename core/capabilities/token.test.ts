// The capability token's format: one encoding per token, the text form, what decoding refuses, and
// link ids. Runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { rejects, rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { sha256 } from '../crypto/sha256.ts';
import { concatBytes } from '../encoding/bytes.ts';
import { encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { domainBytes } from '../ledger/domain.ts';
import { fromBase64Url, toBase64Url } from './base64url.ts';
import { CapabilityError } from './errors.ts';
import { A, ALL, B, BOUNDED, chain, H, KEYS, link, NETWORK, nonce, WINDOW } from './fixtures.test-util.ts';
import {
  decodeToken,
  encodeToken,
  type Link,
  linkCodec,
  linkId,
  MAX_LINK_BYTES,
  MAX_LINKS,
  MAX_TOKEN_BYTES,
  signLink,
  TOKEN_PREFIX,
  tokenBytes,
  unsignedLinkBytes,
} from './token.ts';

const malformed = (text: string, message?: RegExp): unknown => rejects(() => decodeToken(text), CapabilityError, 'malformed', message);
const textOf = (bytes: Uint8Array): string => TOKEN_PREFIX + toBase64Url(bytes);

test('base64url: round-trips every length, and refuses padding, stray bits, other alphabets', () => {
  for (let n = 0; n < 40; n++) {
    const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 89 + n * 7) & 0xff);
    const text = toBase64Url(bytes);
    assert.notMatch(text, /[=+/]/);
    assert.deepEqual(fromBase64Url(text), bytes, `${n} bytes`);
  }
  assert.equal(toBase64Url(Uint8Array.of(0xfb, 0xff)), '-_8');
  assert.equal(toBase64Url(new TextEncoder().encode('foobar')), 'Zm9vYmFy');
  for (const bad of ['Zg==', 'Zh', 'Zm9', 'Zm9vY', '+/8', 'Zm 9v', 'Zm9v\n', 'Zm9vYmFyé', 'A']) assert.isNull(fromBase64Url(bad), bad);
  assert.deepEqual(fromBase64Url('Zg'), new TextEncoder().encode('f'));
  assert.deepEqual(fromBase64Url('Zm8'), new TextEncoder().encode('fo'));
});

test('token: encode and decode round-trip, and the text form is the prefix and base64url of the canonical bytes', async () => {
  const token = await chain([H, A, B], [BOUNDED, { ...BOUNDED, commands: ['kill'], images: ['localhost/busybox', 'localhost/alpine'] }]);
  const text = encodeToken(token);
  assert.isTrue(text.startsWith('mcap1.'));
  assert.match(text.slice(6), /^[A-Za-z0-9_-]+$/);
  assert.equal(text, TOKEN_PREFIX + toBase64Url(tokenBytes(token)));
  assert.deepEqual(decodeToken(text), token);
  assert.equal(encodeToken(decodeToken(text)), text);
});

test('token: the bytes are the link count, then each link field by field as the codec writes them', async () => {
  const l = await link(H, A, BOUNDED);
  const bytes = tokenBytes([l]);
  assert.deepEqual(bytes.subarray(0, 4), Uint8Array.of(0, 0, 0, 1));
  assert.deepEqual(bytes.subarray(4, 36), H.publicKey, 'issuer');
  assert.deepEqual(bytes.subarray(36, 68), A.publicKey, 'audience');
  // commands: a u32 count, then each as a u32 length and UTF-8, ascending by encoding (kill, 4 bytes, before deploy, 6).
  assert.deepEqual(bytes.subarray(68, 72), Uint8Array.of(0, 0, 0, 2));
  assert.equal(new TextDecoder().decode(bytes.subarray(76, 80)), 'kill');
  assert.deepEqual(l.allows.commands, ['kill', 'deploy'], 'signLink sorts the sets');
  // cpu_cores: option tag 1, then a u16.
  assert.deepEqual(bytes.subarray(90, 93), Uint8Array.of(1, 0, 4));
  // The signed link is its unsigned bytes and then the signature.
  assert.deepEqual(bytes.subarray(4), concatBytes(unsignedLinkBytes(l), l.sig));
  assert.deepEqual(bytes.subarray(bytes.length - 64), l.sig);
});

test('token: a link id is SHA-256 of the domain-tagged signed link, distinct per link', async () => {
  const [first, second] = await chain([H, A, B]);
  const expected = sha256(domainBytes('mesh/capability-id/1', NETWORK, encode(linkCodec, first as never)));
  assert.equal(toHex(linkId(NETWORK, first!)), toHex(expected));
  assert.lengthOf(linkId(NETWORK, first!), 32);
  assert.notEqual(toHex(linkId(NETWORK, first!)), toHex(linkId(NETWORK, second!)));
  assert.notEqual(toHex(linkId(NETWORK, first!)), toHex(linkId('mesh', first!)), 'the network is part of the id');
  // The same terms with another nonce are another link.
  const again = await signLink(H, NETWORK, { audience: A.publicKey, allows: first!.allows, ...WINDOW, nonce: nonce() });
  assert.notEqual(toHex(linkId(NETWORK, again)), toHex(linkId(NETWORK, first!)));
});

test('token: decode refuses non-canonical bytes: unsorted or repeated sets, bad option tags, trailing bytes, truncation', async () => {
  const l = await link(H, A, BOUNDED);
  const good = tokenBytes([l]);
  // Swap the two commands (kill, deploy) into deploy, kill: same set, another order.
  const swapped = good.slice();
  const deploy = concatBytes(Uint8Array.of(0, 0, 0, 6), new TextEncoder().encode('deploy'));
  const kill = concatBytes(Uint8Array.of(0, 0, 0, 4), new TextEncoder().encode('kill'));
  swapped.set(concatBytes(deploy, kill), 72);
  malformed(textOf(swapped), /not-sorted|sorts before/);
  const twice = good.slice();
  twice.set(concatBytes(kill, Uint8Array.of(0, 0, 0, 4), new TextEncoder().encode('kill'), Uint8Array.of(0, 0)), 72);
  malformed(textOf(twice));
  const tag = good.slice();
  tag[90] = 2;
  malformed(textOf(tag), /option tag/);
  malformed(textOf(concatBytes(good, Uint8Array.of(0))), /trailing/);
  malformed(textOf(good.subarray(0, good.length - 1)), /remain/);
  malformed(textOf(Uint8Array.of(0, 0, 0, 0)), /at least one link/);
  malformed(textOf(new Uint8Array(0)));
});

test('token: decode refuses a wrong prefix, bad base64url, a link valid never, and anything too long', async () => {
  const text = encodeToken(await chain([H, A]));
  malformed(text.slice(TOKEN_PREFIX.length), /starts with mcap1\./);
  malformed(`mcap2.${text.slice(6)}`);
  malformed(`${text}=`, /base64url/);
  malformed(`${text.slice(0, 20)} ${text.slice(20)}`);
  malformed(`${text}A`);
  malformed(42 as unknown as string, /a token is a string/);
  await rejectsAsync(
    () => signLink(H, NETWORK, { audience: A.publicKey, allows: ALL, not_before: 10, expiry: 9, nonce: nonce() }),
    CapabilityError,
    'malformed',
    /valid never/,
  );
  // A validly signed link whose window is reversed cannot be signed, so it is built by hand.
  const l = await link(H, A);
  const reversed: Link = { ...l, not_before: l.expiry + 1 };
  malformed(encodeToken([reversed]), /link 0 is valid never/);
  malformed(TOKEN_PREFIX + 'A'.repeat(Math.ceil((MAX_TOKEN_BYTES * 4) / 3) + 4), /longer than any token/);
});

test(`token: decode refuses more than ${MAX_LINKS} links as too-deep; the format's largest token decodes`, async () => {
  const deeper = await chain([H, ...KEYS.slice(0, MAX_LINKS + 1)]);
  rejects(() => encodeToken(deeper), CapabilityError, 'too-deep');
  const bytes = concatBytes(Uint8Array.of(0, 0, 0, MAX_LINKS + 1), ...deeper.map((l) => encode(linkCodec, l as never)));
  rejects(() => decodeToken(textOf(bytes)), CapabilityError, 'too-deep', /declares 9 links/);
  rejects(() => decodeToken(textOf(Uint8Array.of(0xff, 0xff, 0xff, 0xff))), CapabilityError, 'too-deep');
  // Every field at its bound: 16 commands of 32 bytes, 16 image prefixes of 255 bytes, 64 nodes.
  const widest = {
    commands: Array.from({ length: 16 }, (_, i) => `${String.fromCharCode(97 + i)}`.repeat(32)),
    cpu_cores: 65_535,
    mem_mb: 0xffff_ffff,
    duration_secs: 0xffff_ffff,
    bid: 2n ** 128n - 1n,
    images: Array.from({ length: 16 }, (_, i) => `${String.fromCharCode(97 + i)}`.repeat(255)),
    nodes: Array.from({ length: 64 }, (_, i) => new Uint8Array(32).fill(i)),
  };
  const keys = [H, ...KEYS.slice(0, MAX_LINKS)];
  const largest: Link[] = [];
  for (let i = 0; i < MAX_LINKS; i++)
    largest.push(await signLink(keys[i]!, NETWORK, { audience: keys[i + 1]!.publicKey, allows: widest, ...WINDOW, nonce: nonce() }));
  assert.equal(tokenBytes(largest).length, MAX_TOKEN_BYTES);
  assert.equal(encode(linkCodec, largest[0] as never).length, MAX_LINK_BYTES);
  assert.deepEqual(decodeToken(encodeToken(largest)), largest);
  // One past any bound does not sign.
  for (const change of [
    { commands: [...widest.commands, 'q'] },
    { commands: ['x'.repeat(33)] },
    { images: ['x'.repeat(256)] },
    { images: [...widest.images, 'q'] },
    { nodes: [...widest.nodes, new Uint8Array(32).fill(200)] },
    { cpu_cores: 65_536 },
    { bid: 2n ** 128n },
  ]) {
    await rejectsAsync(
      () => signLink(H, NETWORK, { audience: A.publicKey, allows: { ...widest, ...change }, ...WINDOW, nonce: nonce() }),
      CapabilityError,
      'malformed',
    );
  }
  await rejectsAsync(
    () => signLink(H, NETWORK, { audience: A.publicKey, allows: ALL, ...WINDOW, nonce: new Uint8Array(15) }),
    CapabilityError,
    'malformed',
    /nonce/,
  );
});

test('token: signLink puts sets in their one order and drops repeats, so equal allowances encode equally', async () => {
  const n = nonce();
  const messy = await signLink(H, NETWORK, {
    audience: A.publicKey,
    allows: {
      ...BOUNDED,
      commands: ['kill', 'deploy', 'kill'],
      images: ['localhost/b', 'localhost/', 'localhost/b'],
      nodes: [B.publicKey, H.publicKey, B.publicKey],
    },
    ...WINDOW,
    nonce: n,
  });
  const tidy = await signLink(H, NETWORK, {
    audience: A.publicKey,
    allows: { ...BOUNDED, commands: ['deploy', 'kill'], images: ['localhost/', 'localhost/b'], nodes: [H.publicKey, B.publicKey] },
    ...WINDOW,
    nonce: n,
  });
  assert.equal(encodeToken([messy]), encodeToken([tidy]));
  assert.lengthOf(messy.allows.nodes!, 2);
});
