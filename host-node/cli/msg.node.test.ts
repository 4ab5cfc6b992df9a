/**
 * `mesh msg` and `mesh names` in-process against the node's real HTTP API (createNodeApi served by
 * serveFetch) over the fake messaging and names: what each command sends, prints and exits with.
 * test/messaging.node.test.ts runs them against real devnet nodes.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CLAIM_TX, INBOX_EVENT, inboxEvent, NAME, PEER, PUBLISH_ID } from '../../core/api/fake-messaging.test-util.ts';
import { FakeNode } from '../../core/api/fake-node.test-util.ts';
import { MessagingError } from '../../core/messaging/errors.ts';
import { RequestTimeoutError } from '../../core/net/errors.ts';
import type { Command } from './command.ts';
import { type FakeApi, serveFakeApi } from './fake-api.test-util.ts';
import { formatEvent, msgCommand, printable } from './msg.ts';
import { namesCommand } from './names.ts';

const REPLY_TOKEN = '5e'.repeat(16);
let api: FakeApi;
let node: FakeNode;

before(async () => {
  api = await serveFakeApi();
});
after(() => api.close());

/** Runs `mesh <cmd> …args` on a fresh fake (or `fresh`); its exit code and output. */
async function mesh(
  cmd: Command,
  path: string,
  args: string[],
  fresh: FakeNode = new FakeNode(),
  input?: string,
): Promise<{ code: number; out: string; err: string }> {
  node = fresh;
  return api.run(cmd, path, [...args, ...api.common], fresh, input);
}

const msg = (args: string[], fresh?: FakeNode, input?: string) => mesh(msgCommand, 'mesh msg', args, fresh, input);
const names = (args: string[], fresh?: FakeNode) => mesh(namesCommand, 'mesh names', args, fresh);

test('mesh msg send sends text as its UTF-8 bytes, or hex with --hex, to a node id or a name, and prints the seq', async () => {
  const sent = await msg(['send', PEER, 'chat', 'héllo world']);
  assert.equal(sent.code, 0, sent.err);
  assert.equal(sent.out, '9\n');
  assert.equal(sent.err, `queued on ${PEER}\n`);
  assert.deepEqual(node.messaging.calls, [{ method: 'sendMessage', args: [PEER, 'chat', Buffer.from('héllo world').toString('hex')] }]);
  const hex = await msg(['send', 'peer-one', 'chat', '00FF', '--hex', '--json']);
  assert.equal(hex.code, 0, hex.err);
  assert.deepEqual(JSON.parse(hex.out), { to: PEER, topic: 'chat', seq: 9 });
  assert.deepEqual(node.messaging.calls[0]!.args, ['peer-one', 'chat', '00ff']);
});

test('mesh msg send - sends every line of standard input as a message, in order and in batches, and prints each seq', async () => {
  const lines = Array.from({ length: 300 }, (_, i) => `line ${i}`);
  const sent = await msg(['send', PEER, 'chat', '-'], undefined, `${lines.join('\n')}\n`);
  assert.equal(sent.code, 0, sent.err);
  assert.equal(sent.err, `queued 300 messages on ${PEER}\n`);
  const calls = node.messaging.calls;
  assert.deepEqual(
    calls.map((c) => c.method),
    ['sendMessages'],
    'one batch: 300 short lines fit',
  );
  const sentLines = (calls[0]!.args[1] as { topic: string; payload_hex: string }[]).map((m) => Buffer.from(m.payload_hex, 'hex').toString());
  assert.deepEqual(sentLines, lines);
  assert.deepEqual(
    sent.out.trim().split('\n').map(Number),
    Array.from({ length: 300 }, (_, i) => 10 + i),
  );
  // With --hex, each line is hex; a line that is not stops there, after what came before was queued.
  const hex = await msg(['send', PEER, 'chat', '-', '--hex'], undefined, '00ff\r\nzz\n0102\n');
  assert.equal(hex.code, 1, hex.err);
  assert.match(hex.err, /^mesh msg send: line 2: with --hex, a line must be hex of whole bytes, got "zz" \(the first 1 lines were queued\)\n$/);
  assert.deepEqual(
    node.messaging.calls.map((c) => c.args[1]),
    [[{ topic: 'chat', payload_hex: '00ff' }]],
  );
  // Over 1 MiB of lines is more than one batch; an empty input sends nothing.
  const big = await msg(['send', PEER, 'chat', '-'], undefined, `${'x'.repeat(60_000)}\n`.repeat(40));
  assert.equal(big.code, 0, big.err);
  assert.deepEqual(
    node.messaging.calls.map((c) => (c.args[1] as unknown[]).length),
    [17, 17, 6],
  );
  const none = await msg(['send', PEER, 'chat', '-'], undefined, '');
  assert.equal(none.code, 0, none.err);
  assert.deepEqual(node.messaging.calls, []);
  assert.equal(none.err, `queued 0 messages on ${PEER}\n`);
});

test('mesh msg refuses a bad recipient, topic, hex payload or token with exit 2, before asking the node', async () => {
  const cases: [string[], RegExp][] = [
    [['send', PEER.toUpperCase(), 'chat', 'x'], /<to> must be a node id \(64 lowercase hex characters\) or a name/],
    [['send', 'n'.repeat(33), 'chat', 'x'], /<to> must be a node id/],
    [['send', PEER, 'two words', 'x'], /<topic> must be an app topic/],
    [['send', PEER, 'chat', 'abc', '--hex'], /<payload> with --hex must be hex of whole bytes/],
    [['request', PEER, 'chat', 'x', '--timeout-ms', '60001'], /--timeout-ms takes an integer from 1 to 60000/],
    [['reply', 'abc', 'x'], /<reply-token> must be a reply token/],
    [['publish', '', 'x'], /empty|<topic>/],
  ];
  for (const [args, message] of cases) {
    const fresh = new FakeNode();
    const refused = await msg(args, fresh);
    assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.err}`);
    assert.match(refused.err, message, args.join(' '));
    assert.deepEqual(fresh.messaging.calls, [], args.join(' '));
  }
});

test('mesh msg request prints the reply as text when printable, else hex; a timeout is one line and exit 1', async () => {
  const asked = await msg(['request', PEER, 'rpc', 'ping', '--timeout-ms', '2500']);
  assert.equal(asked.code, 0, asked.err);
  assert.equal(asked.out, 'ff00\n', 'not UTF-8: shown as hex');
  assert.deepEqual(node.messaging.calls[0]!.args, [PEER, 'rpc', '70696e67', 2_500]);
  const fresh = new FakeNode();
  fresh.messaging.failure = new RequestTimeoutError(PEER, '/mesh/rpc/1/app.request', 2_500);
  const late = await msg(['request', PEER, 'rpc', 'ping'], fresh);
  assert.equal(late.code, 1);
  assert.match(late.err, /^mesh msg request: No answer from the peer in time \(504\): .*may still have processed the request\n$/);
});

test('mesh msg reply answers by token; a refused reply is one line and exit 1', async () => {
  const replied = await msg(['reply', REPLY_TOKEN, 'pong']);
  assert.equal(replied.code, 0, replied.err);
  assert.deepEqual(node.messaging.calls, [{ method: 'replyMessage', args: [REPLY_TOKEN, '706f6e67'] }]);
  for (const [code, line] of [
    ['reply-too-late', /Request no longer waiting for a reply \(410\)/],
    ['already-replied', /Request already answered \(409\)/],
    ['unknown-reply-token', /Unknown reply token \(404\)/],
  ] as const) {
    const fresh = new FakeNode();
    fresh.messaging.failure = new MessagingError(code, 'refused');
    const refused = await msg(['reply', REPLY_TOKEN, 'x'], fresh);
    assert.equal(refused.code, 1);
    assert.match(refused.err, line);
  }
});

test('mesh msg subscribe and publish', async () => {
  const sub = await msg(['subscribe', 'news']);
  assert.equal(sub.code, 0, sub.err);
  assert.equal(sub.err, 'subscribed to news (1 topic)\n');
  const pub = await msg(['publish', 'news', 'headline']);
  assert.equal(pub.code, 0, pub.err);
  assert.equal(pub.out, `${PUBLISH_ID}\n`);
  assert.equal(pub.err, 'published to 2 peers\n');
  const fresh = new FakeNode();
  fresh.messaging.failure = new MessagingError('no-peers', 'no connected peer is subscribed to mesh-app/news; nothing was sent');
  const nobody = await msg(['publish', 'news', 'x'], fresh);
  assert.equal(nobody.code, 1);
  assert.match(nobody.err, /No peer subscribed to the topic \(503\)/);
});

test('mesh msg listen prints one line per message, or JSON lines, filtered by topic, until --count', async () => {
  const fresh = new FakeNode();
  fresh.messaging.events = [INBOX_EVENT, inboxEvent({ seq: 4, payload: new Uint8Array([0]) })];
  const replayed = await msg(['listen', '--after', '0', '--count', '2'], fresh);
  assert.equal(replayed.code, 0, replayed.err);
  assert.equal(replayed.out, `3 message ${PEER} chat - "hi"\n4 message ${PEER} chat - 0x00\n`);
  // Live: the test emits through the follower once the command has connected.
  const live = new FakeNode();
  const running = msg(['listen', '--topic', 'chat', '--count', '1', '--json'], live);
  while (live.messaging.followers.size === 0) await new Promise((r) => setTimeout(r, 10));
  const [follower] = live.messaging.followers;
  assert.deepEqual([follower!.after, follower!.topic], [null, 'chat']);
  const request = inboxEvent({ seq: 7, kind: 'request', reply_token: REPLY_TOKEN });
  follower!.listener(request);
  const done = await running;
  assert.equal(done.code, 0, done.err);
  assert.deepEqual(JSON.parse(done.out), request.toJSON());
  assert.equal(formatEvent(request.toJSON()), `7 request ${PEER} chat ${REPLY_TOKEN} "hi"\n`);
});

test('payloads are shown as text only when they are UTF-8 without control characters', () => {
  assert.equal(printable(Buffer.from('héllo "x"').toString('hex')), 'héllo "x"');
  assert.equal(printable(''), '');
  for (const bytes of ['line\nbreak', 'tab\there', '\u0000', '\u007f'])
    assert.equal(printable(Buffer.from(bytes).toString('hex')), null, JSON.stringify(bytes));
  assert.equal(printable('c328'), null, 'not UTF-8');
});

test('mesh names claim, resolve and ls; a bad name is exit 2, an unknown one exit 1', async () => {
  const claimed = await names(['claim', 'peer-one']);
  assert.equal(claimed.code, 0, claimed.err);
  assert.equal(claimed.out, `${CLAIM_TX}\n`);
  const resolved = await names(['resolve', 'peer-one']);
  assert.equal(resolved.out, `${PEER}\n`);
  const json = await names(['resolve', 'peer-one', '--json']);
  assert.deepEqual(JSON.parse(json.out), NAME);
  const unknown = await names(['resolve', 'nobody']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /^mesh names resolve: Unknown name \(404\): /);
  const listed = await names(['ls', '--owner', PEER]);
  assert.equal(listed.out, `peer-one  ${PEER}  until 210007\n`);
  assert.deepEqual(node.messaging.calls, [{ method: 'listNames', args: [PEER] }]);
  const none = await names(['ls', '--owner', '0a'.repeat(32)]);
  assert.equal(none.err, 'no names\n');
  for (const args of [
    ['claim', 'Alice'],
    ['claim', 'n'.repeat(33)],
    ['resolve', 'a_b'],
    ['ls', '--owner', 'peer-one'],
  ]) {
    const fresh = new FakeNode();
    const refused = await names(args, fresh);
    assert.equal(refused.code, 2, args.join(' '));
    assert.deepEqual(fresh.messaging.calls, []);
  }
});
