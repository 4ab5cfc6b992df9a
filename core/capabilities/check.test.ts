// The rules a host checks a capability token by, case by case (the cases of the UCAN test suite
// where they apply): each broken rule is refused with its own code. Runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { chainWindow, checkChain, checkToken, refusal, widening } from './check.ts';
import { CapabilityError } from './errors.ts';
import { A, ALL, B, BOUNDED, C, chain, context, DEPLOY, H, KEYS, link, NETWORK, NOW, replaced, WINDOW, X } from './fixtures.test-util.ts';
import { type Allowance, CLOCK_SKEW_SECS, linkId, MAX_LINKS, type Token } from './token.ts';

function refused(token: Token, code: string, ctx = context(B), use = DEPLOY, message?: RegExp): Promise<unknown> {
  return rejectsAsync(() => checkToken(token, use, ctx), CapabilityError, code, message);
}

test('capabilities: a three-link chain H → A → B lets B deploy and kill on H', async () => {
  const token = await chain([H, A, B], [BOUNDED, BOUNDED]);
  await checkToken(token, DEPLOY, context(B));
  await checkToken(token, { command: 'kill', host: H.publicKey }, context(B));
  // A single link straight from the host, and a link from H to itself held by H, are chains too.
  await checkToken(await chain([H, B]), DEPLOY, context(B));
  await checkToken(await chain([H, H]), DEPLOY, context(H));
});

test('capabilities: a link that raises a bound, or grants a command its parent lacks, is widened', async () => {
  const killOnly = { ...BOUNDED, commands: ['kill'] };
  await refused(await chain([H, A, B], [killOnly, BOUNDED]), 'widened', context(B), DEPLOY, /link 1 widens link 0: it grants the command "deploy"/);
  for (const [field, value] of [
    ['cpu_cores', 5],
    ['mem_mb', 1025],
    ['duration_secs', 3601],
    ['bid', 10n ** 18n + 1n],
  ] as const) {
    await refused(
      await chain([H, A, B], [BOUNDED, { ...BOUNDED, [field]: value }]),
      'widened',
      context(B),
      DEPLOY,
      new RegExp(`its ${field} ≤ ${field === 'bid' ? '1\\.000000000000000001 credits' : value} is above`),
    );
  }
  await refused(
    await chain([H, A, B], [BOUNDED, { ...BOUNDED, images: ['docker.io/'] }]),
    'widened',
    context(B),
    DEPLOY,
    /image entry "docker.io\/" is not within/,
  );
  await refused(await chain([H, A, B], [BOUNDED, { ...BOUNDED, nodes: [H.publicKey, C.publicKey] }]), 'widened', context(B), DEPLOY, /names the host/);
  // Narrower in every field is fine, down to nothing at all.
  const narrower: Allowance = { commands: ['kill'], cpu_cores: 1, mem_mb: 64, duration_secs: 1, bid: 1n, images: ['localhost/busybox'], nodes: [H.publicKey] };
  await checkToken(await chain([H, A, B], [BOUNDED, narrower]), { command: 'kill', host: H.publicKey }, context(B));
  const nothing: Allowance = { commands: [], cpu_cores: 0, mem_mb: 0, duration_secs: 0, bid: 0n, images: [], nodes: [] };
  await checkChain(await chain([H, A, B], [BOUNDED, nothing]), NETWORK);
});

test('capabilities: dropping a bound the parent has is widened; a null in the parent bounds nothing', async () => {
  for (const field of ['cpu_cores', 'mem_mb', 'duration_secs', 'bid', 'images', 'nodes'] as const) {
    await refused(await chain([H, A, B], [BOUNDED, { ...BOUNDED, [field]: null }]), 'widened', context(B), DEPLOY);
  }
  assert.match(widening(BOUNDED, { ...BOUNDED, mem_mb: null })!, /drops its parent's bound mem_mb ≤ 1024/);
  assert.equal(widening(BOUNDED, { ...BOUNDED, bid: null }), "it drops its parent's bound bid ≤ 1 credits", 'a bid in credits, never base units');
  assert.equal(widening(BOUNDED, { ...BOUNDED, bid: 15n * 10n ** 17n }), "its bid ≤ 1.5 credits is above its parent's 1 credits");
  assert.isNull(widening(ALL, BOUNDED));
  assert.isNull(widening(BOUNDED, BOUNDED));
});

test('capabilities: a link not issued by the audience of the link before it is misaligned', async () => {
  const [first, second] = await chain([H, A, B]);
  const stray = await link(C, B);
  await refused([first!, stray], 'misaligned', context(B), DEPLOY, /link 1 is issued by .*, not by .*, the audience of link 0/);
  await refused([second!, first!], 'untrusted', context(B));
  const longer = await chain([H, A, B, C]);
  await refused([longer[0]!, longer[2]!], 'misaligned', context(C));
});

test('capabilities: a forged signature anywhere in the chain is refused as bad-signature', async () => {
  const token = await chain([H, A, B, C]);
  for (let i = 0; i < token.length; i++) {
    const sig = token[i]!.sig.slice();
    sig[5]! ^= 1;
    await refused(replaced(token, i, { ...token[i]!, sig }), 'bad-signature', context(C), DEPLOY, new RegExp(`the signature of link ${i} does not verify`));
  }
  // A link signed well but whose terms were changed afterwards.
  await refused(replaced(token, 1, { ...token[1]!, expiry: token[1]!.expiry + 1 }), 'bad-signature', context(C));
  // A signature made for another network.
  const { signLink } = await import('./token.ts');
  const other = await signLink(A, 'mesh', { audience: B.publicKey, allows: ALL, ...WINDOW, nonce: token[1]!.nonce });
  await refused(replaced(token, 1, other), 'bad-signature', context(C));
});

test('capabilities: before not-before and after expiry are refused, exactly 60 s of skew is accepted at both ends', async () => {
  assert.equal(CLOCK_SKEW_SECS, 60);
  const token = await chain([H, A, B]);
  const { notBefore, expiry } = chainWindow(token);
  await checkToken(token, DEPLOY, context(B, { nowSecs: notBefore - 60 }));
  await refused(token, 'not-yet-valid', context(B, { nowSecs: notBefore - 61 }), DEPLOY, /61 s from now/);
  await checkToken(token, DEPLOY, context(B, { nowSecs: expiry + 60 }));
  await refused(token, 'expired', context(B, { nowSecs: expiry + 61 }), DEPLOY, /61 s ago/);
  await refused(token, 'not-yet-valid', context(B, { nowSecs: 0 }));
});

test('capabilities: the window of a chain is the latest not-before to the earliest expiry of its links', async () => {
  const early = await link(H, A, ALL, { not_before: NOW - 1000, expiry: NOW + 100 });
  const late = await link(A, B, ALL, { not_before: NOW - 10, expiry: NOW + 1000 });
  const token = [early, late];
  assert.deepEqual(chainWindow(token), { notBefore: NOW - 10, expiry: NOW + 100 });
  await checkToken(token, DEPLOY, context(B, { nowSecs: NOW + 160 }));
  await refused(token, 'expired', context(B, { nowSecs: NOW + 161 }), DEPLOY, /expired at/);
  await refused(token, 'not-yet-valid', context(B, { nowSecs: NOW - 71 }));
});

test(`capabilities: a chain of ${MAX_LINKS} links passes, one of ${MAX_LINKS + 1} is too deep`, async () => {
  const deepest = await chain([H, ...KEYS.slice(0, MAX_LINKS)]);
  assert.lengthOf(deepest, MAX_LINKS);
  await checkToken(deepest, DEPLOY, context(KEYS[MAX_LINKS - 1]!));
  const deeper = await chain([H, ...KEYS.slice(0, MAX_LINKS + 1)]);
  await refused(deeper, 'too-deep', context(KEYS[MAX_LINKS]!), DEPLOY, /9 links, more than the 8/);
  await refused([], 'malformed');
});

test('capabilities: a revoked middle link makes every token through it fail, and only those', async () => {
  const token = await chain([H, A, B, C]);
  const middle = linkId(NETWORK, token[1]!);
  // Revoked by its issuer A: keyed by (issuer, link id).
  const revoked = (issuer: Uint8Array, id: Uint8Array): boolean => bytesEqual(issuer, A.publicKey) && bytesEqual(id, middle);
  await refused(token, 'revoked', context(C, { revoked }), DEPLOY, /link 1 was revoked on chain by its issuer/);
  await refused(token.slice(0, 2), 'revoked', context(B, { revoked }));
  // The link above it stands: H → A still lets A deploy.
  await checkToken(token.slice(0, 1), DEPLOY, context(A, { revoked }));
  // Another link from A to B, not revoked, still works.
  await checkToken([token[0]!, await link(A, B)], DEPLOY, context(B, { revoked }));
  // The same id revoked by someone other than its issuer means nothing.
  await checkToken(token, DEPLOY, context(C, { revoked: (issuer, id) => bytesEqual(issuer, B.publicKey) && bytesEqual(id, middle) }));
});

test('capabilities: a token rooted at a foreign key is untrusted, until that key is a configured root', async () => {
  const token = await chain([X, A, B]);
  await refused(token, 'untrusted', context(B), DEPLOY, /neither this host nor a configured root/);
  await checkToken(token, DEPLOY, context(B, { roots: [H.publicKey, X.publicKey] }));
  // A root's own key does not make a link below it a root.
  await refused((await chain([H, A, B])).slice(1), 'untrusted', context(B));
});

test('capabilities: a token presented by anyone but its last audience is refused', async () => {
  const token = await chain([H, A, B]);
  await refused(token, 'not-presenter', context(A), DEPLOY, /held by .*, not by .*, who presents it/);
  await refused(token, 'not-presenter', context(H));
  await refused(token, 'not-presenter', context(C));
});

test('capabilities: a use beyond the last link is not allowed: command, each bound, image, host', async () => {
  const token = await chain([H, A, B], [BOUNDED, { ...BOUNDED, commands: ['deploy'] }]);
  const cases: [Partial<typeof DEPLOY>, RegExp][] = [
    [{ command: 'kill' }, /does not allow kill/],
    [{ command: 'exec' }, /"exec" is not a command a token can allow/],
    [{ cpuCores: 5 }, /cpu_cores 5 is above the token's 4/],
    [{ memMb: 1025 }, /mem_mb 1025/],
    [{ durationSecs: 3601 }, /duration_secs 3601/],
    [{ bid: 10n ** 18n + 1n }, /bid 1\.000000000000000001 credits is above the token's 1 credits/],
    [{ image: 'docker.io/library/busybox' }, /not one the token allows/],
    [{ image: 'localhost/' }, /not one the token allows/],
    [{ host: C.publicKey }, /does not allow the host/],
  ];
  for (const [change, message] of cases) await refused(token, 'not-allowed', context(B), { ...DEPLOY, ...change }, message);
  // At the bounds exactly: allowed.
  await checkToken(token, { ...DEPLOY, cpuCores: 4, memMb: 1024, durationSecs: 3600, bid: 10n ** 18n, image: 'localhost/busybox:test' }, context(B));
  // A deploy must state what it asks for.
  const { image: _image, ...noImage } = DEPLOY;
  await refused(token, 'not-allowed', context(B), noImage, /a deploy must state image/);
  // An unknown command in a token is carried, but authorises nothing.
  const odd = await chain([H, B], [{ ...ALL, commands: ['deploy', 'exec'] }]);
  await checkToken(odd, DEPLOY, context(B));
  assert.match(refusal(odd[0]!.allows, { command: 'exec', host: H.publicKey })!, /not a command a token can allow/);
});

test('capabilities: the first rule broken is the one reported', async () => {
  // Foreign root and a forged signature: the root comes first.
  const foreign = await chain([X, A, B]);
  const sig = foreign[1]!.sig.slice();
  sig[0]! ^= 1;
  await refused(replaced(foreign, 1, { ...foreign[1]!, sig }), 'untrusted');
  // Forged and expired: the signature first.
  const token = await chain([H, A, B]);
  await refused(replaced(token, 1, { ...token[1]!, sig }), 'bad-signature', context(B, { nowSecs: NOW + 10_000 }));
  // Expired and presented by the wrong node: the window first.
  await refused(token, 'expired', context(C, { nowSecs: NOW + 10_000 }));
  // Revoked and not allowed: revoked first.
  await refused(token, 'revoked', context(B, { revoked: () => true }), { ...DEPLOY, command: 'exec' });
});

test('capabilities: every refusal carries its code as its reason, and the API status of the caller', async () => {
  const error = await refused(await chain([X, B]), 'untrusted');
  assert.instanceOf(error, CapabilityError);
  const e = error as CapabilityError;
  assert.equal(e.code, 'untrusted');
  assert.equal(e.status, 502);
  assert.equal(e.problem, 'peer-refused');
  const bad = new CapabilityError('malformed', 'x');
  assert.deepEqual([bad.code, bad.status, bad.problem], ['malformed', 400, 'bad-grant']);
});
