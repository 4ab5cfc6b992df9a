import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { MeshError } from '../errors.ts';
import { WebProblem } from './problem.ts';
import { type CorsPolicy, createService, type Route } from './router.ts';

class Refusal extends MeshError {}

const ROUTES: Route[] = [
  { path: '/items/stream', get: () => new Response('stream') },
  { path: '/items/:id', get: ({ params }) => Response.json({ id: params.id }), delete: () => new Response(null, { status: 204 }) },
  { path: '/items', get: () => Response.json([]), post: () => new Response(null, { status: 201 }) },
  { path: '/send', post: () => new Response(null, { status: 202 }) },
  { path: '/refuse', get: () => Promise.reject(new Refusal('refused', 'no')) },
  { path: '/fail', get: () => Promise.reject(new Error('boom')) },
];

// Grants reads of GET routes to one origin, and says so on preflights.
const CORS: CorsPolicy = {
  read: (_request, _url, route) => (route?.get ? { vary: 'Origin', 'access-control-allow-origin': 'http://ok.example' } : undefined),
  preflight: (_request, _url, route) => (route.get ? { 'access-control-allow-methods': 'GET' } : undefined),
};

function service(guard?: (request: Request, url: URL, who: string) => void) {
  const failures: unknown[] = [];
  const fetch = createService<[string]>({
    routes: ROUTES,
    cors: CORS,
    ...(guard ? { guard } : {}),
    toProblem: (error) => (error instanceof Refusal ? new WebProblem('bad-request', error.message, { rule: error.code }) : undefined),
    onError: (error) => failures.push(error),
  });
  return { fetch: (path: string, init?: RequestInit) => fetch(new Request(`http://127.0.0.1${path}`, init), 'someone'), failures };
}

async function problemOf(response: Response): Promise<Record<string, unknown>> {
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  return (await response.json()) as Record<string, unknown>;
}

test('router: routes by path and method, first match first, with named parameters', async () => {
  const { fetch } = service();
  assert.equal(await (await fetch('/items/stream')).text(), 'stream');
  assert.deepEqual(await (await fetch('/items/42')).json(), { id: '42' });
  assert.equal((await fetch('/items', { method: 'POST' })).status, 201);
  assert.equal((await fetch('/items/42', { method: 'DELETE' })).status, 204);
  assert.equal((await fetch('/items/42', { method: 'POST' })).headers.get('allow'), 'GET, HEAD, DELETE, OPTIONS');
});

test('router: 404 for an unknown path (a trailing slash included), 405 with Allow for a known one', async () => {
  const { fetch } = service();
  for (const path of ['/nope', '/items/', '/items/1/2', '//items']) {
    const response = await fetch(path);
    assert.equal(response.status, 404, path);
    assert.equal((await problemOf(response)).type, '/problems/not-found');
  }
  const wrong = await fetch('/send');
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get('allow'), 'POST, OPTIONS');
  assert.equal((await problemOf(wrong)).type, '/problems/method-not-allowed');
  assert.equal((await fetch('/items', { method: 'DELETE' })).headers.get('allow'), 'GET, HEAD, POST, OPTIONS');
});

test('router: HEAD is GET without the body; OPTIONS answers Allow and what the policy grants', async () => {
  const { fetch } = service();
  const head = await fetch('/items/7', { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-type'), 'application/json');
  assert.equal(await head.text(), '');
  const options = await fetch('/items', { method: 'OPTIONS' });
  assert.equal(options.status, 204);
  assert.equal(options.headers.get('allow'), 'GET, HEAD, POST, OPTIONS');
  assert.equal(options.headers.get('access-control-allow-methods'), 'GET');
  const post = await fetch('/send', { method: 'OPTIONS' });
  assert.equal(post.headers.get('allow'), 'POST, OPTIONS');
  assert.isNull(post.headers.get('access-control-allow-methods'));
  assert.equal((await fetch('/nope', { method: 'OPTIONS' })).status, 404);
});

test("router: the policy's read headers go on GET and HEAD answers; nosniff on every answer", async () => {
  const { fetch } = service();
  const read = await fetch('/items');
  assert.equal(read.headers.get('access-control-allow-origin'), 'http://ok.example');
  assert.equal(read.headers.get('vary'), 'Origin');
  assert.equal(read.headers.get('x-content-type-options'), 'nosniff');
  const post = await fetch('/items', { method: 'POST' });
  assert.isNull(post.headers.get('access-control-allow-origin'));
  assert.equal(post.headers.get('x-content-type-options'), 'nosniff');
  assert.isNull((await fetch('/nope')).headers.get('access-control-allow-origin'));
});

test("router: the guard refuses before the path is looked up, with the service's arguments", async () => {
  const seen: string[] = [];
  const { fetch } = service((_request, url, who) => {
    seen.push(who);
    if (url.pathname !== '/items') throw new WebProblem('bad-request', 'only /items');
  });
  assert.equal((await fetch('/items')).status, 200);
  assert.equal((await fetch('/nope')).status, 400);
  assert.deepEqual(seen, ['someone', 'someone']);
});

test("router: a service's own errors become its problems; anything else a 500 that says nothing", async () => {
  const { fetch, failures } = service();
  const refused = await fetch('/refuse');
  assert.equal(refused.status, 400);
  assert.include(await problemOf(refused), { type: '/problems/bad-request', detail: 'no', rule: 'refused' });
  const failed = await fetch('/fail');
  assert.equal(failed.status, 500);
  const body = await problemOf(failed);
  assert.equal(body.type, '/problems/internal');
  assert.notInclude(String(body.detail), 'boom');
  assert.equal((failures[0] as Error).message, 'boom');
});
