// App messaging on MeshNodes over the memory network and a manual clock: directed messages with the
// sender checked against the connection, pub/sub with signatures and duplicate suppression, request
// and reply with their tokens, and the bounds. Runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { rejects, rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { key, openChain } from '../chain/testnet.test-util.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { decode, encode } from '../encoding/codec.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { InvalidNameError, NetworkError, PeerBusyError, PeerUnreachableError, RemoteError, RequestTimeoutError, StreamResetError } from '../net/errors.ts';
import { FrameReader, framesOf } from '../net/frames.ts';
import { MemoryBus, type MemoryNetwork } from '../net/memory.test-util.ts';
import { appTopic } from '../net/network.ts';
import type { FullNode } from '../node/node.test-util.ts';
import { startNode } from '../node/node.test-util.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import { MessagingError } from './errors.ts';
import type { InboxEvent } from './inbox.ts';
import { laneExchange } from './lane.test-util.ts';
import { LANE_IDLE_MS, LANES_PER_PEER, MESSAGE_STREAM, SERVED_LANE_IDLE_MS } from './lanes.ts';
import type { MessagingLimits, OutgoingMessage } from './messaging.ts';
import { BatchStoppedError, MAX_BATCH_MESSAGES, PUBLISH_MAX_AGE_MS, SEND_TIMEOUT_MS } from './messaging.ts';
import { appAckCodec, appMessageCodec, appReplyCodec, appRequestCodec, MAX_FRAME_BYTES, MAX_PAYLOAD_BYTES, MESSAGING_RPC, signPubSub } from './wire.ts';

const A = key(1);
const B = key(2);
const C = key(3);
const D = key(4);
const E = key(5);
const text = new TextEncoder();
const hex = (s: string): string => toHex(text.encode(s));

interface Mesh {
  readonly bus: MemoryBus;
  readonly clock: Scheduler;
  readonly nodes: FullNode[];
  /** What each node's inbox stream delivered, by node index. */
  readonly heard: InboxEvent[][];
  readonly stop: () => Promise<void>;
}

/** Nodes for `keys` on one bus and clock, all linked, each with its inbox followed from the start. */
async function mesh(keys: readonly SigningKey[], limits: Partial<MessagingLimits> = {}): Promise<Mesh> {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const nodes: FullNode[] = [];
  const heard: InboxEvent[][] = [];
  for (const k of keys) {
    const node = await startNode(bus, await openChain(), k, clock, { messaging: limits });
    const events: InboxEvent[] = [];
    node.services.messaging.followInbox(null, null, (event) => events.push(event));
    nodes.push(node);
    heard.push(events);
  }
  return {
    bus,
    clock,
    nodes,
    heard,
    stop: async () => {
      for (const n of nodes) await n.stop();
    },
  };
}

/** Runs `pending` while the manual clock moves, and resolves with its outcome. */
async function settle<T>(m: Mesh, pending: Promise<T>, withinMs = 30_000): Promise<{ value?: T; error?: unknown }> {
  let outcome: { value?: T; error?: unknown } | undefined;
  pending.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  await m.clock.until('the call answers', () => outcome !== undefined, withinMs);
  return outcome!;
}

/** Lets the nodes work, time standing still, until `check` holds (the memory network hands over on real turns). */
function until(m: Mesh, what: string, check: () => boolean): Promise<void> {
  return m.clock.until(what, check, 0);
}

function network(m: Mesh, k: SigningKey): MemoryNetwork {
  return m.bus.members.get(toHex(k.publicKey))!;
}

test("messaging: a directed message reaches the receiver's stream from its authenticated sender, acknowledged with its seq", async () => {
  const m = await mesh([A, B]);
  try {
    const [a, b] = m.nodes;
    const ack = await a!.services.messaging.sendMessage(B.publicKey, 'chat/room-1', text.encode('hello'));
    assert.deepEqual(ack, { to: toHex(B.publicKey), topic: 'chat/room-1', seq: 1 });
    const [event] = m.heard[1]!;
    assert.deepInclude(event, { kind: 'message', seq: 1, from: toHex(A.publicKey), topic: 'chat/room-1', payload_hex: hex('hello') });
    assert.equal(event!.at, m.clock.now());
    assert.notProperty(event!.toJSON(), 'reply_token');
    assert.deepEqual(b!.services.messaging.inboxSnapshot(0, null).messages, [event!]);
    // An empty payload is a message too; a topic filter sees only its topic.
    await a!.services.messaging.sendMessage(B.publicKey, 'other', new Uint8Array(0));
    assert.deepEqual(
      b!.services.messaging.inboxSnapshot(0, 'other').messages.map((e) => [e.seq, e.payload_hex]),
      [[2, '']],
    );
    assert.deepEqual(m.heard[0], [], 'the sender hears nothing of its own message');
  } finally {
    await m.stop();
  }
});

test('messaging: a message or request whose from_node names another node is refused, penalised, and never reaches the inbox', async () => {
  const m = await mesh([A, B]);
  try {
    // C is a bare network member: it crafts the lane's frames and the RPC by hand, claiming to be A.
    const c = m.bus.join(C.publicKey);
    const forged = encode(appMessageCodec, { from_node: A.publicKey, topic: 'chat', payload: text.encode('from A, honest') });
    const [ack] = await laneExchange(c, B.publicKey, [forged]);
    assert.deepEqual(ack, { answer: 'Refused', reason: 'forged-sender', detail: 'from_node is not the peer that sent the message' });
    // The spec's RPC form of a message is held to the same rule.
    assert.deepEqual(decode(appAckCodec, await c.request(B.publicKey, MESSAGING_RPC.message, forged)), ack!);
    const request = encode(appRequestCodec, { from_node: A.publicKey, topic: 'chat', payload: text.encode('?'), timeout_ms: 1_000 });
    const reply = decode(appReplyCodec, await c.request(B.publicKey, MESSAGING_RPC.request, request));
    assert.deepInclude(reply, { answer: 'Refused', reason: 'forged-sender' });
    assert.deepEqual(m.heard[1], []);
    assert.deepEqual(m.nodes[1]!.services.messaging.inboxSnapshot(0, null).messages, []);
    assert.deepEqual(
      network(m, B).penalties.map((p) => p.node),
      [toHex(C.publicKey), toHex(C.publicKey), toHex(C.publicKey)],
    );
    // The same message with C's own id is taken, from C.
    const honest = encode(appMessageCodec, { from_node: C.publicKey, topic: 'chat', payload: text.encode('from C') });
    // A topic outside the rule is refused too, and a refusal does not hold back the frames after it.
    const badTopic = encode(appMessageCodec, { from_node: C.publicKey, topic: 'two words', payload: new Uint8Array(0) });
    const acks = await laneExchange(c, B.publicKey, [honest, badTopic, honest]);
    assert.deepEqual(acks[0], { answer: 'Queued', seq: 1 });
    assert.deepInclude(acks[1], { answer: 'Refused', reason: 'bad-topic' });
    assert.deepEqual(acks[2], { answer: 'Queued', seq: 2 });
    assert.deepEqual(
      m.heard[1]!.map((e) => e.from),
      [toHex(C.publicKey), toHex(C.publicKey)],
    );
  } finally {
    await m.stop();
  }
});

test('messaging: three subscribers each get one copy of a publish; a replayed, tampered or stale copy is dropped', async () => {
  const m = await mesh([A, B, C, D]);
  try {
    const [a, b, c, d] = m.nodes;
    for (const n of [b!, c!, d!]) assert.deepEqual(n.services.messaging.subscribeTopic('news'), { topic: 'news', subscribed: true, subscriptions: 1 });
    assert.deepEqual(b!.services.messaging.subscribeTopic('news'), { topic: 'news', subscribed: false, subscriptions: 1 }, 'subscribing again changes nothing');
    // E listens on the gossip topic bare, to capture the signed bytes.
    const e = m.bus.join(E.publicKey);
    const captured: Uint8Array[] = [];
    e.handle(appTopic('news'), async (message) => {
      captured.push(message.data);
      return 'accept';
    });
    const answer = await a!.services.messaging.publishMessage('news', text.encode('headline'));
    assert.equal(answer.peers, 4);
    assert.match(answer.id, /^[0-9a-f]{64}$/);
    await until(m, 'each subscriber hears it', () => [1, 2, 3].every((i) => m.heard[i]!.length > 0));
    // Copies relayed between the subscribers would come now.
    await m.clock.settle();
    for (const i of [1, 2, 3]) {
      assert.lengthOf(m.heard[i]!, 1, `subscriber ${i} heard the publish once`);
      assert.deepInclude(m.heard[i]![0], { kind: 'publish', from: toHex(A.publicKey), topic: 'news', payload_hex: hex('headline') });
    }
    assert.deepEqual(m.heard[0], [], 'the publisher is not told of its own publish');
    // Two identical publishes are two messages (each has its nonce).
    await a!.services.messaging.publishMessage('news', text.encode('headline'));
    await until(m, 'each subscriber hears the second', () => [1, 2, 3].every((i) => m.heard[i]!.length === 2));
    assert.deepEqual(
      m.heard[1]!.map((ev) => ev.payload_hex),
      [hex('headline'), hex('headline')],
    );

    // E publishes A's signed bytes again: a duplicate, ignored without blame.
    const replay = captured[0]!;
    const before = m.bus.verdicts.length;
    await e.publish(appTopic('news'), replay);
    await until(m, 'B, C and D judge the replay', () => m.bus.verdicts.length >= before + 3);
    await m.clock.settle();
    const verdicts = m.bus.verdicts.slice(before);
    assert.isNotEmpty(verdicts);
    assert.isTrue(
      verdicts.every((v) => v.verdict === 'ignore'),
      JSON.stringify(verdicts),
    );
    for (const i of [1, 2, 3]) assert.lengthOf(m.heard[i]!, 2, 'the replay reached no inbox');

    // A byte changed in the signed body breaks the signature: rejected, the relay blamed.
    const tampered = replay.slice();
    tampered[tampered.length - 80]! ^= 1;
    const mark = m.bus.verdicts.length;
    await e.publish(appTopic('news'), tampered);
    await until(m, 'B, C and D judge the tampered copy', () => m.bus.verdicts.length >= mark + 3);
    assert.isTrue(m.bus.verdicts.slice(mark).every((v) => v.verdict === 'reject' && v.from === toHex(E.publicKey)));
    // A publish signed long ago (by its author's clock) is not taken, even if never seen.
    const judged = m.bus.verdicts.length;
    const stale = await signPubSub(
      { from: E.publicKey, topic: 'news', payload: text.encode('old'), nonce: new Uint8Array(16), at_ms: m.clock.now() - PUBLISH_MAX_AGE_MS - 1 },
      E,
      a!.chain.params.network,
    );
    await e.publish(appTopic('news'), stale.bytes);
    // Signed for another topic and carried on this one: rejected.
    const moved = await signPubSub(
      { from: E.publicKey, topic: 'sports', payload: text.encode('x'), nonce: new Uint8Array(16).fill(1), at_ms: m.clock.now() },
      E,
      a!.chain.params.network,
    );
    await e.publish(appTopic('news'), moved.bytes);
    await until(m, 'both are judged', () => m.bus.verdicts.length >= judged + 6);
    for (const i of [1, 2, 3]) assert.lengthOf(m.heard[i]!, 2);
    // A fresh publish of E's own is taken, from E.
    const fresh = await signPubSub(
      { from: E.publicKey, topic: 'news', payload: text.encode('new'), nonce: new Uint8Array(16).fill(2), at_ms: m.clock.now() },
      E,
      a!.chain.params.network,
    );
    await e.publish(appTopic('news'), fresh.bytes);
    await until(m, "each subscriber takes E's publish", () => [1, 2, 3].every((i) => m.heard[i]!.length === 3));
    for (const i of [1, 2, 3]) assert.equal(m.heard[i]![2]!.from, toHex(E.publicKey));
  } finally {
    await m.stop();
  }
});

test('messaging: a request is answered through its reply token; a second reply and an unknown token are refused', async () => {
  const m = await mesh([A, B]);
  try {
    const [a, b] = m.nodes;
    const pending = a!.services.messaging.requestMessage(B.publicKey, 'rpc/echo', text.encode('ping'), 5_000);
    await until(m, 'B holds the request', () => m.heard[1]!.length === 1);
    const [request] = m.heard[1]!;
    assert.deepInclude(request, { kind: 'request', from: toHex(A.publicKey), topic: 'rpc/echo', payload_hex: hex('ping') });
    assert.match(request!.reply_token!, /^[0-9a-f]{32}$/);
    assert.equal(b!.services.messaging.messaging.heldRequests, 1);
    b!.services.messaging.replyMessage(request!.reply_token!, text.encode('pong'));
    const { value, error } = await settle(m, pending);
    assert.isUndefined(error, String(error));
    assert.deepInclude(value, { from: toHex(B.publicKey), topic: 'rpc/echo', payload_hex: hex('pong') });
    assert.equal(b!.services.messaging.messaging.heldRequests, 0);
    rejects(() => b!.services.messaging.replyMessage(request!.reply_token!, text.encode('again')), MessagingError, 'already-replied');
    rejects(() => b!.services.messaging.replyMessage('00'.repeat(16), text.encode('?')), MessagingError, 'unknown-reply-token');
    const error413 = rejects(
      () => b!.services.messaging.replyMessage('00'.repeat(16), new Uint8Array(MAX_PAYLOAD_BYTES + 1)),
      MessagingError,
      'payload-too-large',
    );
    assert.equal((error413 as MessagingError).status, 413);
  } finally {
    await m.stop();
  }
});

test('messaging: a request that times out fails as a timeout; its late reply is refused and never sent', async () => {
  const m = await mesh([A, B]);
  try {
    const [a, b] = m.nodes;
    const { error } = await settle(m, a!.services.messaging.requestMessage(B.publicKey, 'slow', text.encode('?'), 500));
    assert.instanceOf(error, RequestTimeoutError);
    assert.equal((error as NetworkError).status, 504);
    assert.match((error as Error).message, /may still have processed/);
    const token = m.heard[1]![0]!.reply_token!;
    // The receiver learnt that the requester went away: the token lapsed.
    await m.clock.advance(1_000);
    assert.equal(b!.services.messaging.messaging.heldRequests, 0);
    const late = rejects(() => b!.services.messaging.replyMessage(token, text.encode('late')), MessagingError, 'reply-too-late');
    assert.equal((late as MessagingError).status, 410);
  } finally {
    await m.stop();
  }
});

test('messaging: a held request lapses at the timeout its requester gave, and ends unanswered when the node stops', async () => {
  const m = await mesh([A, B]);
  try {
    const [a, b] = m.nodes;
    // C asks with timeout_ms 200 but waits 10 s itself: the receiver's own clock ends the request.
    const c = m.bus.join(C.publicKey);
    const request = encode(appRequestCodec, { from_node: C.publicKey, topic: 'slow', payload: text.encode('?'), timeout_ms: 200 });
    const { value, error } = await settle(m, c.request(B.publicKey, MESSAGING_RPC.request, request, { timeoutMs: 10_000 }));
    assert.isUndefined(error, String(error));
    assert.deepInclude(decode(appReplyCodec, value!), { answer: 'Refused', reason: 'gone' });
    assert.equal(b!.services.messaging.messaging.heldRequests, 0);
    rejects(() => b!.services.messaging.replyMessage(m.heard[1]![0]!.reply_token!, text.encode('late')), MessagingError, 'reply-too-late');
    const held = a!.services.messaging.requestMessage(B.publicKey, 'never', text.encode('?'), 60_000);
    held.catch(() => {});
    await until(m, 'B holds the request', () => b!.services.messaging.messaging.heldRequests === 1);
    b!.services.messaging.messaging.stop();
    assert.equal(b!.services.messaging.messaging.heldRequests, 0);
    const token = m.heard[1]!.at(-1)!.reply_token!;
    rejects(() => b!.services.messaging.replyMessage(token, text.encode('x')), MessagingError, 'reply-too-late');
  } finally {
    await m.stop();
  }
});

test('messaging: the inbox is a bounded ring: the oldest go first, counted, in count and in bytes', async () => {
  const m = await mesh([A, B], { messages: 8, bytes: 4_096 });
  try {
    const [a, b] = m.nodes;
    for (let i = 1; i <= 20; i++) await a!.services.messaging.sendMessage(B.publicKey, 'flood', text.encode(`message ${i}`));
    assert.lengthOf(m.heard[1]!, 20, 'the stream heard every one');
    const snapshot = b!.services.messaging.inboxSnapshot(0, null);
    assert.deepEqual(
      snapshot.messages.map((e) => e.seq),
      [13, 14, 15, 16, 17, 18, 19, 20],
    );
    assert.equal(snapshot.dropped, 12);
    assert.equal(snapshot.last_seq, 20);
    assert.deepEqual(snapshot.capacity, { messages: 8, bytes: 4_096 });
    assert.equal(b!.services.messaging.messaging.inbox.size, 8);
    assert.deepEqual(
      b!.services.messaging.inboxSnapshot(17, null).messages.map((e) => e.seq),
      [18, 19, 20],
    );
    // Large payloads: the byte bound holds the ring to what fits.
    for (let i = 0; i < 5; i++) await a!.services.messaging.sendMessage(B.publicKey, 'big', new Uint8Array(1_500));
    assert.isAtMost(b!.services.messaging.messaging.inbox.bytes, 4_096);
    assert.deepEqual(
      b!.services.messaging.inboxSnapshot(0, null).messages.map((e) => e.seq),
      [24, 25],
    );
    assert.equal(b!.services.messaging.inboxSnapshot(0, null).dropped, 23);
    // A follower that starts after a seq gets what the ring still holds after it, then what comes.
    const resumed: number[] = [];
    const stop = b!.services.messaging.followInbox(20, null, (event) => resumed.push(event.seq));
    await a!.services.messaging.sendMessage(B.publicKey, 'after', new Uint8Array(1));
    stop();
    await a!.services.messaging.sendMessage(B.publicKey, 'after', new Uint8Array(1));
    assert.deepEqual(resumed, [24, 25, 26]);
  } finally {
    await m.stop();
  }
});

test('messaging: the bounds: payload 413, open requests 429, held requests "busy" 503, subscriptions 507, a publish nobody hears 503', async () => {
  const m = await mesh([A, B], { openRequests: 2, heldRequests: 1, subscriptions: 2 });
  try {
    const [a, b] = m.nodes;
    const big = new Uint8Array(MAX_PAYLOAD_BYTES + 1);
    for (const call of [
      () => a!.services.messaging.sendMessage(B.publicKey, 't', big),
      () => a!.services.messaging.requestMessage(B.publicKey, 't', big, 1_000),
      () => a!.services.messaging.publishMessage('t', big),
    ]) {
      const error = await rejectsAsync(call, MessagingError, 'payload-too-large');
      assert.equal((error as MessagingError).status, 413);
    }
    await a!.services.messaging.sendMessage(B.publicKey, 't', new Uint8Array(MAX_PAYLOAD_BYTES));
    assert.equal(m.heard[1]![0]!.payload_hex.length, 2 * MAX_PAYLOAD_BYTES, 'exactly 64 KiB passes');

    // B holds one request; the second is refused by B as busy.
    const first = a!.services.messaging.requestMessage(B.publicKey, 'q', text.encode('1'), 60_000);
    first.catch(() => {});
    await until(m, 'B holds the first request', () => b!.services.messaging.messaging.heldRequests === 1);
    const busy = await settle(m, a!.services.messaging.requestMessage(B.publicKey, 'q', text.encode('2'), 60_000));
    assert.instanceOf(busy.error, MessagingError);
    assert.equal((busy.error as MessagingError).code, 'peer-busy');
    assert.equal((busy.error as MessagingError).status, 503);
    // A has one open (the first); one more makes two, the third is refused at once.
    const second = a!.services.messaging.requestMessage(B.publicKey, 'q', text.encode('3'), 60_000);
    second.catch(() => {});
    const tooMany = await rejectsAsync(
      () => a!.services.messaging.requestMessage(B.publicKey, 'q', text.encode('4'), 60_000),
      MessagingError,
      'too-many-requests',
    );
    assert.equal((tooMany as MessagingError).status, 429);

    b!.services.messaging.subscribeTopic('one');
    b!.services.messaging.subscribeTopic('two');
    const full = rejects(() => b!.services.messaging.subscribeTopic('three'), MessagingError, 'too-many-subscriptions');
    assert.equal((full as MessagingError).status, 507);
    assert.deepEqual(b!.services.messaging.messaging.topics, ['one', 'two']);
    const nobody = await rejectsAsync(() => a!.services.messaging.publishMessage('nobody-listens', text.encode('x')), MessagingError, 'no-peers');
    assert.equal((nobody as MessagingError).status, 503);
    await a!.services.messaging.publishMessage('one', text.encode('x'));

    const self = await rejectsAsync(() => a!.services.messaging.sendMessage(A.publicKey, 't', text.encode('x')), MessagingError, 'self');
    assert.equal((self as MessagingError).status, 400);
    await rejectsAsync(() => a!.services.messaging.sendMessage(B.publicKey, 'has space', text.encode('x')), InvalidNameError, 'invalid-name');
  } finally {
    await m.stop();
  }
});

test('messaging: a peer that is not connected is unreachable, said as a 502', async () => {
  const m = await mesh([A]);
  try {
    const error = await rejectsAsync(
      () => m.nodes[0]!.services.messaging.sendMessage(fromHex('77'.repeat(32), 32), 't', text.encode('x')),
      PeerUnreachableError,
      'unreachable',
    );
    assert.equal((error as NetworkError).status, 502);
  } finally {
    await m.stop();
  }
});

test('messaging: a subscriber full of live publish ids takes no new publish rather than forget one, so a replay never passes twice', async () => {
  const m = await mesh([A, B], { seenPublishes: 3 });
  try {
    const [a, b] = m.nodes;
    b!.services.messaging.subscribeTopic('news');
    const e = m.bus.join(E.publicKey);
    e.handle(appTopic('news'), async () => 'accept');
    const network = a!.chain.params.network;
    const publish = async (n: number): Promise<Uint8Array> => {
      const signed = await signPubSub(
        { from: E.publicKey, topic: 'news', payload: text.encode(`p${n}`), nonce: new Uint8Array(16).fill(n), at_ms: m.clock.now() },
        E,
        network,
      );
      await e.publish(appTopic('news'), signed.bytes);
      return signed.bytes;
    };
    const first = await publish(1);
    await publish(2);
    await publish(3);
    await until(m, 'B takes three', () => m.heard[1]!.length === 3);
    // Full of live ids: a fourth is not taken, and the first's replay is still known.
    await publish(4);
    await e.publish(appTopic('news'), first);
    await m.clock.settle();
    // Which were taken, not their order: each publish's signature is checked on its own, and the
    // checks may finish in any order.
    assert.deepEqual(m.heard[1]!.map((ev) => ev.payload_hex).sort(), [hex('p1'), hex('p2'), hex('p3')]);
    // Once the first three are too old to be taken anyway, their ids go and new publishes are taken again.
    await m.clock.advance(PUBLISH_MAX_AGE_MS + 1);
    await e.publish(appTopic('news'), first);
    await publish(5);
    await until(m, 'B takes the fifth', () => m.heard[1]!.length === 4);
    assert.equal(m.heard[1]![3]!.payload_hex, hex('p5'), 'the old replay is refused by its age, the new one taken');
  } finally {
    await m.stop();
  }
});

test('messaging: one peer holds at most an eighth of the held requests; a peer answering outside the protocol is a 502', async () => {
  const m = await mesh([A, B, C], { heldRequests: 16 });
  try {
    const [a, b, c] = m.nodes;
    for (let i = 0; i < 2; i++) a!.services.messaging.requestMessage(B.publicKey, 'q', text.encode(`a${i}`), 60_000).catch(() => {});
    await until(m, "B holds two of A's", () => b!.services.messaging.messaging.heldRequests === 2);
    const third = await settle(m, a!.services.messaging.requestMessage(B.publicKey, 'q', text.encode('a2'), 60_000));
    assert.equal((third.error as MessagingError).code, 'peer-busy');
    assert.match((third.error as Error).message, /as many as one peer may have/);
    c!.services.messaging.requestMessage(B.publicKey, 'q', text.encode('c0'), 60_000).catch(() => {});
    await until(m, "B holds C's too", () => b!.services.messaging.messaging.heldRequests === 3);

    const rogue = m.bus.join(D.publicKey);
    rogue.serveStream(MESSAGE_STREAM, (stream) => {
      void (async () => {
        for await (const chunk of stream) if (chunk.length > 0) await stream.write(framesOf([Uint8Array.of(0xff, 0xff)]));
      })().catch(() => {});
    });
    rogue.serve(MESSAGING_RPC.request, async () => Uint8Array.of(0xff));
    const calls: (() => Promise<unknown>)[] = [
      () => a!.services.messaging.sendMessage(D.publicKey, 't', text.encode('x')),
      () => a!.services.messaging.requestMessage(D.publicKey, 't', text.encode('x'), 1_000),
    ];
    for (const call of calls) {
      const { error } = await settle(m, call());
      assert.instanceOf(error, NetworkError);
      assert.equal((error as NetworkError).code, 'bad-response');
      assert.equal((error as NetworkError).status, 502);
    }
  } finally {
    await m.stop();
  }
});

test('messaging: bytes that do not decode fail a directed message or request, and a publish that does not decode is rejected and nothing reaches the inbox', async () => {
  const m = await mesh([A, B]);
  try {
    const [, b] = m.nodes;
    b!.services.messaging.subscribeTopic('news');
    const c = m.bus.join(C.publicKey);
    for (const protocol of [MESSAGING_RPC.message, MESSAGING_RPC.request]) {
      await rejectsAsync(() => c.request(B.publicKey, protocol, Uint8Array.of(7, 7, 7)), RemoteError, 'remote-failed');
    }
    // On a lane, a frame that is not a message resets the lane and counts against the peer.
    await rejectsAsync(() => laneExchange(c, B.publicKey, [Uint8Array.of(7, 7, 7)]), StreamResetError, 'stream-reset');
    assert.deepEqual(
      network(m, B).penalties.map((p) => p.node),
      [toHex(C.publicKey)],
    );
    c.handle(appTopic('news'), async () => 'accept');
    await until(m, 'B and C meet on the topic', () => c.subscribers(appTopic('news')) > 0);
    for (const junk of [Uint8Array.of(1), new Uint8Array(300).fill(0xab)]) await c.publish(appTopic('news'), junk);
    await m.clock.settle();
    const toB = m.bus.verdicts.filter((v) => v.to === toHex(B.publicKey) && v.topic === appTopic('news'));
    assert.deepEqual(
      toB.map((v) => v.verdict),
      ['reject', 'reject'],
    );
    assert.deepEqual(m.heard[1], []);
  } finally {
    await m.stop();
  }
});

test('messaging: a batch arrives in order on one lane, acknowledged with its seqs; a bad message sends none of it; an idle lane closes and the next send opens another', async () => {
  const m = await mesh([A, B]);
  try {
    const [a, b] = m.nodes;
    const batch = Array.from({ length: 50 }, (_, i) => ({ topic: i % 2 === 0 ? 'even' : 'odd', payload: text.encode(`m${i}`) }));
    const answer = await a!.services.messaging.sendMessages(B.publicKey, batch);
    assert.deepEqual(answer, { to: toHex(B.publicKey), seqs: Array.from({ length: 50 }, (_, i) => i + 1) });
    assert.deepEqual(
      m.heard[1]!.map((e) => [e.topic, e.payload_hex]),
      batch.map((msg) => [msg.topic, toHex(msg.payload)]),
    );
    // Single sends, many at once, share the lane and keep their order.
    const singles = await Promise.all(Array.from({ length: 20 }, (_, i) => a!.services.messaging.sendMessage(B.publicKey, 'single', text.encode(`s${i}`))));
    assert.deepEqual(
      singles.map((s) => s.seq),
      Array.from({ length: 20 }, (_, i) => 51 + i),
    );
    assert.equal(a!.services.messaging.messaging.openLanes, 1);
    assert.equal(m.bus.members.get(toHex(A.publicKey))!.openStreams, 1, 'one stream carried all of them');

    // Checked before anything is sent: a bad topic, an oversized payload, an empty or oversized batch.
    const bad: [OutgoingMessage[], string | typeof InvalidNameError][] = [
      [
        [
          { topic: 'ok', payload: new Uint8Array(0) },
          { topic: 'two words', payload: new Uint8Array(0) },
        ],
        InvalidNameError,
      ],
      [[{ topic: 'ok', payload: new Uint8Array(MAX_PAYLOAD_BYTES + 1) }], 'payload-too-large'],
      [Array.from({ length: 65 }, () => ({ topic: 'ok', payload: new Uint8Array(MAX_PAYLOAD_BYTES) })), 'payload-too-large'],
      [[], 'too-many-messages'],
      [Array.from({ length: MAX_BATCH_MESSAGES + 1 }, () => ({ topic: 'ok', payload: new Uint8Array(0) })), 'too-many-messages'],
    ];
    for (const [messages, expected] of bad) {
      if (typeof expected === 'string') await rejectsAsync(() => a!.services.messaging.sendMessages(B.publicKey, messages), MessagingError, expected);
      else await rejectsAsync(() => a!.services.messaging.sendMessages(B.publicKey, messages), expected, 'invalid-name');
    }
    assert.equal(b!.services.messaging.inboxSnapshot(0, null).last_seq, 70, 'none of the bad batches reached B');

    await m.clock.advance(2 * LANE_IDLE_MS);
    await until(
      m,
      'the idle lane closes on both sides',
      () => a!.services.messaging.messaging.openLanes === 0 && m.bus.members.get(toHex(A.publicKey))!.openStreams === 0,
    );
    assert.equal((await a!.services.messaging.sendMessage(B.publicKey, 'again', text.encode('x'))).seq, 71);
    assert.equal(a!.services.messaging.messaging.openLanes, 1);
  } finally {
    await m.stop();
  }
});

test('messaging: a lane that stops acknowledging or breaks fails what waits on it, telling which messages were queued; the next send opens a new lane', async () => {
  const m = await mesh([A]);
  try {
    const [a] = m.nodes;
    // D answers by the lane's number: lane 1 acknowledges two frames, then goes silent; lane 2
    // acknowledges two, then resets; lane 3 resets at its first frame; lane 4 refuses its second
    // frame and queues the rest; lane 5 never answers.
    const d = m.bus.join(D.publicKey);
    let lanes = 0;
    d.serveStream(MESSAGE_STREAM, (stream) => {
      const lane = ++lanes;
      void (async () => {
        const frames = new FrameReader(1 << 20);
        let seen = 0;
        for await (const chunk of stream) {
          for (const _ of frames.push(chunk)) {
            seen++;
            if (lane === 5 || (lane === 1 && seen > 2)) continue;
            if (lane === 3 || (lane === 2 && seen > 2)) return stream.reset(new Error('D gives up'));
            const ack =
              lane === 4 && seen === 2
                ? { answer: 'Refused' as const, reason: 'bad-topic', detail: 'no' }
                : { answer: 'Queued' as const, seq: 100 * lane + seen };
            await stream.write(framesOf([encode(appAckCodec, ack)]));
          }
        }
      })().catch(() => {});
    });
    const batch = Array.from({ length: 5 }, (_, i) => ({ topic: 't', payload: text.encode(`${i}`) }));
    const started = m.clock.now();
    const silent = await settle(m, a!.services.messaging.sendMessages(D.publicKey, batch));
    assert.instanceOf(silent.error, BatchStoppedError);
    assert.deepEqual((silent.error as BatchStoppedError).seqs, [101, 102]);
    assert.instanceOf((silent.error as BatchStoppedError).cause, RequestTimeoutError);
    assert.equal(m.clock.now() - started, SEND_TIMEOUT_MS, 'it waited the send timeout, no longer');

    const reset = await settle(m, a!.services.messaging.sendMessages(D.publicKey, batch));
    assert.deepEqual((reset.error as BatchStoppedError).seqs, [201, 202]);
    assert.instanceOf((reset.error as BatchStoppedError).cause, PeerUnreachableError);
    // A single message is told the cause itself.
    const single = await settle(m, a!.services.messaging.sendMessage(D.publicKey, 't', text.encode('x')));
    assert.instanceOf(single.error, PeerUnreachableError);
    // A refusal inside a batch: every message was answered, and the seqs say which were queued.
    const refused = await settle(m, a!.services.messaging.sendMessages(D.publicKey, batch.slice(0, 3)));
    assert.deepEqual((refused.error as BatchStoppedError).seqs, [401, null, 403]);
    assert.equal((refused.error as BatchStoppedError).queued, 2);
    assert.equal(((refused.error as BatchStoppedError).cause as MessagingError).code, 'refused');

    // Lane 4 is still good; then D stops answering (lane 5): what waits ahead is bounded (503,
    // nothing sent), and a node that stops fails what waits at once.
    await a!.services.messaging.sendMessage(D.publicKey, 't', text.encode('ok'));
    const big = Array.from({ length: 64 }, () => ({ topic: 't', payload: new Uint8Array(MAX_PAYLOAD_BYTES) }));
    await m.clock.advance(2 * LANE_IDLE_MS);
    const first = a!.services.messaging.sendMessages(D.publicKey, big);
    const outcome = settle(m, first);
    await until(m, 'the first batch is on lane 5', () => lanes === 5);
    await rejectsAsync(() => a!.services.messaging.sendMessages(D.publicKey, big), PeerBusyError, 'busy');
    const stopping = a!.stop();
    const stopped = await outcome;
    await stopping;
    assert.instanceOf((stopped.error as BatchStoppedError).cause, PeerUnreachableError);
    assert.match((stopped.error as Error).message, /this node stopped/);
  } finally {
    await m.stop();
  }
});

test("messaging: a peer that serves no lanes is sent the spec's RPC app.message, one message at a time, in order", async () => {
  const m = await mesh([A]);
  try {
    const [a] = m.nodes;
    const e = m.bus.join(E.publicKey);
    const got: string[] = [];
    e.serve(MESSAGING_RPC.message, async ({ data }) => {
      got.push(new TextDecoder().decode(decode(appMessageCodec, data).payload));
      return encode(appAckCodec, { answer: 'Queued', seq: got.length });
    });
    const answer = await a!.services.messaging.sendMessages(
      E.publicKey,
      ['a', 'b', 'c'].map((p) => ({ topic: 't', payload: text.encode(p) })),
    );
    assert.deepEqual(answer.seqs, [1, 2, 3]);
    assert.deepEqual(got, ['a', 'b', 'c']);
    assert.equal(a!.services.messaging.messaging.openLanes, 0);
  } finally {
    await m.stop();
  }
});

test('messaging: a served lane refuses an oversized frame, a fifth lane from one peer, and one idle past its time', async () => {
  const m = await mesh([A, B]);
  try {
    const c = m.bus.join(C.publicKey);
    // A length prefix over the bound resets the lane at once, before its body, and counts against the peer.
    const huge = new Uint8Array(4);
    new DataView(huge.buffer).setUint32(0, MAX_FRAME_BYTES + 1);
    const oversized = await c.openStream(B.publicKey, MESSAGE_STREAM);
    await oversized.write(huge);
    await rejectsAsync(() => oversized.closed, StreamResetError, 'stream-reset');
    assert.deepEqual(
      network(m, B).penalties.map((p) => p.node),
      [toHex(C.publicKey)],
    );
    // Four lanes from one peer are served; a fifth is reset.
    const open = await Promise.all(Array.from({ length: LANES_PER_PEER }, () => c.openStream(B.publicKey, MESSAGE_STREAM, { maxStreams: 10 })));
    const fifth = await c.openStream(B.publicKey, MESSAGE_STREAM, { maxStreams: 10 });
    await rejectsAsync(() => fifth.closed, StreamResetError, 'stream-reset');
    // A lane that brings no message is reset once it has been idle past its time.
    await m.clock.advance(SERVED_LANE_IDLE_MS + LANE_IDLE_MS);
    for (const lane of open) await rejectsAsync(() => lane.closed, StreamResetError, 'stream-reset');
  } finally {
    await m.stop();
  }
});
