// The node API served on node:http, over a real socket: a route, SSE delivery and unsubscription,
// the body bound on a streamed upload, and close() ending open event streams.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type ClientRequest, type IncomingMessage, request as httpRequest } from 'node:http';
import { BLOCK, BOB, FakeNode } from '../core/api/fake-node.test-util.ts';
import { createNodeApi } from '../core/api/handler.ts';
import { type ApiServer, serveApi } from './http-server.ts';

const TOKEN = 'test-token';

async function start(options: { maxBodyBytes?: number } = {}): Promise<{ node: FakeNode; server: ApiServer }> {
  const node = new FakeNode();
  const server = await serveApi(createNodeApi({ service: node, token: TOKEN, ...options }), '127.0.0.1', 0);
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

test('http-server: an SSE client receives events as they happen, and leaving unsubscribes', async () => {
  const { node, server } = await start();
  try {
    const stream = await openStream(`${server.url}/blocks/stream`);
    // The head arrives before any event.
    assert.equal(stream.res.statusCode, 200);
    assert.equal(stream.res.headers['content-type'], 'text/event-stream');
    await until(() => node.blockListeners.size === 1, 'the subscription');
    const frame = `data: ${JSON.stringify(BLOCK)}\n\n`;
    for (const listener of node.blockListeners) listener(BLOCK);
    await until(() => stream.text() === frame, 'the first event');
    for (const listener of node.blockListeners) listener({ ...BLOCK, index: 9 });
    await until(() => stream.text() === frame + `data: ${JSON.stringify({ ...BLOCK, index: 9 })}\n\n`, 'the second event');
    stream.req.destroy();
    await until(() => node.blockListeners.size === 0, 'the unsubscription after the client left');
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
    assert.deepEqual(node.transfers, []);
  } finally {
    await server.close();
  }
});

test('http-server: close() ends open SSE streams and resolves', async () => {
  const { node, server } = await start();
  const streams = await Promise.all([openStream(`${server.url}/signals/stream`), openStream(`${server.url}/transactions/stream`)]);
  await until(() => node.signalListeners.size === 1 && node.txListeners.size === 1, 'both subscriptions');
  const ended = streams.map(({ res }) => new Promise<void>((resolve) => res.once('end', resolve)));
  const started = Date.now();
  await server.close();
  await Promise.all(ended);
  assert.ok(Date.now() - started < 1500, `close took ${Date.now() - started} ms`);
  assert.equal(node.signalListeners.size, 0);
  assert.equal(node.txListeners.size, 0);
  await assert.rejects(fetch(`${server.url}/health`));
});
