/**
 * App messaging and names end to end: real `mesh node --devnet` processes on loopback. A mines (so
 * it has credits) and the others bootstrap from it; B, C and D subscribe to a topic. A libp2p peer
 * in this process (X) speaks the messaging protocol by hand: it forges senders and replays
 * publishes. Through the HTTP API, and through `mesh msg`, `mesh names` and `mesh send` as a user
 * types them.
 */

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { batchBytesCodec, type InboxFrame, inboxFramesOf } from '../core/api/routes/messaging.ts';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { decode, encode } from '../core/encoding/codec.ts';
import { fromHex, toHex } from '../core/encoding/hex.ts';
import { devnet } from '../core/ledger/params.ts';
import { laneExchange } from '../core/messaging/lane.test-util.ts';
import { appMessageCodec, pubSubBodyCodec, signPubSub } from '../core/messaging/wire.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { appTopic } from '../core/net/network.ts';
import { startP2PNetwork } from '../host-node/p2p.ts';
import { type EventStream, getJson, type MeshProcess, openStream, postJson, runMesh, startNode, stopAll, tcpAddress, waitFor } from './mesh-process.ts';

const CREDIT = 10n ** 18n;
const BLOCK_MS = 250;
const hex = (text: string): string => Buffer.from(text).toString('hex');

interface InboxEvent {
  kind: 'message' | 'publish' | 'request';
  seq: number;
  at: number;
  from: string;
  topic: string;
  payload_hex: string;
  reply_token?: string;
}

interface Snapshot {
  messages: InboxEvent[];
  dropped: number;
  last_seq: number;
  capacity: { messages: number; bytes: number };
}

let a: MeshProcess;
let b: MeshProcess;
let c: MeshProcess;
let d: MeshProcess;
let x: Libp2pNetwork;
const xKey = SigningKey.generate();
const streams = new Map<MeshProcess, EventStream<InboxEvent>>();

before(async () => {
  a = await startNode({ mine: true, blockIntervalMs: BLOCK_MS });
  [b, c, d] = (await Promise.all([0, 1, 2].map(() => startNode({ blockIntervalMs: BLOCK_MS, bootstrap: [tcpAddress(a)] })))) as [
    MeshProcess,
    MeshProcess,
    MeshProcess,
  ];
  for (const node of [a, b, c, d]) streams.set(node, await openStream<InboxEvent>(node, '/mesh/messages/stream'));
  // X joins B, C and D directly, so what it publishes reaches each of them first hand.
  x = await startP2PNetwork({ key: xKey, port: 0, listenHost: '127.0.0.1', bootstrap: [b, c, d].map(tcpAddress) });
  await waitFor('X is connected to B, C and D', async () => [b, c, d].every((n) => x.peers().some((p) => toHex(p.node) === n.nodeId)), 20_000);
  await waitFor('A sees B, C and D', async () => (await getJson<{ peers: string[] }>(a, '/bootstrap')).peers.length >= 4, 20_000);
});

after(async () => {
  for (const stream of streams.values()) stream.close();
  await x?.stop();
  await stopAll();
});

const mesh = (args: string[]): ReturnType<typeof runMesh> => runMesh(args);

const stream = (node: MeshProcess): EventStream<InboxEvent> => streams.get(node)!;
const heard = (node: MeshProcess, match: (e: InboxEvent) => boolean): InboxEvent[] => stream(node).events.filter(match);

// ---------------------------------------------------------------------------------------------
// Directed messages

test("a message from A reaches B's stream with from set to A, once B has queued it", async () => {
  const sent = await postJson(a, '/mesh/send', { to: b.nodeId, topic: 'chat', payload_hex: hex('hello B') });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  assert.equal(sent.body.to, b.nodeId);
  const event = await stream(b).next((e) => e.payload_hex === hex('hello B'));
  assert.deepEqual([event.kind, event.from, event.topic, event.seq], ['message', a.nodeId, 'chat', sent.body.seq]);
  const snapshot = await getJson<Snapshot>(b, `/mesh/messages?after=${event.seq - 1}`);
  assert.deepEqual(snapshot.messages[0], event);
});

test("a batch of 500 from A arrives on B's stream whole and in order, from A, with the seqs its answer gave", async () => {
  const messages = Array.from({ length: 500 }, (_, i) => ({ topic: 'batch', payload_hex: hex(`b${i}`) }));
  const sent = await postJson(a, '/mesh/send-batch', { to: b.nodeId, messages });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  const seqs = sent.body.seqs as number[];
  assert.deepEqual(
    seqs,
    Array.from({ length: 500 }, (_, i) => seqs[0]! + i),
  );
  await stream(b).next((e) => e.payload_hex === hex('b499'));
  const arrived = heard(b, (e) => e.topic === 'batch');
  assert.deepEqual(
    arrived.map((e) => [e.seq, e.from, e.payload_hex]),
    messages.map((m, i) => [seqs[i], a.nodeId, m.payload_hex]),
  );
});

test("a batch as bytes from A arrives on B's stream as bytes whole and in order, and on its JSON stream the same", async () => {
  const reading = await fetch(`${b.url}/mesh/messages/stream`, { headers: { accept: 'application/octet-stream' } });
  assert.equal(reading.headers.get('content-type'), 'application/octet-stream');
  const messages = Array.from({ length: 300 }, (_, i) => ({ topic: i % 2 === 0 ? 'bytes/even' : 'bytes/odd', payload: new Uint8Array(i).fill(i & 0xff) }));
  const answer = await fetch(`${a.url}/mesh/send-batch?to=${b.nodeId}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/octet-stream' },
    body: encode(batchBytesCodec, messages) as Uint8Array<ArrayBuffer>,
  });
  const sent = (await answer.json()) as { to: string; seqs: number[] };
  assert.equal(answer.status, 200, JSON.stringify(sent));
  assert.equal(sent.to, b.nodeId);
  const frames: InboxFrame[] = [];
  for await (const frame of inboxFramesOf(reading.body!)) {
    if (frame.topic.startsWith('bytes/')) frames.push(frame);
    if (frames.length === messages.length) break;
  }
  assert.deepEqual(
    frames.map((f) => [f.seq, f.kind, f.from, f.topic, toHex(f.payload)]),
    messages.map((m, i) => [sent.seqs[i], 'message', a.nodeId, m.topic, toHex(m.payload)]),
  );
  await stream(b).next((e) => e.seq === sent.seqs.at(-1));
  assert.deepEqual(
    heard(b, (e) => e.topic.startsWith('bytes/')).map((e) => [e.seq, e.payload_hex]),
    frames.map((f) => [f.seq, toHex(f.payload)]),
  );
});

test('a message whose from_node names another node is dropped by the receiver: refused, never on its stream', async () => {
  const forged = encode(appMessageCodec, { from_node: fromHex(a.nodeId, 32), topic: 'chat', payload: Buffer.from('forged') });
  const honest = encode(appMessageCodec, { from_node: x.self, topic: 'chat', payload: Buffer.from('honest') });
  const [refused, queued] = await laneExchange(x, fromHex(b.nodeId, 32), [forged, honest]);
  assert.deepEqual(refused, { answer: 'Refused', reason: 'forged-sender', detail: 'from_node is not the peer that sent the message' });
  assert.equal(queued!.answer, 'Queued');
  await stream(b).next((e) => e.payload_hex === hex('honest'));
  assert.deepEqual(
    heard(b, (e) => e.payload_hex === hex('forged')),
    [],
  );
  assert.match(b.log(), /claiming to be from .*; dropped/);
});

test('a message to a node nobody can reach is a clear 502; a bad body never leaves the node', async () => {
  const nowhere = await postJson(a, '/mesh/send', { to: '77'.repeat(32), topic: 'chat', payload_hex: '' });
  assert.equal(nowhere.status, 502, JSON.stringify(nowhere.body));
  assert.equal(nowhere.body.type, '/problems/peer-unreachable');
  const bad: [unknown, number][] = [
    [{ to: b.nodeId.toUpperCase(), topic: 'chat', payload_hex: '' }, 400],
    [{ to: b.nodeId, topic: 'chat', payload_hex: 'abc' }, 400],
    [{ to: b.nodeId, topic: '', payload_hex: '' }, 400],
    [{ to: b.nodeId, topic: 'chat', payload_hex: '00'.repeat(64 * 1024 + 1) }, 413],
    [{ to: 'Name', topic: 'chat', payload_hex: '' }, 400],
    [{ to: 'n'.repeat(33), topic: 'chat', payload_hex: '' }, 400],
    [{ to: 'nobody-has-it', topic: 'chat', payload_hex: '' }, 404],
  ];
  for (const [body, status] of bad) assert.equal((await postJson(a, '/mesh/send', body)).status, status, JSON.stringify(body).slice(0, 100));
  assert.equal((await postJson(a, '/mesh/reply', { reply_token: '00'.repeat(16), payload_hex: '' })).status, 404);
});

// ---------------------------------------------------------------------------------------------
// Pub/sub

test('three subscribers each get one copy of a publish; the same signed bytes published again are dropped', async () => {
  for (const node of [b, c, d]) assert.equal((await postJson(node, '/mesh/subscribe', { topic: 'news' })).status, 200);
  // X listens bare on the gossip topic, to capture the signed bytes.
  const captured: Uint8Array[] = [];
  x.handle(appTopic('news'), async (message) => {
    captured.push(message.data);
    return 'accept';
  });
  await waitFor(
    'the subscriptions reach A',
    async () => {
      const probe = await postJson(a, '/mesh/publish', { topic: 'news', payload_hex: hex('probe') });
      return probe.status === 202 && probe.body.peers >= 3;
    },
    20_000,
  );
  const published = await postJson(a, '/mesh/publish', { topic: 'news', payload_hex: hex('headline') });
  assert.equal(published.status, 202, JSON.stringify(published.body));
  assert.match(published.body.id, /^[0-9a-f]{64}$/);
  const headline = (e: InboxEvent): boolean => e.kind === 'publish' && e.payload_hex === hex('headline');
  for (const node of [b, c, d]) {
    const event = await stream(node).next(headline);
    assert.deepEqual([event.from, event.topic], [a.nodeId, 'news']);
  }
  // X publishes the very bytes A signed, to B, C and D.
  const signed = await waitFor(
    'X captured the headline',
    async () => captured.find((bytes) => Buffer.from(decode(pubSubBodyCodec, bytes.subarray(0, bytes.length - 64)).payload).toString() === 'headline'),
    10_000,
  );
  await x.publish(appTopic('news'), signed);
  // A fresh publish of X's own, sent after the replay on the same links, marks when the replay has been judged.
  const marker = await signPubSub(
    { from: x.self, topic: 'news', payload: Buffer.from('after the replay'), nonce: crypto.getRandomValues(new Uint8Array(16)), at_ms: Date.now() },
    xKey,
    devnet().network,
  );
  await x.publish(appTopic('news'), marker.bytes);
  for (const node of [b, c, d]) await stream(node).next((e) => e.kind === 'publish' && e.payload_hex === hex('after the replay'));
  for (const node of [b, c, d]) assert.equal(heard(node, headline).length, 1, 'one copy, the replay dropped');
  // A publish nobody hears is refused: nothing was sent.
  const nobody = await postJson(a, '/mesh/publish', { topic: 'nobody-here', payload_hex: '' });
  assert.equal(nobody.status, 503);
  assert.equal(nobody.body.type, '/problems/no-peers');
});

// ---------------------------------------------------------------------------------------------
// Request and reply

test("a request is answered through the reply token its receiver's stream showed", async () => {
  const asked = postJson(a, '/mesh/request', { to: b.nodeId, topic: 'rpc/echo', payload_hex: hex('ping'), timeout_ms: 10_000 });
  const request = await stream(b).next((e) => e.kind === 'request' && e.payload_hex === hex('ping'));
  assert.equal(request.from, a.nodeId);
  const replied = await postJson(b, '/mesh/reply', { reply_token: request.reply_token, payload_hex: hex('pong') });
  assert.equal(replied.status, 204);
  const answer = await asked;
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.deepEqual([answer.body.from, answer.body.topic, answer.body.payload_hex], [b.nodeId, 'rpc/echo', hex('pong')]);
  const again = await postJson(b, '/mesh/reply', { reply_token: request.reply_token, payload_hex: hex('again') });
  assert.equal(again.status, 409);
});

test('a request times out with 504; the late reply is refused with 410 and never sent', async () => {
  const answer = await postJson(a, '/mesh/request', { to: b.nodeId, topic: 'rpc/slow', payload_hex: hex('?'), timeout_ms: 500 });
  assert.equal(answer.status, 504, JSON.stringify(answer.body));
  assert.match(answer.body.detail, /may still have processed the request/);
  const request = await stream(b).next((e) => e.kind === 'request' && e.topic === 'rpc/slow');
  await waitFor(
    'B let the request go',
    async () => (await postJson(b, '/mesh/reply', { reply_token: request.reply_token, payload_hex: hex('late') })).status === 410,
    5_000,
  );
});

// ---------------------------------------------------------------------------------------------
// The inbox's bounds

/** The resident memory of a process, in MiB, from /proc. */
async function rssMb(node: MeshProcess): Promise<number> {
  const status = await readFile(`/proc/${node.child.pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) / 1024;
}

test('thousands of messages to a stream nobody reads: the ring drops the oldest and counts them, and memory stays bounded', async (t) => {
  // F's old space is held to 88 MiB: a node that kept what it was sent (48 MiB of hex here, on top
  // of its own ~50 MiB, peer routing and the NAT traversal included) would run out of heap and die,
  // rather than merely grow its RSS lazily.
  const f = await startNode({ blockIntervalMs: BLOCK_MS, bootstrap: [tcpAddress(a)], env: { NODE_OPTIONS: '--max-old-space-size=88' } });
  await waitFor('A reaches F', async () => (await postJson(a, '/mesh/send', { to: f.nodeId, topic: 'hello', payload_hex: '' })).status === 200, 20_000);
  // A stream opened and never read.
  const unread = await fetch(`${f.url}/mesh/messages/stream`);
  assert.equal(unread.status, 200);
  const baseline = await rssMb(f);
  const payload = '5a'.repeat(8 * 1024);
  let peak = baseline;
  const total = 3_000;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) {
      next++;
      const sent = await postJson(a, '/mesh/send', { to: f.nodeId, topic: 'flood', payload_hex: payload });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      if (next % 250 === 0) peak = Math.max(peak, await rssMb(f));
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  peak = Math.max(peak, await rssMb(f));
  // Only the ring's tail: the whole of it as JSON is 17 MB more on F's small heap, while it is written.
  const snapshot = await getJson<Snapshot>(f, `/mesh/messages?after=${total - 9}`);
  assert.deepEqual(
    snapshot.messages.map((e) => e.seq),
    Array.from({ length: 10 }, (_, i) => total - 8 + i),
    'the newest are the ones held',
  );
  // Every entry not held was dropped and counted: 1,023 entries of 8 KiB fill the 8 MiB before the 1,024th would.
  assert.equal(snapshot.last_seq, total + 1);
  const held = snapshot.last_seq - snapshot.dropped;
  assert.equal(held, Math.floor(snapshot.capacity.bytes / (8 * 1024 + 'flood'.length)));
  assert.equal(f.child.exitCode, null, 'F is alive');
  t.diagnostic(
    `F's RSS: ${baseline.toFixed(0)} MiB before, ${peak.toFixed(0)} MiB at most while ${total} messages of 8 KiB (${(total * 8) / 1024} MiB) arrived`,
  );
  assert.ok(peak - baseline < 100, `RSS grew from ${baseline.toFixed(0)} to ${peak.toFixed(0)} MiB`);
  await unread.body?.cancel().catch(() => {});
});

// ---------------------------------------------------------------------------------------------
// Names

interface NameRecord {
  name: string;
  node_id: string;
  expires_at_height: number;
}

test("names: A claims, B resolves; B's claim of the live name is 409; A renews; a transfer to the name arrives; no credits is 402", async () => {
  await waitFor('A has credits', async () => BigInt((await getJson<{ free: string }>(a, '/status')).free) > 3_000n * CREDIT, 30_000);
  const funded = await postJson(a, '/transfer', { to: b.nodeId, amount: (1_500n * CREDIT).toString() });
  assert.equal(funded.status, 201);
  const claim = await postJson(a, '/names/claim', { name: 'alpha' });
  assert.equal(claim.status, 202, JSON.stringify(claim.body));
  const found = await waitFor('B resolves alpha', async () => {
    const response = await fetch(`${b.url}/names/alpha`);
    return response.status === 200 && ((await response.json()) as NameRecord);
  });
  assert.equal(found.node_id, a.nodeId);
  await waitFor('B is paid', async () => BigInt((await getJson<{ free: string }>(b, '/status')).free) === 1_500n * CREDIT, 30_000);
  const taken = await postJson(b, '/names/claim', { name: 'alpha' });
  assert.equal(taken.status, 409);
  assert.equal(taken.body.type, '/problems/name-taken');
  assert.equal((await postJson(c, '/names/claim', { name: 'gamma' })).status, 402);
  for (const name of ['Alpha', 'a'.repeat(33), '']) assert.equal((await postJson(a, '/names/claim', { name })).status, 400, name);
  assert.equal((await fetch(`${b.url}/names/Alpha`)).status, 400);
  assert.equal((await fetch(`${b.url}/names/${'a'.repeat(33)}`)).status, 400);
  assert.equal((await fetch(`${b.url}/names/nobody-has-it`)).status, 404);

  assert.equal((await postJson(a, '/names/claim', { name: 'alpha' })).status, 202);
  const renewed = await waitFor('the renewal', async () => {
    const record = await getJson<NameRecord>(c, '/names/alpha');
    return record.expires_at_height > found.expires_at_height && record;
  });
  assert.equal(renewed.expires_at_height, found.expires_at_height + 210_000);
  assert.deepEqual(await getJson<NameRecord[]>(c, `/names?owner=${a.nodeId}`), [renewed]);

  const before = BigInt((await getJson<{ balance: string }>(a, '/status')).balance);
  const paid = await postJson(b, '/transfer', { to: 'alpha', amount: (3n * CREDIT).toString() });
  assert.equal(paid.status, 201, JSON.stringify(paid.body));
  await waitFor(
    'the transfer to alpha in a block',
    async () => (await getJson<{ tx_id: string }[]>(a, `/transactions/${a.nodeId}`)).some((t) => t.tx_id === paid.body.tx_id),
    30_000,
  );
  assert.ok(BigInt((await getJson<{ balance: string }>(a, '/status')).balance) > before);
  const toName = await postJson(b, '/mesh/send', { to: 'alpha', topic: 'chat', payload_hex: hex('to a name') });
  assert.equal(toName.status, 200);
  assert.equal((await stream(a).next((e) => e.payload_hex === hex('to a name'))).from, b.nodeId);
});

// ---------------------------------------------------------------------------------------------
// The command line against real nodes

test('mesh msg send, listen, request and reply, and mesh names, against real nodes', async () => {
  // From C's last seq on, so whatever listen's start-up takes, it misses nothing.
  const { last_seq: from } = await getJson<Snapshot>(c, '/mesh/messages');
  const listening = mesh(['msg', 'listen', '--topic', 'cli', '--after', String(from), '--count', '2', '--data-dir', c.dataDir]);
  const sent = await mesh(['msg', 'send', c.nodeId, 'cli', 'hello from the CLI', '--data-dir', a.dataDir]);
  assert.equal(sent.code, 0, sent.err);
  assert.match(sent.out, /^\d+\n$/);
  const asked = mesh(['msg', 'request', c.nodeId, 'cli', 'question', '--timeout-ms', '20000', '--data-dir', a.dataDir]);
  const request = await stream(c).next((e) => e.kind === 'request' && e.payload_hex === hex('question'));
  const replied = await mesh(['msg', 'reply', request.reply_token!, 'answer', '--data-dir', c.dataDir]);
  assert.equal(replied.code, 0, replied.err);
  const answer = await asked;
  assert.equal(answer.code, 0, answer.err);
  assert.equal(answer.out, 'answer\n');
  const lines = await listening;
  assert.equal(lines.code, 0, lines.err);
  assert.equal(
    lines.out,
    `${stream(c).events.find((e) => e.payload_hex === hex('hello from the CLI'))!.seq} message ${a.nodeId} cli - "hello from the CLI"\n${request.seq} request ${a.nodeId} cli ${request.reply_token} "question"\n`,
  );
  const late = await mesh(['msg', 'reply', request.reply_token!, 'again', '--data-dir', c.dataDir]);
  assert.equal(late.code, 1);
  assert.match(late.err, /Request already answered \(409\)/);

  const resolved = await mesh(['names', 'resolve', 'alpha', '--data-dir', d.dataDir]);
  assert.equal(resolved.code, 0, resolved.err);
  assert.equal(resolved.out, `${a.nodeId}\n`);
  const listed = await mesh(['names', 'ls', '--owner', a.nodeId, '--data-dir', d.dataDir]);
  assert.match(listed.out, new RegExp(`^alpha  ${a.nodeId}  until \\d+\\n$`));
  const claimed = await mesh(['names', 'claim', 'beta-node', '--data-dir', a.dataDir]);
  assert.equal(claimed.code, 0, claimed.err);
  await waitFor("beta-node is A's", async () => (await mesh(['names', 'resolve', 'beta-node', '--data-dir', b.dataDir])).out === `${a.nodeId}\n`, 30_000, 500);
  const sentToName = await mesh(['send', 'beta-node', '0.5', '--data-dir', b.dataDir]);
  assert.equal(sentToName.code, 0, sentToName.err);
  assert.match(sentToName.err, /sent 0.5 credits to beta-node/);
  const unknown = await mesh(['msg', 'send', 'nobody-has-it', 'cli', 'x', '--data-dir', a.dataDir]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /Unknown name \(404\)/);
});
