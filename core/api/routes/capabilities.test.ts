// POST /capabilities/revoke and POST /trust on a real FullNode in memory (memory bus, manual clock,
// memory chain): the revocation or trust change is pooled, mined, and then seen in the chain's
// state, by checkToken as much as by the routes' own conflict answers. Runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { rejectsAsync } from '../../../test/assert.ts';
import { test } from '../../../test/harness.ts';
import { toBase64Url } from '../../capabilities/base64url.ts';
import { checkToken } from '../../capabilities/check.ts';
import { CapabilityError } from '../../capabilities/errors.ts';
import { A, B, BOUNDED, C, chain, context, DEPLOY, H, KEYS, link } from '../../capabilities/fixtures.test-util.ts';
import { encodeToken, linkId, MAX_LINKS, TOKEN_PREFIX, type Token, tokenBytes } from '../../capabilities/token.ts';
import type { Chain } from '../../chain/chain.ts';
import { mine, openChain } from '../../chain/testnet.test-util.ts';
import { toHex } from '../../encoding/hex.ts';
import { MemoryBus } from '../../net/memory.test-util.ts';
import type { FullNode } from '../../node/node.test-util.ts';
import { startNode } from '../../node/node.test-util.ts';
import { testScheduler } from '../../time/scheduler.test-util.ts';
import { AUTH, BAD_IDS, JSON_POST, ok, post, problem, TOKEN } from '../api.test-util.ts';
import { createNodeApi } from '../handler.ts';

interface Live {
  readonly node: FullNode;
  readonly chain: Chain;
  readonly api: (request: Request) => Promise<Response>;
  /** Mines one block with what the node pooled. */
  readonly block: () => Promise<void>;
}

/** H's node, not mining, over a fresh chain; `run` gets it and the API over it. */
async function withNode(run: (live: Live) => Promise<void>): Promise<void> {
  const chain = await openChain();
  const node = await startNode(new MemoryBus(), chain, H, testScheduler());
  const api = createNodeApi({ services: node.services, token: TOKEN });
  try {
    await run({ node, chain, api, block: async () => void (await mine(chain, H, 1, node.mempool)) });
  } finally {
    await node.stop();
  }
}

const revoke = (body: unknown, headers: Record<string, string> = JSON_POST): Request => post('/capabilities/revoke', body, headers);
const trust = (body: unknown, headers: Record<string, string> = JSON_POST): Request => post('/trust', body, headers);

/** H's node checking `token` held by `holder`, against its chain's revocations. */
function checkOnChain(live: Live, token: Token, holder = B): Promise<void> {
  return checkToken(token, DEPLOY, context(holder, { revoked: (issuer, id) => live.chain.state.revoked(issuer, id) !== undefined }));
}

test('capabilities API: POST /capabilities/revoke pools RevokeCapability of the link this node issued; once mined, the token is refused', async () => {
  await withNode(async (live) => {
    const token = await chain([H, A, B], [BOUNDED, BOUNDED]);
    await checkOnChain(live, token);
    const id = toHex(linkId('mesh-devnet', token[0]!));
    const answer = await ok<{ token_id: string; tx_id: string }>(await live.api(revoke({ token: encodeToken(token) })), 202);
    assert.equal(answer.token_id, id);
    assert.match(answer.tx_id, /^[0-9a-f]{64}$/);
    const pooled = live.node.mempool.queueOf(H.publicKey);
    assert.deepEqual(
      pooled.map((tx) => [toHex(tx.id), tx.body.kind]),
      [[answer.tx_id, 'RevokeCapability']],
    );
    // Pooled, not yet mined: asking again is a conflict, and nothing more is pooled.
    const waiting = await problem(await live.api(revoke({ token: encodeToken(token) })), 409);
    assert.equal(waiting.type, '/problems/already-revoked');
    assert.match(waiting.detail, /waits in the pool/);
    await live.block();
    assert.isDefined(live.chain.state.revoked(H.publicKey, linkId('mesh-devnet', token[0]!)));
    await rejectsAsync(() => checkOnChain(live, token), CapabilityError, 'revoked', /link 0 was revoked/);
    const again = await problem(await live.api(revoke({ token: encodeToken(token) })), 409);
    assert.equal(again.type, '/problems/already-revoked');
    assert.equal(again.rule, 'already-revoked');
    assert.match(again.detail, /revoked at height 1/);
    assert.lengthOf(live.node.mempool.queueOf(H.publicKey), 0);
  });
});

test('capabilities API: revoking needs a link this node issued and signed; `link` picks one when it issued several', async () => {
  await withNode(async (live) => {
    const foreign = await chain([A, B, C]);
    const none = await problem(await live.api(revoke({ token: encodeToken(foreign) })), 400);
    assert.equal(none.rule, 'not-issuer');
    assert.match(none.detail, /no link of the token was issued by this node/);
    // A link naming this node as issuer, signed by another key, is not this node's.
    const forged = await link(A, B);
    const claimed = await problem(await live.api(revoke({ token: encodeToken([{ ...forged, issuer: H.publicKey }]) })), 400);
    assert.equal(claimed.rule, 'not-issuer');
    // H issued links 0 and 2 of H → A → H → B.
    const token = [await link(H, A), await link(A, H), await link(H, B)];
    const which = await problem(await live.api(revoke({ token: encodeToken(token) })), 400);
    assert.equal(which.rule, 'link-required');
    assert.match(which.detail, /links 0, 2/);
    const notMine = await problem(await live.api(revoke({ token: encodeToken(token), link: 1 })), 400);
    assert.equal(notMine.rule, 'not-issuer');
    assert.match(notMine.detail, /link 1 of the token was not issued by this node/);
    const beyond = await problem(await live.api(revoke({ token: encodeToken(token), link: 5 })), 400);
    assert.equal(beyond.rule, 'not-issuer');
    const answer = await ok<{ token_id: string }>(await live.api(revoke({ token: encodeToken(token), link: 2 })), 202);
    assert.equal(answer.token_id, toHex(linkId('mesh-devnet', token[2]!)));
    await live.block();
    // Link 0 still stands: H → A is good, H → A → H → B is not.
    await checkOnChain(live, token.slice(0, 1), A);
    await rejectsAsync(() => checkOnChain(live, token), CapabilityError, 'revoked', /link 2/);
    assert.equal(
      (await ok<{ token_id: string }>(await live.api(revoke({ token: encodeToken(token), link: 0 })), 202)).token_id,
      toHex(linkId('mesh-devnet', token[0]!)),
    );
  });
});

test('capabilities API: a malformed or too deep token is 400 bad-grant; a bad body is 400 invalid-body; no token, 401', async () => {
  await withNode(async (live) => {
    const token = encodeToken(await chain([H, A]));
    for (const text of ['x', `${token}=`, token.slice(TOKEN_PREFIX.length), `${TOKEN_PREFIX}${toBase64Url(tokenBytes(await chain([H, A])))}AA`]) {
      const p = await problem(await live.api(revoke({ token: text })), 400);
      assert.equal(p.type, '/problems/bad-grant', text);
      assert.equal(p.rule, 'malformed');
    }
    const deep = [...tokenBytes(await chain([H, ...KEYS.slice(0, MAX_LINKS)]))];
    deep[3] = MAX_LINKS + 1;
    const tooDeep = await problem(await live.api(revoke({ token: TOKEN_PREFIX + toBase64Url(Uint8Array.from(deep)) })), 400);
    assert.equal(tooDeep.type, '/problems/bad-grant');
    assert.equal(tooDeep.rule, 'too-deep');
    const bodies: [unknown, string][] = [
      [{}, 'token'],
      [{ token: '' }, 'token'],
      [{ token: 5 }, 'token'],
      [{ token, link: -1 }, 'link'],
      [{ token, link: MAX_LINKS }, 'link'],
      [{ token, link: 1.5 }, 'link'],
      [{ token, extra: 1 }, 'extra'],
    ];
    for (const [body, field] of bodies) {
      const p = await problem(await live.api(revoke(body)), 400);
      assert.equal(p.type, '/problems/invalid-body', JSON.stringify(body));
      assert.deepEqual(
        (p.errors as { name: string }[]).map((e) => e.name),
        [field],
        JSON.stringify(body),
      );
    }
    await problem(await live.api(revoke({ token }, { 'content-type': 'application/json' })), 401);
    await problem(await live.api(new Request('http://127.0.0.1:8844/capabilities/revoke', { headers: AUTH })), 405);
    assert.lengthOf(live.node.mempool.queueOf(H.publicKey), 0, 'nothing refused reached the pool');
  });
});

test("capabilities API: POST /trust grants and withdraws this node's admin trust; the chain records it once mined", async () => {
  await withNode(async (live) => {
    const subject = toHex(A.publicKey);
    const granted = await ok<{ tx_id: string }>(await live.api(trust({ node_id: subject, trusted: true })), 202);
    assert.deepEqual(
      live.node.mempool.queueOf(H.publicKey).map((tx) => [toHex(tx.id), tx.body.kind]),
      [[granted.tx_id, 'TrustGrant']],
    );
    const pending = await problem(await live.api(trust({ node_id: subject, trusted: true })), 409);
    assert.equal(pending.type, '/problems/trust-unchanged');
    assert.match(pending.detail, /once its pooled TrustGrant is in a block/);
    await live.block();
    assert.equal(live.chain.state.trust(H.publicKey, A.publicKey), 1);
    const again = await problem(await live.api(trust({ node_id: subject, trusted: true })), 409);
    assert.match(again.detail, /trusts .* since height 1/);
    await ok(await live.api(trust({ node_id: subject, trusted: false })), 202);
    await live.block();
    assert.isUndefined(live.chain.state.trust(H.publicKey, A.publicKey));
    const gone = await problem(await live.api(trust({ node_id: subject, trusted: false })), 409);
    assert.equal(gone.rule, 'trust-unchanged');
    assert.match(gone.detail, /does not trust/);
    // Withdrawn and granted again in the pool: the latest pooled change is what counts.
    await ok(await live.api(trust({ node_id: subject, trusted: true })), 202);
    await ok(await live.api(trust({ node_id: subject, trusted: false })), 202);
    await problem(await live.api(trust({ node_id: subject, trusted: false })), 409);
    await live.block();
    assert.isUndefined(live.chain.state.trust(H.publicKey, A.publicKey));
  });
});

test('capabilities API: POST /trust refuses this node itself, bad ids and bad bodies with 400', async () => {
  await withNode(async (live) => {
    const self = await problem(await live.api(trust({ node_id: toHex(H.publicKey), trusted: true })), 400);
    assert.equal(self.rule, 'trust-self');
    for (const [what, id] of BAD_IDS) {
      const p = await problem(await live.api(trust({ node_id: id, trusted: true })), 400);
      assert.deepEqual(
        (p.errors as { name: string }[]).map((e) => e.name),
        ['node_id'],
        what,
      );
    }
    for (const body of [{ node_id: toHex(A.publicKey) }, { node_id: toHex(A.publicKey), trusted: 'yes' }, { trusted: true }]) {
      assert.equal((await problem(await live.api(trust(body)), 400)).type, '/problems/invalid-body');
    }
    assert.lengthOf(live.node.mempool.queueOf(H.publicKey), 0);
  });
});
