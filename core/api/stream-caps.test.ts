// The bounds on open event streams (docs/node-api.md "How many streams"): 503 with Retry-After past
// them, and every place given back, with the feed's subscription, however a stream ends.
// Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { type Problem, problem, request, setup } from './api.test-util.ts';
import { MAX_STREAMS, MAX_STREAMS_PER_CLIENT } from './handler.ts';

/** The problem `response` answers, checked to be of `code`. */
async function problemOf(response: Response, status: number, code: string): Promise<Problem> {
  const body = await problem(response, status);
  assert.equal(body.type, `/problems/${code}`);
  return body;
}

/** Ends every stream a test left open (their keep-alive timers run on the system clock). */
async function closeAll(responses: readonly Response[]): Promise<void> {
  await Promise.all(responses.map((response) => response.body?.cancel()));
}

const A = { remoteAddress: '192.0.2.1' };
const B = { remoteAddress: '192.0.2.2' };
const C = { remoteAddress: '192.0.2.3' };

test('stream caps: past the per-client bound a client gets 503 with Retry-After; another client still gets its stream', async () => {
  const { api, node } = setup({ maxStreams: 10, maxStreamsPerClient: 2 });
  const open = [await api(request('/blocks/stream'), A), await api(request('/signals/stream'), A)];
  for (const response of open) assert.equal(response.status, 200);
  const refused = await api(request('/transactions/stream'), A);
  const body = await problemOf(refused, 503, 'too-many-streams');
  assert.equal(refused.headers.get('retry-after'), '10');
  assert.match(body.detail, /2 per client/);
  assert.equal(node.ledger.txListeners.size, 0, 'a refused stream subscribes to nothing');
  const other = await api(request('/transactions/stream'), B);
  assert.equal(other.status, 200);
  // One of A's streams ends: A may open another.
  await open[0]!.body!.cancel();
  assert.equal(node.ledger.blockListeners.size, 0);
  const again = await api(request('/blocks/stream'), A);
  assert.equal(again.status, 200);
  await closeAll([...open, other, again]);
});

test('stream caps: past the total bound every client gets 503, until a stream ends', async () => {
  const { api } = setup({ maxStreams: 3, maxStreamsPerClient: 2 });
  const open = [await api(request('/blocks/stream'), A), await api(request('/blocks/stream'), A), await api(request('/blocks/stream'), B)];
  for (const response of open) assert.equal(response.status, 200);
  const refused = await api(request('/blocks/stream'), C);
  assert.match((await problemOf(refused, 503, 'too-many-streams')).detail, /3 in all/);
  assert.equal(refused.headers.get('retry-after'), '10');
  await open[2]!.body!.cancel();
  const again = await api(request('/blocks/stream'), C);
  assert.equal(again.status, 200);
  await closeAll([...open, again]);
});

test('stream caps: a bad query is 400 before the bound is looked at; requests without a client share one bound', async () => {
  const { api } = setup({ maxStreams: 5, maxStreamsPerClient: 1 });
  const open = await api(request('/blocks/stream'));
  assert.equal(open.status, 200);
  await problemOf(await api(request('/blocks/stream?min_height=x')), 400, 'invalid-parameter');
  await problemOf(await api(request('/signals/stream')), 503, 'too-many-streams');
  await closeAll([open]);
});

test('stream caps: a place is given back however the stream ends: the client cancels, aborts, overflows, or asked with HEAD', async () => {
  const { api, node } = setup({ maxStreams: 1, maxStreamsPerClient: 1, maxQueuedEvents: 2 });
  const emitSignal = (): void => [...node.signals.signalListeners].forEach((l) => l({ seq: 1, signal: { id: 'ab'.repeat(32) } as never }));
  const next = async (path: string, init: Parameters<typeof request>[1] = {}): Promise<Response> => {
    const response = await api(request(path, init), A);
    assert.equal(response.status, 200, `${init.method ?? 'GET'} ${path} given the one place`);
    return response;
  };

  // Cancelled by the client.
  await (await next('/blocks/stream')).body!.cancel();
  assert.equal(node.ledger.blockListeners.size, 0);

  // Aborted: the connection went away.
  const controller = new AbortController();
  await next('/signals/stream', { signal: controller.signal });
  controller.abort();
  assert.equal(node.signals.signalListeners.size, 0);

  // Overflowed: a client that reads nothing is closed past its queue's bound.
  await next('/signals/stream');
  for (let i = 0; i < 4; i++) emitSignal();
  assert.equal(node.signals.signalListeners.size, 0);

  // HEAD: the subscription ends at once.
  await next('/blocks/stream', { method: 'HEAD' });
  assert.equal(node.ledger.blockListeners.size, 0);

  await closeAll([await next('/blocks/stream')]);
});

test('stream caps: thousands of streams opened and closed leave no subscription and no place held', async () => {
  const { api, node } = setup({ maxStreams: 100, maxStreamsPerClient: 100 });
  for (let round = 0; round < 30; round++) {
    const open = await Promise.all(
      Array.from({ length: 100 }, (_, i) => api(request(['/blocks/stream', '/transactions/stream', '/signals/stream'][i % 3]!), A)),
    );
    for (const response of open) assert.equal(response.status, 200);
    await problemOf(await api(request('/blocks/stream'), B), 503, 'too-many-streams');
    await closeAll(open);
    assert.deepEqual([node.ledger.blockListeners.size, node.ledger.txListeners.size, node.signals.signalListeners.size], [0, 0, 0]);
  }
});

test('stream caps: the defaults are 256 in all and 32 per client; a bound must be a positive integer', () => {
  assert.equal(MAX_STREAMS, 256);
  assert.equal(MAX_STREAMS_PER_CLIENT, 32);
  for (const bad of [0, -1, 1.5, Number.NaN]) {
    assert.throws(() => setup({ maxStreams: bad }), RangeError, /^maxStreams must/);
    assert.throws(() => setup({ maxStreamsPerClient: bad }), RangeError, /^maxStreamsPerClient must/);
  }
});
