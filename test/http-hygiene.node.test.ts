/**
 * HTTP hygiene of a real `mesh node` process: the bounds on open event streams (503 with
 * Retry-After past them, every place given back once the streams close), TRACE through the route
 * table, and JSON bodies read strictly (a member given twice, an amount written as a float).
 */

import assert from 'node:assert/strict';
import { type ClientRequest, request as httpRequest } from 'node:http';
import { after, before, test } from 'node:test';
import { type MeshProcess, postJson, startNode, stopAll, waitFor } from './mesh-process.ts';

const MAX_STREAMS = 12;
const PER_CLIENT = 5;

let node: MeshProcess;
before(async () => {
  node = await startNode({
    mine: true,
    blockIntervalMs: 200,
    extraArgs: ['--max-streams', String(MAX_STREAMS), '--max-streams-per-client', String(PER_CLIENT)],
  });
});
after(stopAll);

const STREAMS = ['/blocks/stream', '/signals/stream', '/transactions/stream'];

interface Opened {
  readonly status: number;
  readonly retryAfter: string | undefined;
  readonly req: ClientRequest;
}

/** Asks for an event stream from the local address `from` (a client of its own); resolves on the answer's head. */
function openFrom(from: string, path: string): Promise<Opened> {
  const { hostname, port } = new URL(node.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path, localAddress: from, agent: false }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined, req });
    });
    req.once('error', reject);
    req.end();
  });
}

async function openMany(from: string, count: number): Promise<Opened[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => openFrom(from, STREAMS[i % STREAMS.length]!)));
}

const closeAll = (opened: readonly Opened[]): void => {
  for (const { req } of opened) req.destroy();
};

test('event streams past the per-client bound get 503 with Retry-After; other clients fill the total; closing gives every place back', async () => {
  const a = await openMany('127.0.0.1', PER_CLIENT + 3);
  assert.deepEqual(
    a.map((o) => o.status),
    [...Array(PER_CLIENT).fill(200), ...Array(3).fill(503)],
  );
  for (const refused of a.slice(PER_CLIENT)) assert.equal(refused.retryAfter, '10');
  const b = await openMany('127.0.0.2', PER_CLIENT);
  const c = await openMany('127.0.0.3', PER_CLIENT);
  const statuses = [...b, ...c].map((o) => o.status);
  // The total is reached within the third client's streams; the rest are refused whoever asks.
  assert.equal(statuses.filter((s) => s === 200).length, MAX_STREAMS - PER_CLIENT);
  assert.equal((await openFrom('127.0.0.4', '/blocks/stream')).status, 503);
  closeAll([...a, ...b, ...c]);

  // Every place is given back, round after round: the node takes all its streams again, from several clients.
  for (let round = 0; round < 5; round++) {
    await waitFor(`round ${round}: every place free`, async () => {
      const opened = [
        ...(await openMany('127.0.0.5', PER_CLIENT)),
        ...(await openMany('127.0.0.6', PER_CLIENT)),
        ...(await openMany('127.0.0.7', MAX_STREAMS - 2 * PER_CLIENT)),
      ];
      closeAll(opened);
      return opened.every((o) => o.status === 200);
    });
  }
});

test('TRACE goes through the route table: 405 with Allow, no token needed', async () => {
  const { hostname, port } = new URL(node.url);
  const answer = await new Promise<{ status: number; allow: string | undefined; body: string }>((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path: '/status', method: 'TRACE' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, body }));
    });
    req.once('error', reject);
    req.end();
  });
  assert.equal(answer.status, 405);
  assert.equal(answer.allow, 'GET, HEAD, OPTIONS');
  assert.equal((JSON.parse(answer.body) as { type: string }).type, '/problems/method-not-allowed');
});

test('POST /transfer: two amount members, or an amount written as a float, get 400 naming amount', async () => {
  const to = 'ab'.repeat(32);
  const raw = async (body: string): Promise<{ status: number; body: { detail: string; errors: { name: string }[] } }> => {
    const response = await fetch(`${node.url}/transfer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${node.token}` },
      body,
    });
    return { status: response.status, body: (await response.json()) as { detail: string; errors: { name: string }[] } };
  };
  const twice = await raw(`{"to":"${to}","amount":"1","amount":"1000"}`);
  assert.equal(twice.status, 400);
  assert.equal(twice.body.detail, 'amount: given more than once');
  for (const float of ['1.0', '1e3', '1E3', '2.5']) {
    const refused = await raw(`{"to":"${to}","amount":${float}}`);
    assert.equal(refused.status, 400, float);
    assert.deepEqual(
      refused.body.errors.map((e) => e.name),
      ['amount'],
      float,
    );
  }
  // The same amount as a JSON integer is judged by the ledger, not refused as written.
  const whole = await postJson(node, '/transfer', JSON.parse(`{"to":"${to}","amount":1000}`));
  assert.notEqual(whole.body?.type, '/problems/invalid-body', JSON.stringify(whole.body));
});
