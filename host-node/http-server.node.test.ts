// The node API served on node:http, over a real socket: a route, SSE delivery and unsubscription,
// the body bound on a streamed upload, and close() ending open event streams.

import assert from 'node:assert/strict';
import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { test } from 'node:test';
import { INBOX_EVENT } from '../core/api/fake-messaging.test-util.ts';
import { BLOCK, BOB, FakeNode } from '../core/api/fake-node.test-util.ts';
import { createNodeApi } from '../core/api/handler.ts';
import { bytesResponse } from '../core/web/bytes-response.ts';
import { type HttpServer, serveFetch } from './http-server.ts';

const TOKEN = 'test-token';

async function start(options: { maxBodyBytes?: number } = {}): Promise<{ node: FakeNode; server: HttpServer }> {
  const node = new FakeNode();
  const server = await serveFetch(createNodeApi({ services: node.services, token: TOKEN, ...options }), '127.0.0.1', 0);
  return { node, server };
}

/** Resolves once `check` is true, polling; rejects after `ms`. */
async function until(check: () => boolean, what: string, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Opens an event stream; resolves with the response once its head arrived. */
function openStream(url: string): Promise<{ req: ClientRequest; res: IncomingMessage; text: () => string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { accept: 'text/event-stream' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      resolve({ req, res, text: () => text });
    });
    req.once('error', reject);
    req.end();
  });
}

test('http-server: answers a route over a real socket', async () => {
  const { server } = await start();
  try {
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    assert.equal(await health.text(), 'ok');
    const status = await fetch(`${server.url}/status`);
    assert.equal(status.headers.get('content-type'), 'application/json');
    assert.equal(((await status.json()) as { height: number }).height, 7);
    const transfer = await fetch(`${server.url}/transfer`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: BOB, amount: '5' }),
    });
    assert.equal(transfer.status, 201);
    const refused = await fetch(`${server.url}/transfer`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('www-authenticate'), 'Bearer');
    await refused.body?.cancel();
  } finally {
    await server.close();
  }
});

test('http-server: a held body goes out whole with its length; a head Node refuses cuts that connection, not the server', async () => {
  const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => 0x41 + (i % 26));
  const server = await serveFetch(
    async (request) => {
      const url = new URL(request.url);
      if (url.pathname === '/big') return bytesResponse(big, { status: 201, headers: { 'content-type': 'application/octet-stream' } });
      // A header value that fetch's Headers takes and node:http refuses to write.
      return bytesResponse('x', { headers: { 'x-echo': decodeURIComponent(url.searchParams.get('v') ?? '') } });
    },
    '127.0.0.1',
    0,
  );
  try {
    const answer = await fetch(`${server.url}/big`);
    assert.equal(answer.status, 201);
    assert.equal(answer.headers.get('content-length'), String(big.length));
    assert.deepEqual(new Uint8Array(await answer.arrayBuffer()), big);
    await assert.rejects(fetch(`${server.url}/echo?v=a%01b`), 'the connection is cut');
    const after = await fetch(`${server.url}/echo?v=fine`);
    assert.equal(after.headers.get('x-echo'), 'fine', 'the server still answers');
    await after.body?.cancel();
  } finally {
    await server.close();
  }
});

test("http-server: the request signal (and a clone's) is aborted when the client leaves mid-answer, never after a complete answer; a clone reads the body too", async () => {
  const signals: AbortSignal[] = [];
  let cloned: AbortSignal | undefined;
  let release = (): void => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const server = await serveFetch(
    async (request) => {
      signals.push(request.signal);
      if (request.method === 'POST') return bytesResponse(`${await request.clone().text()}|${await request.text()}`);
      if (new URL(request.url).pathname === '/slow') {
        cloned = request.clone().signal;
        await held;
      }
      return bytesResponse('done');
    },
    '127.0.0.1',
    0,
  );
  try {
    assert.equal(await (await fetch(`${server.url}/fast`)).text(), 'done');
    assert.equal(await (await fetch(`${server.url}/echo`, { method: 'POST', body: 'abc' })).text(), 'abc|abc');
    const gone = httpRequest(`${server.url}/slow`);
    gone.on('error', () => {});
    gone.end();
    await until(() => signals.length === 3, 'the slow request');
    const [fast, post, slow] = signals as [AbortSignal, AbortSignal, AbortSignal];
    assert.equal(slow.aborted, false, 'not aborted while the client waits');
    gone.destroy();
    await until(() => slow.aborted, 'the abort after the client left');
    assert.equal(cloned?.aborted, true, 'a clone follows the same signal');
    release();
    assert.equal(fast.aborted, false);
    assert.equal(post.aborted, false);
  } finally {
    release();
    await server.close();
  }
});

test('http-server: an SSE client receives events as they happen, and leaving unsubscribes', async () => {
  const { node, server } = await start();
  try {
    const stream = await openStream(`${server.url}/blocks/stream`);
    // The head arrives before any event.
    assert.equal(stream.res.statusCode, 200);
    assert.equal(stream.res.headers['content-type'], 'text/event-stream');
    await until(() => node.ledger.blockListeners.size === 1, 'the subscription');
    const frame = `id: 8\ndata: ${JSON.stringify(BLOCK)}\n\n`;
    for (const listener of node.ledger.blockListeners) listener(BLOCK);
    await until(() => stream.text() === frame, 'the first event');
    for (const listener of node.ledger.blockListeners) listener({ ...BLOCK, index: 9 });
    await until(() => stream.text() === `${frame}id: 9\ndata: ${JSON.stringify({ ...BLOCK, index: 9 })}\n\n`, 'the second event');
    stream.req.destroy();
    await until(() => node.ledger.blockListeners.size === 0, 'the unsubscription after the client left');
  } finally {
    await server.close();
  }
});

test('http-server: a stream of binary frames goes out as it happens too, its head first', async () => {
  const { node, server } = await start();
  try {
    const answer = await new Promise<IncomingMessage>((resolve, reject) => {
      httpRequest(`${server.url}/mesh/messages/stream`, { headers: { accept: 'application/octet-stream' } }, resolve)
        .once('error', reject)
        .end();
    });
    assert.equal(answer.statusCode, 200);
    assert.equal(answer.headers['content-type'], 'application/octet-stream');
    let received = 0;
    answer.on('data', (chunk: Buffer) => (received += chunk.length));
    await until(() => node.messaging.followers.size === 1, 'the subscription');
    for (const follower of node.messaging.followers) follower.listener(INBOX_EVENT);
    // One frame: its length, then kind, seq, at, from, topic, payload "hi" and no reply token.
    await until(() => received === 4 + 1 + 8 + 8 + 32 + 4 + 4 + 4 + 2 + 1, 'the entry, long before a keep-alive');
    answer.destroy();
    await until(() => node.messaging.followers.size === 0, 'the unsubscription after the client left');
  } finally {
    await server.close();
  }
});

test('http-server: a streamed body without Content-Length is refused with 413 once past the bound', async () => {
  const { node, server } = await start({ maxBodyBytes: 1024 });
  try {
    const chunk = Buffer.alloc(256, 0x20);
    let written = 0;
    const status = await new Promise<number>((resolve, reject) => {
      let answered = false;
      const req = httpRequest(`${server.url}/transfer`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      });
      req.on('response', (res) => {
        answered = true;
        res.resume();
        req.end();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', (error) => {
        if (!answered) reject(error);
      });
      // Keeps sending, in separate writes, until the server answers.
      const pump = (): void => {
        if (answered || req.destroyed) return;
        written += chunk.length;
        req.write(chunk, () => setTimeout(pump, 1));
      };
      pump();
    });
    assert.equal(status, 413);
    assert.ok(written < 64 * 1024, `the server answered after ${written} bytes`);
    assert.deepEqual(node.ledger.transfers, []);
  } finally {
    await server.close();
  }
});

test('http-server: close() ends open SSE streams and resolves', async () => {
  const { node, server } = await start();
  const streams = await Promise.all([openStream(`${server.url}/signals/stream`), openStream(`${server.url}/transactions/stream`)]);
  await until(() => node.signals.signalListeners.size === 1 && node.ledger.txListeners.size === 1, 'both subscriptions');
  const ended = streams.map(({ res }) => new Promise<void>((resolve) => res.once('end', resolve)));
  const started = Date.now();
  await server.close();
  await Promise.all(ended);
  assert.ok(Date.now() - started < 1500, `close took ${Date.now() - started} ms`);
  assert.equal(node.signals.signalListeners.size, 0);
  assert.equal(node.ledger.txListeners.size, 0);
  await assert.rejects(fetch(`${server.url}/health`));
});

/** One raw HTTP/1.1 exchange over a fresh socket: what the server sent until it closed. */
function rawExchange(url: string, text: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(text));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.once('close', () => resolve(answer));
    socket.once('error', reject);
  });
}

/** The status, content type and JSON body of one raw answer (chunked or not). */
function problemOf(answer: string): { status: number; contentType: string | undefined; body: { type: string; status: number; title: string; detail: string } } {
  const split = answer.indexOf('\r\n\r\n');
  const head = answer.slice(0, split);
  let body = answer.slice(split + 4);
  if (/^transfer-encoding: *chunked/im.test(head)) {
    let text = '';
    for (let at = 0; ; ) {
      const end = body.indexOf('\r\n', at);
      const size = parseInt(body.slice(at, end), 16);
      if (!(size > 0)) break;
      text += body.slice(end + 2, end + 2 + size);
      at = end + 2 + size + 2;
    }
    body = text;
  }
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  const contentType = /^content-type: *(.+)$/im.exec(head)?.[1]?.trim();
  return { status, contentType, body: JSON.parse(body) as { type: string; status: number; title: string; detail: string } };
}

test("http-server: the authority is the Host header's; a request target of //host/… or http://host/… cannot replace it", async () => {
  const { node, server } = await start();
  try {
    const origin = new URL(server.url);
    // A DNS-rebinding page on evil.example asking for //127.0.0.1/status must not pass as addressed to 127.0.0.1.
    const rebound = problemOf(
      await rawExchange(server.url, `GET //127.0.0.1:${origin.port}/status HTTP/1.1\r\nHost: evil.example:${origin.port}\r\nConnection: close\r\n\r\n`),
    );
    assert.equal(rebound.status, 403);
    assert.equal(rebound.body.type, '/problems/host-not-allowed');
    // A page on localhost:3000 posting to //localhost:3000/transfer must not pass as same-origin.
    const body = JSON.stringify({ to: BOB, amount: '5' });
    const cross = problemOf(
      await rawExchange(
        server.url,
        `POST //localhost:3000/transfer HTTP/1.1\r\nHost: ${origin.host}\r\nOrigin: http://localhost:3000\r\nAuthorization: Bearer ${TOKEN}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      ),
    );
    assert.equal(cross.status, 403);
    assert.equal(cross.body.type, '/problems/cross-origin');
    assert.deepEqual(node.ledger.transfers, []);
    // A target of //status names an authority, which is dropped, and the path /, which is no route.
    const doubled = problemOf(await rawExchange(server.url, `GET //status HTTP/1.1\r\nHost: ${origin.host}\r\nConnection: close\r\n\r\n`));
    assert.equal(doubled.status, 404);
    // An absolute-form target naming another authority than Host is refused, whichever is honest.
    for (const [target, host] of [
      [`http://127.0.0.1:${origin.port}/status`, `evil.example:${origin.port}`],
      ['http://evil.example/status', origin.host],
    ]) {
      const conflicting = problemOf(await rawExchange(server.url, `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
      assert.equal(conflicting.status, 400, target);
      assert.equal(conflicting.body.type, '/problems/bad-request');
    }
    // One naming the same authority as Host is the same request as its origin form.
    const agreeing = await rawExchange(server.url, `GET http://${origin.host}/status HTTP/1.1\r\nHost: ${origin.host}\r\nConnection: close\r\n\r\n`);
    assert.match(agreeing, /^HTTP\/1\.1 200 /);
  } finally {
    await server.close();
  }
});

test('http-server: TRACE and the other methods no route takes go through the handler: 405 with Allow, 404 for no path', async () => {
  const { server } = await start();
  try {
    const { host } = new URL(server.url);
    const exchange = async (method: string, path: string, headers = ''): Promise<{ status: number; allow: string | undefined; type: string }> => {
      const answer = await rawExchange(server.url, `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${headers}Connection: close\r\n\r\n`);
      const { status, body } = problemOf(answer);
      return { status, allow: /^allow: *(.*)$/im.exec(answer.slice(0, answer.indexOf('\r\n\r\n')))?.[1]?.trim(), type: body.type };
    };
    // TRACE is safe (RFC 9110): no token needed to be told no route takes it.
    assert.deepEqual(await exchange('TRACE', '/status'), { status: 405, allow: 'GET, HEAD, OPTIONS', type: '/problems/method-not-allowed' });
    assert.deepEqual(await exchange('TRACE', '/transfer'), { status: 405, allow: 'POST, OPTIONS', type: '/problems/method-not-allowed' });
    assert.deepEqual(await exchange('trace', '/status'), { status: 400, allow: undefined, type: '/problems/bad-request' }, 'methods are case-sensitive');
    assert.equal((await exchange('TRACE', '/nothing-here')).status, 404);
    // A TRACE that comes with a body: the body is never read, the connection closes after the answer.
    assert.equal((await exchange('TRACE', '/status', 'Content-Length: 5\r\n\r\nhello')).status, 405);
    // Methods that may change state need the token first, then get 405 with Allow.
    for (const method of ['PUT', 'PATCH', 'PROPFIND']) {
      assert.equal((await exchange(method, '/status')).status, 401, method);
      assert.deepEqual(await exchange(method, '/status', `Authorization: Bearer ${TOKEN}\r\n`), {
        status: 405,
        allow: 'GET, HEAD, OPTIONS',
        type: '/problems/method-not-allowed',
      });
    }
  } finally {
    await server.close();
  }
});

test('http-server: what node:http refuses is problem details too (a bad request line, oversized headers)', async () => {
  const { server } = await start();
  try {
    const { host } = new URL(server.url);
    const cases: [string, number, string][] = [
      [`FROB /status HTTP/1.1\r\nHost: ${host}\r\n\r\n`, 400, '/problems/bad-request'],
      [`GET /status HTTP/1.1\r\nHost: ${host}\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`, 431, '/problems/headers-too-large'],
    ];
    for (const [text, status, type] of cases) {
      const answer = problemOf(await rawExchange(server.url, text));
      assert.equal(answer.status, status, text.slice(0, 20));
      assert.equal(answer.contentType, 'application/problem+json');
      assert.equal(answer.body.status, status);
      assert.equal(answer.body.type, type);
      assert.equal(typeof answer.body.title, 'string');
    }
  } finally {
    await server.close();
  }
});
