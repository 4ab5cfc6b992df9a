// The /mesh/… messaging routes and the /names routes in-process, over the fake node: what reaches
// the service, every refusal of bad input (and that it reaches nothing), the statuses of the
// service's own refusals, and the inbox's snapshot and stream. Runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../../test/harness.ts';
import { encode } from '../../encoding/codec.ts';
import { LedgerRuleError } from '../../ledger/apply.ts';
import { MessagingError, type MessagingErrorCode } from '../../messaging/errors.ts';
import type { InboxEvent } from '../../messaging/inbox.ts';
import { BatchStoppedError, MAX_BATCH_MESSAGES, MAX_BATCH_PAYLOAD_BYTES } from '../../messaging/messaging.ts';
import { NameError } from '../../names/errors.ts';
import { RequestTimeoutError } from '../../net/errors.ts';
import { AUTH, JSON_POST, ok, post, problem, readUntil, request, setup } from '../api.test-util.ts';
import { CLAIM_TX, INBOX_EVENT, inboxEvent, NAME, PEER, PUBLISH_ID } from '../fake-messaging.test-util.ts';
import { MAX_LISTED_ERRORS } from '../input.ts';
import {
  BATCH_BODY_BYTES,
  BATCH_BYTES_BODY_BYTES,
  batchBytesCodec,
  type InboxFrame,
  inboxEventCodec,
  inboxFramesOf,
  MESSAGING_BODY_BYTES,
} from './messaging.ts';

const TOKEN = '5e'.repeat(16);
const SEND = { to: PEER, topic: 'chat', payload_hex: '6869' };
const MAX = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// What reaches the service

test('messaging routes: send, request, reply, subscribe and publish pass their bodies on, decoded, and answer with the service', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(post('/mesh/send', SEND))), { to: PEER, topic: 'chat', seq: 9 });
  assert.deepEqual(await ok(await api(post('/mesh/send', { ...SEND, to: 'peer-one', payload_hex: '' }))), { to: PEER, topic: 'chat', seq: 9 });
  assert.deepEqual(await ok(await api(post('/mesh/request', { ...SEND, timeout_ms: 2_500 }))), {
    from: PEER,
    topic: 'chat',
    payload_hex: 'ff00',
    elapsed_ms: 12,
  });
  await ok(await api(post('/mesh/request', { ...SEND, to: 'peer-one' })));
  const replied = await api(post('/mesh/reply', { reply_token: TOKEN, payload_hex: 'aa' }));
  assert.equal(replied.status, 204);
  assert.deepEqual(await ok(await api(post('/mesh/subscribe', { topic: 'news/world' }))), { topic: 'news/world', subscribed: true, subscriptions: 1 });
  assert.deepEqual(await ok(await api(post('/mesh/publish', { topic: 'news/world', payload_hex: '00ff' })), 202), {
    id: PUBLISH_ID,
    topic: 'news/world',
    peers: 2,
  });
  assert.deepEqual(node.messaging.calls, [
    { method: 'sendMessage', args: [PEER, 'chat', '6869'] },
    { method: 'sendMessage', args: ['peer-one', 'chat', ''] },
    { method: 'requestMessage', args: [PEER, 'chat', '6869', 2_500] },
    { method: 'requestMessage', args: ['peer-one', 'chat', '6869', 10_000] },
    { method: 'replyMessage', args: [TOKEN, 'aa'] },
    { method: 'subscribeTopic', args: ['news/world'] },
    { method: 'publishMessage', args: ['news/world', '00ff'] },
  ]);
});

test('messaging routes: a payload of exactly 64 KiB passes; the body bound leaves room for it', async () => {
  const { api, node } = setup();
  const payload = 'ab'.repeat(MAX);
  await ok(await api(post('/mesh/send', { ...SEND, payload_hex: payload })));
  await ok(await api(post('/mesh/publish', { topic: 'x', payload_hex: payload })), 202);
  assert.equal((node.messaging.calls[0]!.args[2] as string).length, 2 * MAX);
  assert.isAbove(MESSAGING_BODY_BYTES, 2 * MAX + JSON.stringify({ ...SEND, payload_hex: '' }).length);
});

// ---------------------------------------------------------------------------------------------
// Bad input on every route

/** Bodies each route refuses with 400, as [what, body]. */
function badBodies(base: Record<string, unknown>): [string, unknown][] {
  const cases: [string, unknown][] = [
    ['an unknown field', { ...base, extra: 1 }],
    ['not an object', [base]],
  ];
  if ('to' in base) {
    for (const [what, to] of [
      ['a node id of 63 characters', PEER.slice(1)],
      ['a node id of 65 characters', `${PEER}a`],
      ['an upper-case node id', PEER.toUpperCase()],
      ['a non-hex node id', 'zz'.repeat(32)],
      ['a name with a capital letter', 'Peer-one'],
      ['a name of 33 characters', 'a'.repeat(33)],
      ['an empty to', ''],
      ['a number', 7],
    ] as const)
      cases.push([what, { ...base, to }]);
    cases.push(['no to', { ...base, to: undefined }]);
  }
  if ('topic' in base) {
    for (const [what, topic] of [
      ['an empty topic', ''],
      ['a topic with a space', 'two words'],
      ['a topic of 129 characters', 't'.repeat(129)],
      ['a topic outside ASCII', 'café'],
    ] as const)
      cases.push([what, { ...base, topic }]);
    cases.push(['no topic', { ...base, topic: undefined }]);
  }
  if ('payload_hex' in base) {
    for (const [what, payload] of [
      ['odd-length hex', 'abc'],
      ['upper-case hex', 'AB'],
      ['non-hex', 'zz'],
      ['a 0x prefix', '0xab'],
      ['a number', 12],
    ] as const)
      cases.push([what, { ...base, payload_hex: payload }]);
    cases.push(['no payload', { ...base, payload_hex: undefined }]);
  }
  if ('reply_token' in base) {
    for (const [what, token] of [
      ['a short token', 'ab'.repeat(15)],
      ['an upper-case token', TOKEN.toUpperCase()],
      ['a node id as token', PEER],
    ] as const)
      cases.push([what, { ...base, reply_token: token }]);
  }
  return cases;
}

const ROUTES: [string, Record<string, unknown>][] = [
  ['/mesh/send', SEND],
  ['/mesh/request', SEND],
  ['/mesh/reply', { reply_token: TOKEN, payload_hex: '00' }],
  ['/mesh/subscribe', { topic: 'chat' }],
  ['/mesh/publish', { topic: 'chat', payload_hex: '00' }],
  ['/names/claim', { name: 'peer-one' }],
];

test('messaging routes: every route refuses a bad node id, bad hex, an empty or bad topic, a bad token or a bad name with 400, reaching nothing', async () => {
  const { api, node } = setup();
  for (const [path, base] of ROUTES) {
    const cases = badBodies(base);
    if (path === '/names/claim') {
      for (const [what, name] of [
        ['a capital letter', 'Alice'],
        ['33 characters', 'n'.repeat(33)],
        ['nothing', ''],
        ['an underscore', 'a_b'],
        ['a number', 5],
      ] as const) {
        cases.push([`a name of ${what}`, { name }]);
      }
    }
    for (const [what, body] of cases) {
      const answer = await problem(await api(post(path, JSON.stringify(body))), 400);
      assert.equal(answer.type, '/problems/invalid-body', `${path}: ${what}`);
    }
  }
  for (const timeout_ms of [0, 60_001, 1.5, '100', -1]) {
    const answer = await problem(await api(post('/mesh/request', { ...SEND, timeout_ms })), 400);
    assert.deepEqual(
      (answer.errors as { name: string }[]).map((e) => e.name),
      ['timeout_ms'],
      String(timeout_ms),
    );
  }
  const named = await problem(await api(post('/mesh/send', { ...SEND, topic: '' })), 400);
  assert.deepEqual(named.errors, [{ name: 'topic', detail: 'must be an app topic: 1 to 128 visible ASCII characters, without spaces' }]);
  assert.deepEqual(node.messaging.calls, []);
});

test('messaging routes: a payload over 64 KiB is 413 on every route that carries one, whatever else is wrong; so is a body over the bound', async () => {
  const { api, node } = setup();
  const over = '00'.repeat(MAX + 1);
  for (const [path, base] of ROUTES.filter(([, b]) => 'payload_hex' in b)) {
    const answer = await problem(await api(post(path, { ...base, payload_hex: over })), 413);
    assert.equal(answer.type, '/problems/too-large', path);
    assert.equal(answer.limit_bytes, MAX);
    await problem(await api(post(path, { ...base, topic: '', payload_hex: over })), 413);
  }
  const huge = await problem(await api(post('/mesh/send', { ...SEND, payload_hex: '00', pad: 'x'.repeat(MESSAGING_BODY_BYTES) })), 413);
  assert.equal(huge.limit_bytes, MESSAGING_BODY_BYTES);
  // The other routes keep the API's own bound.
  const transfer = await problem(await api(post('/transfer', { to: PEER, amount: '1', pad: 'x'.repeat(70_000) })), 413);
  assert.equal(transfer.limit_bytes, 64 * 1024);
  assert.deepEqual(node.messaging.calls, []);
});

test('messaging routes: they need the token like every mutating route', async () => {
  const { api, node } = setup();
  for (const [path, body] of ROUTES) {
    await problem(await api(post(path, body, { 'content-type': 'application/json' })), 401);
    await problem(await api(post(path, body, { ...JSON_POST, origin: 'http://localhost:3000' })), 403);
  }
  assert.deepEqual(node.messaging.calls, []);
});

// ---------------------------------------------------------------------------------------------
// The service's refusals

test("messaging routes: the service's refusals are answered by their tables", async () => {
  const { api, node } = setup();
  const cases: [MessagingErrorCode, number, string, string][] = [
    ['self', 400, 'invalid-body', '/mesh/send'],
    ['payload-too-large', 413, 'too-large', '/mesh/reply'],
    ['too-many-requests', 429, 'too-many-requests', '/mesh/request'],
    ['too-many-subscriptions', 507, 'too-many-subscriptions', '/mesh/subscribe'],
    ['no-peers', 503, 'no-peers', '/mesh/publish'],
    ['unknown-reply-token', 404, 'unknown-reply-token', '/mesh/reply'],
    ['reply-too-late', 410, 'reply-too-late', '/mesh/reply'],
    ['already-replied', 409, 'already-replied', '/mesh/reply'],
    ['peer-busy', 503, 'peer-busy', '/mesh/request'],
    ['refused', 502, 'peer-refused', '/mesh/send'],
  ];
  const bodies: Record<string, unknown> = Object.fromEntries(ROUTES);
  for (const [code, status, type, path] of cases) {
    node.messaging.failure = new MessagingError(code, `refused: ${code}`);
    const answer = await problem(await api(post(path, bodies[path])), status);
    assert.equal(answer.type, `/problems/${type}`, code);
    assert.equal(answer.rule, code);
  }
  node.messaging.failure = new RequestTimeoutError(PEER, '/mesh/rpc/1/app.request', 10_000);
  const timeout = await problem(await api(post('/mesh/request', SEND)), 504);
  assert.match(timeout.detail, /may still have processed/);
  node.messaging.failure = new NameError('unknown', 'no node holds the name ghost');
  assert.equal((await problem(await api(post('/mesh/send', { ...SEND, to: 'ghost' })), 404)).type, '/problems/unknown-name');
  node.messaging.failure = new NameError('taken', 'held');
  assert.equal((await problem(await api(post('/names/claim', { name: 'peer-one' })), 409)).type, '/problems/name-taken');
  node.messaging.failure = new LedgerRuleError('insufficient-free-balance', 'a name costs 1,000 credits');
  assert.equal((await problem(await api(post('/names/claim', { name: 'peer-one' })), 402)).type, '/problems/insufficient-balance');
});

// ---------------------------------------------------------------------------------------------
// Batches

const BATCH = {
  to: PEER,
  messages: [
    { topic: 'chat', payload_hex: '6869' },
    { topic: 'other', payload_hex: '' },
  ],
};

test('messaging routes: POST /mesh/send-batch passes its messages on in order, decoded, and answers with their seqs', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(post('/mesh/send-batch', BATCH))), { to: PEER, seqs: [10, 11] });
  await ok(await api(post('/mesh/send-batch', { ...BATCH, to: 'peer-one' })));
  const full = { to: PEER, messages: Array.from({ length: MAX_BATCH_MESSAGES }, (_, i) => ({ topic: 't', payload_hex: i.toString(16).padStart(4, '0') })) };
  assert.lengthOf(((await ok(await api(post('/mesh/send-batch', full)))) as { seqs: number[] }).seqs, MAX_BATCH_MESSAGES);
  assert.deepEqual(node.messaging.calls.slice(0, 2), [
    { method: 'sendMessages', args: [PEER, BATCH.messages] },
    { method: 'sendMessages', args: ['peer-one', BATCH.messages] },
  ]);
  // Its bound holds a batch of 64 KiB payloads up to the batch's total.
  const heavy = {
    to: PEER,
    messages: Array.from({ length: MAX_BATCH_PAYLOAD_BYTES / MAX }, () => ({ topic: 't'.repeat(128), payload_hex: 'ab'.repeat(MAX) })),
  };
  await ok(await api(post('/mesh/send-batch', heavy)));
});

test('messaging routes: POST /mesh/send-batch refuses a bad batch with 400 naming the field, an oversized payload or body with 413, reaching nothing', async () => {
  const { api, node } = setup();
  const message = BATCH.messages[0]!;
  const bad: [string, unknown, string][] = [
    ['no messages', { to: PEER, messages: [] }, 'messages'],
    ['too many', { to: PEER, messages: Array.from({ length: MAX_BATCH_MESSAGES + 1 }, () => message) }, 'messages'],
    ['messages not an array', { to: PEER, messages: message }, 'messages'],
    ['bad hex in the second', { to: PEER, messages: [message, { topic: 'chat', payload_hex: 'AB' }] }, 'messages.1.payload_hex'],
    ['an empty topic', { to: PEER, messages: [{ topic: '', payload_hex: '' }] }, 'messages.0.topic'],
    ['an unknown field in a message', { to: PEER, messages: [{ ...message, extra: 1 }] }, 'messages.0.extra'],
    ['a bad to', { ...BATCH, to: PEER.toUpperCase() }, 'to'],
    ['no to', { messages: BATCH.messages }, 'to'],
  ];
  for (const [what, body, field] of bad) {
    const answer = await problem(await api(post('/mesh/send-batch', body)), 400);
    assert.equal(answer.type, '/problems/invalid-body', what);
    assert.include(
      (answer.errors as { name: string }[]).map((e) => e.name),
      field,
      what,
    );
  }
  // A batch of bad entries is said in its first 100 faults; a huge array is refused before its entries are looked at.
  const allBad = await problem(await api(post('/mesh/send-batch', { to: PEER, messages: Array.from({ length: MAX_BATCH_MESSAGES }, () => ({})) })), 400);
  assert.lengthOf(allBad.errors as unknown[], MAX_LISTED_ERRORS);
  const flood = await problem(await api(post('/mesh/send-batch', { to: PEER, messages: Array.from({ length: 200_000 }, () => ({})) })), 400);
  assert.deepEqual(flood.errors, [{ name: 'messages', detail: `must hold 1 to ${MAX_BATCH_MESSAGES} messages` }]);
  const over = await problem(
    await api(post('/mesh/send-batch', { to: PEER.toUpperCase(), messages: [message, { topic: '', payload_hex: '00'.repeat(MAX + 1) }] })),
    413,
  );
  assert.equal(over.limit_bytes, MAX);
  const huge = await problem(await api(post('/mesh/send-batch', { ...BATCH, pad: 'x'.repeat(BATCH_BODY_BYTES) })), 413);
  assert.equal(huge.limit_bytes, BATCH_BODY_BYTES);
  await problem(await api(post('/mesh/send-batch', BATCH, { 'content-type': 'application/json' })), 401);
  assert.deepEqual(node.messaging.calls, []);
});

const BYTES_POST = { ...AUTH, 'content-type': 'application/octet-stream' };
const bytesOf = (hex: string): Uint8Array => Uint8Array.from(hex.match(/../g) ?? [], (byte) => parseInt(byte, 16));
const BATCH_BYTES = encode(
  batchBytesCodec,
  BATCH.messages.map((m) => ({ topic: m.topic, payload: bytesOf(m.payload_hex) })),
);
const postBytes = (query: string, body: Uint8Array): Request => request(`/mesh/send-batch${query}`, { method: 'POST', headers: BYTES_POST, body });

test('messaging routes: POST /mesh/send-batch takes the batch as bytes, `to` in the query, and passes the same messages on', async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(postBytes(`?to=${PEER}`, BATCH_BYTES))), { to: PEER, seqs: [10, 11] });
  await ok(await api(postBytes('?to=peer-one', BATCH_BYTES)));
  assert.deepEqual(node.messaging.calls, [
    { method: 'sendMessages', args: [PEER, BATCH.messages] },
    { method: 'sendMessages', args: ['peer-one', BATCH.messages] },
  ]);
  // Its bound holds a full batch of 64 KiB payloads under the longest topics.
  const heavy = Array.from({ length: MAX_BATCH_PAYLOAD_BYTES / MAX }, () => ({ topic: 't'.repeat(128), payload: new Uint8Array(MAX) }));
  const heavyBytes = encode(batchBytesCodec, heavy);
  await ok(await api(postBytes(`?to=${PEER}`, heavyBytes)));
  // The largest body: 1,024 messages under the longest topics, holding 4 MiB of payload between them.
  const largest =
    encode(
      batchBytesCodec,
      Array.from({ length: MAX_BATCH_MESSAGES }, () => ({ topic: 't'.repeat(128), payload: new Uint8Array(0) })),
    ).length + MAX_BATCH_PAYLOAD_BYTES;
  assert.equal(largest, BATCH_BYTES_BODY_BYTES);
});

test('messaging routes: a batch as bytes is refused whole for a bad or missing `to`, bytes that are not a batch, a bad topic, an oversized payload or body', async () => {
  const { api, node } = setup();
  const one = (topic: string, payload: Uint8Array): Uint8Array => encode(batchBytesCodec, [{ topic, payload }]);
  for (const query of ['', `?to=${PEER.toUpperCase()}`, '?to=Peer', `?to=${PEER}&to=${PEER}`]) {
    const answer = await problem(await api(postBytes(query, BATCH_BYTES)), 400);
    assert.equal(answer.type, '/problems/invalid-parameter', query);
  }
  assert.equal((await problem(await api(postBytes(`?to=${PEER}&topic=x`, BATCH_BYTES)), 400)).type, '/problems/unknown-parameter');
  // `to` in the query is for a batch of bytes: with another media type (or a parameter on it), the media type is wrong.
  for (const type of ['application/json', 'application/octet-stream; charset=binary', 'text/plain']) {
    const answer = await problem(
      await api(request(`/mesh/send-batch?to=${PEER}`, { method: 'POST', headers: { ...AUTH, 'content-type': type }, body: BATCH_BYTES })),
      415,
    );
    assert.match(answer.detail, /a batch with \?to= is bytes: send it as content-type: application\/octet-stream/, type);
  }
  const bad: [string, Uint8Array, RegExp][] = [
    ['no bytes', new Uint8Array(0), /not a batch of messages/],
    ['a cut batch', BATCH_BYTES.subarray(0, BATCH_BYTES.length - 1), /not a batch of messages/],
    ['trailing bytes', Uint8Array.of(...BATCH_BYTES, 0), /not a batch of messages/],
    ['no messages', encode(batchBytesCodec, []), /a batch holds 1 to 1024 messages, got 0/],
    ['more than 1,024 messages', Uint8Array.of(0, 0, 0x04, 0x01), /not a batch of messages/],
    ['an empty topic', one('', new Uint8Array(1)), /messages\.0\.topic/],
    [
      'a topic with a space',
      encode(batchBytesCodec, [
        { topic: 'ok', payload: new Uint8Array(0) },
        { topic: 'a b', payload: new Uint8Array(0) },
      ]),
      /messages\.1\.topic/,
    ],
  ];
  for (const [what, body, detail] of bad) {
    const answer = await problem(await api(postBytes(`?to=${PEER}`, body)), 400);
    assert.equal(answer.type, '/problems/invalid-body', what);
    assert.match(answer.detail, detail, what);
  }
  const over = await problem(await api(postBytes(`?to=${PEER}`, one('chat', new Uint8Array(MAX + 1)))), 413);
  assert.equal(over.limit_bytes, MAX);
  const huge = await problem(await api(postBytes(`?to=${PEER}`, new Uint8Array(BATCH_BYTES_BODY_BYTES + 1))), 413);
  assert.equal(huge.limit_bytes, BATCH_BYTES_BODY_BYTES);
  // Another media type is 415; bytes need the token like any change.
  await problem(await api(request('/mesh/send-batch', { method: 'POST', headers: { ...AUTH, 'content-type': 'text/plain' }, body: BATCH_BYTES })), 415);
  await problem(
    await api(request(`/mesh/send-batch?to=${PEER}`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: BATCH_BYTES })),
    401,
  );
  assert.deepEqual(node.messaging.calls, []);
});

test("messaging routes: a batch that stops part-way answers its cause's status, with how many were queued and their seqs", async () => {
  const { api, node } = setup();
  node.messaging.failure = new BatchStoppedError(new RequestTimeoutError(PEER, '/mesh/app/1/messages', 10_000), [4, 5], 9);
  const timeout = await problem(await api(post('/mesh/send-batch', BATCH)), 504);
  assert.equal(timeout.type, '/problems/peer-timeout');
  assert.deepInclude(timeout, { queued: 2, seqs: [4, 5], rule: 'timeout' });
  assert.match(timeout.detail, /^2 of the batch's 9 messages were queued \(2 answered\): no answer from/);
  // A refusal inside a batch: every message was answered, and the seqs say which were queued.
  node.messaging.failure = new BatchStoppedError(new MessagingError('refused', 'refused (bad-topic)'), [7, null, 8], 3);
  assert.deepInclude(await problem(await api(post('/mesh/send-batch', BATCH)), 502), { type: '/problems/peer-refused', queued: 2, seqs: [7, null, 8] });
  // Refused before anything was sent: the plain problem.
  node.messaging.failure = new MessagingError('self', 'to is this node');
  const self = await problem(await api(post('/mesh/send-batch', BATCH)), 400);
  assert.notProperty(self, 'queued');
});

// ---------------------------------------------------------------------------------------------
// The inbox

test("messaging routes: GET /mesh/messages is the ring's snapshot with its drop count; after and topic narrow it", async () => {
  const { api, node } = setup();
  node.messaging.events = [INBOX_EVENT, inboxEvent({ seq: 4, topic: 'other' })];
  const all = await ok<{ messages: InboxEvent[]; dropped: number; last_seq: number; capacity: unknown }>(await api(request('/mesh/messages')));
  assert.deepEqual(
    all.messages.map((e) => e.seq),
    [3, 4],
  );
  assert.equal(all.dropped, 4);
  assert.deepEqual(all.capacity, { messages: 1_024, bytes: 8 * 1024 * 1024 });
  assert.deepEqual(
    (await ok<{ messages: InboxEvent[] }>(await api(request('/mesh/messages?after=3')))).messages.map((e) => e.seq),
    [4],
  );
  assert.deepEqual(
    (await ok<{ messages: InboxEvent[] }>(await api(request('/mesh/messages?topic=chat')))).messages.map((e) => e.seq),
    [3],
  );
  for (const query of ['after=-1', 'after=01', 'after=x', 'topic=', 'topic=a%20b', 'after=1&after=2', 'limit=3']) {
    await problem(await api(request(`/mesh/messages?${query}`)), 400);
  }
});

test('messaging routes: an entry is shown as JSON with its payload as hex, a reply token on a request only, and nothing else', async () => {
  const { api, node } = setup();
  node.messaging.events = [INBOX_EVENT, inboxEvent({ seq: 5, kind: 'request', reply_token: TOKEN, payload: Uint8Array.of(0, 255) })];
  const text = await (await api(request('/mesh/messages'))).text();
  const from = `"from":"${PEER}"`;
  assert.equal(
    text,
    `{"messages":[{"kind":"message","seq":3,"at":1700000000000,${from},"topic":"chat","payload_hex":"6869"},` +
      `{"kind":"request","seq":5,"at":1700000000000,${from},"topic":"chat","payload_hex":"00ff","reply_token":"${TOKEN}"}],` +
      '"dropped":4,"last_seq":3,"capacity":{"messages":1024,"bytes":8388608}}',
  );
  const live = (await api(request('/mesh/messages/stream?after=4'))).body!.getReader();
  assert.equal(
    await readUntil(live, '\n\n'),
    `id: 5\ndata: {"kind":"request","seq":5,"at":1700000000000,${from},"topic":"chat","payload_hex":"00ff","reply_token":"${TOKEN}"}\n\n`,
  );
  await live.cancel();
});

test('messaging routes: the stream carries each entry with its seq as the event id; after or Last-Event-ID replays the ring first', async () => {
  const { api, node } = setup();
  const frame = (event: InboxEvent): string => `id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`;
  const live = await api(request('/mesh/messages/stream?topic=chat', { headers: { accept: 'text/event-stream, application/octet-stream;q=0' } }));
  assert.equal(live.headers.get('content-type'), 'text/event-stream');
  assert.include(live.headers.get('vary'), 'Accept');
  const reader = live.body!.getReader();
  const [follower] = node.messaging.followers;
  assert.deepEqual([follower!.after, follower!.topic], [null, 'chat']);
  const next = inboxEvent({ seq: 5, kind: 'request', reply_token: TOKEN });
  follower!.listener(next);
  assert.equal(await readUntil(reader, '\n\n'), frame(next));
  await reader.cancel();
  assert.equal(node.messaging.followers.size, 0, 'the subscription ends with the connection');

  const resumed = await api(request('/mesh/messages/stream', { headers: { 'last-event-id': '2' } }));
  const resumedReader = resumed.body!.getReader();
  assert.equal(await readUntil(resumedReader, '\n\n'), frame(INBOX_EVENT));
  await resumedReader.cancel();
  const explicit = await api(request('/mesh/messages/stream?after=3', { headers: { 'last-event-id': '1' } }));
  await explicit.body!.cancel();
  assert.deepEqual(
    node.messaging.calls.filter((c) => c.method === 'followInbox').map((c) => c.args),
    [
      [null, 'chat'],
      [2, null],
      [3, null],
    ],
  );
  await problem(await api(request('/mesh/messages/stream', { headers: { 'last-event-id': 'x' } })), 400);
  await problem(await api(request('/mesh/messages/stream?topic=a b')), 400);
});

/** The entries in `bytes`, whole frames of a binary stream; a cut frame at the end is left out. */
async function inboxFramesRead(bytes: Uint8Array): Promise<InboxFrame[]> {
  const out: InboxFrame[] = [];
  try {
    for await (const frame of inboxFramesOf(new Blob([bytes as Uint8Array<ArrayBuffer>]).stream())) out.push(frame);
  } catch {
    // The frame being read when the bytes were taken.
  }
  return out;
}

test('messaging routes: the stream as bytes (Accept: application/octet-stream) carries each entry as a frame, replays with after, and keeps alive with empty frames', async () => {
  const { api, node } = setup({ keepAliveMs: 20 });
  node.messaging.events = [INBOX_EVENT];
  const answer = await api(request('/mesh/messages/stream?after=0&topic=chat', { headers: { accept: 'text/event-stream;q=0.5, application/octet-stream' } }));
  assert.equal(answer.headers.get('content-type'), 'application/octet-stream');
  assert.include(answer.headers.get('vary'), 'Accept');
  const [follower] = node.messaging.followers;
  assert.deepEqual([follower!.after, follower!.topic], [0, 'chat']);
  const request5 = inboxEvent({ seq: 5, kind: 'request', reply_token: TOKEN, payload: new Uint8Array(MAX).fill(7) });
  const publish6 = inboxEvent({ seq: 6, kind: 'publish', payload: new Uint8Array(0) });
  // The raw bytes: the replayed entry's frame, then an empty frame after 20 ms of quiet.
  const reader = answer.body!.getReader();
  let bytes = new Uint8Array(0);
  const readAtLeast = async (n: number): Promise<void> => {
    while (bytes.length < n) {
      const { value } = await reader.read();
      const joined = new Uint8Array(bytes.length + value!.length);
      joined.set(bytes);
      joined.set(value!, bytes.length);
      bytes = joined;
    }
  };
  const first = encode(inboxEventCodec, {
    kind: 0,
    seq: 3,
    at: 1_700_000_000_000,
    from: bytesOf(PEER),
    topic: 'chat',
    payload: bytesOf('6869'),
    reply_token: null,
  });
  await readAtLeast(4 + first.length + 4);
  assert.deepEqual(bytes.subarray(0, 4 + first.length + 4), Uint8Array.of(0, 0, 0, first.length, ...first, 0, 0, 0, 0));
  follower!.listener(request5);
  follower!.listener(publish6);
  const frameBytes = (event: typeof request5): number =>
    4 +
    encode(inboxEventCodec, {
      kind: 0,
      seq: 0,
      at: 0,
      from: bytesOf(PEER),
      topic: event.topic,
      payload: event.payload,
      reply_token: event.reply_token === undefined ? null : bytesOf(event.reply_token),
    }).length;
  const wanted = 4 + first.length + frameBytes(request5) + frameBytes(publish6);
  // Whatever keep-alives came between, the entries read back as they were.
  while ((await inboxFramesRead(bytes)).length < 3) await readAtLeast(bytes.length + 1);
  assert.isAtLeast(bytes.length, wanted);
  await reader.cancel();
  const frames = await inboxFramesRead(bytes);
  const shown = ({ payload, ...rest }: InboxFrame): unknown => ({ ...rest, payload_hex: Array.from(payload, (b) => b.toString(16).padStart(2, '0')).join('') });
  assert.deepEqual(
    frames.map(shown),
    [INBOX_EVENT, request5, publish6].map((e) => e.toJSON()),
  );
  assert.equal(node.messaging.followers.size, 0, 'the subscription ends with the connection');
});

test('messaging routes: a binary stream reader refuses a frame cut short at the end and a kind it does not know', async () => {
  const frameOf = (kind: number): Uint8Array => {
    const body = encode(inboxEventCodec, { kind, seq: 1, at: 2, from: bytesOf(PEER), topic: 'chat', payload: new Uint8Array(3), reply_token: null });
    return Uint8Array.of(0, 0, 0, body.length, ...body);
  };
  const read = async (chunks: Uint8Array[]): Promise<InboxFrame[]> => {
    const out: InboxFrame[] = [];
    const body = new ReadableStream<Uint8Array>({
      start(controller): void {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    for await (const frame of inboxFramesOf(body)) out.push(frame);
    return out;
  };
  const whole = frameOf(0);
  // Cut anywhere, a stream of whole frames reads the same.
  const two = Uint8Array.of(...whole, 0, 0, 0, 0, ...whole);
  assert.lengthOf(await read([two.subarray(0, 5), two.subarray(5, 40), two.subarray(40)]), 2);
  for (const [what, bytes, message] of [
    ['a cut frame', Uint8Array.of(...whole, ...whole.subarray(0, whole.length - 1)), /ended inside a frame/],
    ['a cut length', Uint8Array.of(...whole, 0, 0), /ended inside a frame/],
    ['kind 3', frameOf(3), /kind is 0 to 2, got 3/],
  ] as const) {
    let error: unknown;
    try {
      await read([bytes]);
    } catch (e) {
      error = e;
    }
    assert.match(String(error), message, what);
  }
});

// ---------------------------------------------------------------------------------------------
// Names and transfers to names

test("names routes: claim answers 202; a name resolves or is 404; a bad name is 400; a node's names are listed", async () => {
  const { api, node } = setup();
  assert.deepEqual(await ok(await api(post('/names/claim', { name: 'peer-one' })), 202), { name: 'peer-one', tx_id: CLAIM_TX });
  assert.deepEqual(await ok(await api(request('/names/peer-one'))), NAME);
  assert.equal((await problem(await api(request('/names/nobody')), 404)).type, '/problems/unknown-name');
  // "claim" is a name like any other: GET resolves it.
  assert.equal((await problem(await api(request('/names/claim')), 404)).type, '/problems/unknown-name');
  for (const bad of ['Alice', 'n'.repeat(33), 'a_b', '%41']) {
    assert.equal((await problem(await api(request(`/names/${bad}`)), 400)).type, '/problems/invalid-parameter', bad);
  }
  assert.deepEqual(await ok(await api(request(`/names?owner=${PEER}`))), [NAME]);
  assert.deepEqual(await ok(await api(request(`/names?owner=${'0a'.repeat(32)}`))), []);
  assert.deepEqual(await ok(await api(request('/names'))), [NAME]);
  for (const query of ['owner=abc', `owner=${PEER.toUpperCase()}`, 'owner=', 'name=x']) await problem(await api(request(`/names?${query}`)), 400);
  assert.equal((await problem(await api(post('/names/peer-one', {})), 405)).type, '/problems/method-not-allowed');
  assert.deepEqual(
    node.messaging.calls.map((c) => c.method),
    ['claimName', 'resolveName', 'resolveName', 'resolveName', 'listNames', 'listNames', 'listNames'],
  );
});

test('names routes: POST /transfer takes a name as its recipient', async () => {
  const { api, node } = setup();
  await ok(await api(post('/transfer', { to: 'peer-one', amount: '5' }, { ...AUTH, 'content-type': 'application/json' })), 201);
  assert.deepEqual(node.ledger.transfers, [{ to: 'peer-one', amount: 5n }]);
  for (const to of ['Peer-one', 'p'.repeat(33), '']) await problem(await api(post('/transfer', { to, amount: '5' })), 400);
});
