// Node only: the service suite behind node:http on a real socket, and the `mesh directory` command.

import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type FetchHandler, serveFetch } from '../../host-node/http-server.ts';
import { serializeDataset } from '../dataset.ts';
import { importHint } from '../http/problem.ts';
import { readIndexFile } from '../index-file.ts';
import { createDirectory } from '../router.ts';
import { MemorySubmissionStore } from '../submissions/store.ts';
import { fixtureDataset, fixtureText, textSource } from '../testing/fixtures.ts';
import { serviceSuite, socketTarget } from '../testing/service-suite.ts';
import { buildSharedDataset } from '../testing/shared-dataset.ts';
import { DIRECTORY_OLD_SPACE_MB, DIRECTORY_SEMI_SPACE_MB } from './heap-size.ts';
import { fileDataSource, nodeSha256 } from './node-data.ts';

serviceSuite('node:http', socketTarget(serveFetch));

/** Serves `handler` on a free port for the length of `fn`. */
async function withServer(handler: FetchHandler, fn: (url: string) => Promise<void>): Promise<void> {
  const server = await serveFetch(handler, '127.0.0.1', 0);
  try {
    await fn(server.url);
  } finally {
    await server.close(100);
  }
}

test('node adapter: a body in one piece goes out with its length; a stream arrives whole, in order', () => {
  const piece = (i: number): Uint8Array => new Uint8Array(64 * 1024).fill(i % 251);
  return withServer(
    async (request) => {
      if (new URL(request.url).pathname === '/one') return new Response('{"one":1}', { headers: { 'content-type': 'application/json' } });
      let i = 0;
      return new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            if (i === 200) controller.close();
            else controller.enqueue(piece(i++));
          },
        }),
      );
    },
    async (url) => {
      const one = await fetch(`${url}/one`);
      assert.equal(one.headers.get('content-length'), '9');
      assert.equal(one.headers.get('content-type'), 'application/json');
      assert.equal(await one.text(), '{"one":1}');
      const many = await fetch(`${url}/many`);
      assert.equal(many.headers.get('content-length'), null);
      const bytes = new Uint8Array(await many.arrayBuffer());
      assert.equal(bytes.length, 200 * 64 * 1024);
      for (let i = 0; i < 200; i++) assert.equal(bytes[i * 64 * 1024 + 5], i % 251, `chunk ${i}`);
    },
  );
});

test('node adapter: a client that goes away cancels the body and aborts the request', () => {
  let cancelled!: () => void;
  const cancel = new Promise<void>((resolve) => (cancelled = resolve));
  let signal: AbortSignal | undefined;
  const finished: AbortSignal[] = [];
  return withServer(
    async (request) => {
      if (new URL(request.url).pathname === '/small') {
        finished.push(request.signal);
        return new Response('ok');
      }
      signal = request.signal;
      return new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            controller.enqueue(new Uint8Array(256 * 1024));
          },
          cancel() {
            cancelled();
          },
        }),
      );
    },
    async (url) => {
      assert.equal(await (await fetch(`${url}/small`)).text(), 'ok');
      const abort = new AbortController();
      const response = await fetch(`${url}/endless`, { signal: abort.signal });
      const reader = response.body!.getReader();
      await reader.read();
      abort.abort();
      await Promise.race([cancel, new Promise((_, reject) => setTimeout(() => reject(new Error('the body was not cancelled')), 5000))]);
      for (let i = 0; i < 50 && !signal?.aborted; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(signal?.aborted, true, 'the request of the client that left is aborted');
      assert.equal(finished[0]!.aborted, false, 'a request answered in full is not');
    },
  );
});

test("node:crypto hashes the dataset to the same ETag as the core's hasher", async () => {
  const etags: string[] = [];
  for (const sha256 of [undefined, nodeSha256]) {
    const directory = createDirectory({ data: textSource(fixtureText()), submissions: new MemorySubmissionStore(), ...(sha256 ? { sha256 } : {}) });
    const response = await directory.fetch(new Request('http://x/directory.json', { method: 'HEAD' }));
    etags.push(response.headers.get('etag') ?? '');
  }
  assert.match(etags[0]!, /^"[0-9a-f]{32}-e1"$/);
  assert.equal(etags[1], etags[0]);
});

test('node adapter: a body that fails half-way cuts the connection instead of ending cleanly', () =>
  withServer(
    async () => {
      let sent = false;
      return new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent) controller.error(new Error('the source failed'));
            else {
              sent = true;
              controller.enqueue(new Uint8Array(1024));
              controller.enqueue(new Uint8Array(1024));
            }
          },
        }),
      );
    },
    async (url) => {
      // Whether the headers got out before the cut or not, the client never sees a complete answer.
      await assert.rejects(async () => (await fetch(url)).arrayBuffer());
    },
  ));

/** Serves a directory over the fixture dataset on a free port for the length of `fn`. */
function withDirectory(fn: (url: string) => Promise<void>): Promise<void> {
  const directory = createDirectory({ data: textSource(fixtureText()), submissions: new MemorySubmissionStore() });
  return withServer((request, client) => directory.fetch(request, client), fn);
}

test('node adapter: TRACE goes through the router (405 with Allow, 404 for no path) and is counted by the rate limit', async () => {
  const directory = createDirectory({
    data: textSource(fixtureText()),
    submissions: new MemorySubmissionStore(),
    limits: { rateLimit: { perSecond: 0.001, burst: 3 } },
  });
  await withServer(
    (request, client) => directory.fetch(request, client),
    async (url) => {
      const { hostname, port } = new URL(url);
      const send = (method: string, path: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; type: string }> =>
        new Promise((resolve, reject) => {
          const req = httpRequest({ host: hostname, port, method, path }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, type: (JSON.parse(text) as { type: string }).type }));
          });
          req.once('error', reject);
          req.end();
        });
      const refused = await send('TRACE', '/api/v1/factories');
      assert.equal(refused.status, 405);
      assert.equal(refused.headers.allow, 'GET, HEAD, OPTIONS');
      assert.equal(refused.type, '/problems/method-not-allowed');
      assert.match(String(refused.headers.ratelimit), /;r=2;/, 'counted against the burst');
      assert.equal((await send('TRACE', '/api/v1/submissions')).headers.allow, 'POST, OPTIONS');
      assert.equal((await send('TRACE', '/nothing-here')).status, 404);
      const limited = await send('TRACE', '/api/v1/factories');
      assert.equal(limited.status, 429);
      assert.equal(limited.type, '/problems/rate-limited');
      assert.ok(limited.headers['retry-after']);
    },
  );
});

test('node adapter: a receipt points at the Host the client addressed, whatever authority the request target names', () =>
  withDirectory(async (url) => {
    const { hostname, port, host } = new URL(url);
    const body = JSON.stringify({ kind: 'join', company: 'Host Test Ltd', email: 'x@host.example' });
    const answer = await new Promise<{ status: number; location: string | undefined; text: string }>((resolve, reject) => {
      const req = httpRequest(
        // Origin-form with a leading `//`: a URL resolver would read evil.example as the authority.
        {
          host: hostname,
          port,
          method: 'POST',
          path: '//evil.example/api/v1/submissions',
          headers: { 'content-type': 'application/json', 'content-length': body.length },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, text }));
        },
      );
      req.once('error', reject);
      req.end(body);
    });
    assert.equal(answer.status, 201, answer.text);
    const receipt = JSON.parse(answer.text) as { status_url: string };
    assert.equal(new URL(receipt.status_url).host, host);
    assert.equal(answer.location, receipt.status_url);
  }));

test('node adapter: an answer sent before the body was read closes the connection cleanly; the next burst all succeeds', () =>
  withDirectory(async (url) => {
    const big = `kind=join&company=Acme&email=a%40b.example&message=${'x'.repeat(2 * 1024 * 1024)}`;
    for (let round = 0; round < 3; round++) {
      const refused = await fetch(`${url}/api/v1/submissions`, {
        method: 'POST',
        body: big,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(refused.status, 413);
      assert.equal(refused.headers.get('connection'), 'close');
      assert.equal(((await refused.json()) as { type: string }).type, '/problems/too-large');
      const burst = await Promise.allSettled(Array.from({ length: 20 }, async () => (await fetch(`${url}/api/v1/stats`)).status));
      const failed = burst
        .filter((r) => r.status === 'rejected')
        .map((r) => String((r as PromiseRejectedResult).reason?.cause ?? (r as PromiseRejectedResult).reason));
      assert.deepEqual(failed, [], `round ${round}`);
      for (const r of burst) assert.equal((r as PromiseFulfilledResult<number>).value, 200);
    }
  }));

const mesh = fileURLToPath(new URL('../../bin/mesh.js', import.meta.url));

// `mesh directory` looks for its dataset under $HOME: the commands here get a home of their own,
// where the dataset is built from the shared data before they start.
const home = await mkdtemp(join(tmpdir(), 'mesh-directory-home-'));
process.on('exit', () => rmSync(home, { recursive: true, force: true }));
const defaultDataset = join(home, '.mesh', 'directory', 'directory.json');
await buildSharedDataset(defaultDataset);

interface Served {
  readonly url: string;
  readonly lines: string[];
  readonly stderr: string[];
  readonly child: ChildProcess;
  stop(): Promise<number | null>;
}

// Servers a failed test left running: stopped at the end, so the file's run ends.
const running = new Set<ChildProcess>();
after(() => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts `mesh directory` and reads the bound address from its first line, as the benchmark does. */
async function serve(args: string[], env: Record<string, string> = { HOME: home }): Promise<Served> {
  const child = spawn(process.execPath, [mesh, 'directory', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const lines: string[] = [];
  const stderr: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => stderr.push(line));
  const reader = createInterface({ input: child.stdout! });
  const first = new Promise<string>((resolve, reject) => {
    reader.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`mesh directory exited with ${code}`)));
  });
  reader.on('line', (line) => lines.push(line));
  const line = await first;
  const match = /^directory listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
  assert.ok(match, line);
  return {
    url: match[1]!,
    lines,
    stderr,
    child,
    async stop() {
      child.kill('SIGTERM');
      const [code] = await once(child, 'exit');
      return code as number | null;
    },
  };
}

/** Runs `fn` with a fresh folder (removed afterwards) for a dataset and submissions. */
async function inTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-directory-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** GETs `url` and returns its status, reading the body away. */
async function statusOf(url: string): Promise<number> {
  const response = await fetch(url);
  await response.body?.cancel();
  return response.status;
}

test('mesh directory serves the dataset in ~/.mesh/directory, prints the address first and stops on SIGTERM', () =>
  inTempDir(async (dir) => {
    const server = await serve(['--submissions', join(dir, 'subs')]);
    const stats = (await (await fetch(`${server.url}/api/v1/stats`)).json()) as { total: number };
    assert.ok(stats.total > 0);
    const head = await fetch(`${server.url}/directory.json`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.match(head.headers.get('etag') ?? '', /^"[0-9a-f]{32}-e1-gzip"$/, "Node's fetch asks for gzip");
    assert.equal(await server.stop(), 0);
    assert.match(server.lines[1] ?? '', new RegExp(`${stats.total} records`));
  }));

/** The command line the process `pid` runs now (Linux /proc: after an in-place restart, the new one). */
async function commandLineOf(pid: number): Promise<string[]> {
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter((arg) => arg !== '');
}

test(
  'mesh directory restarts itself in place with its heap sizes, each unless one was given',
  { skip: process.platform !== 'linux' && 'reads the command line from /proc' },
  () =>
    inTempDir(async (dir) => {
      const own = await serve(['--submissions', join(dir, 'subs')]);
      const args = await commandLineOf(own.child.pid!);
      assert.ok(args.includes(`--max-semi-space-size=${DIRECTORY_SEMI_SPACE_MB}`), args.join(' '));
      assert.ok(args.includes(`--max-old-space-size=${DIRECTORY_OLD_SPACE_MB}`), args.join(' '));
      assert.equal(((await (await fetch(`${own.url}/api/v1/stats`)).json()) as { total: number }).total > 0, true);
      assert.equal(await own.stop(), 0, 'SIGTERM reaches the restarted process');
      const given = await serve(['--submissions', join(dir, 'subs')], { HOME: home, NODE_OPTIONS: '--max-semi-space-size=4' });
      const givenArgs = await commandLineOf(given.child.pid!);
      assert.ok(!givenArgs.some((arg) => arg.startsWith('--max-semi-space-size')), givenArgs.join(' '));
      assert.ok(givenArgs.includes(`--max-old-space-size=${DIRECTORY_OLD_SPACE_MB}`), givenArgs.join(' '));
      assert.equal(await given.stop(), 0);
      const both = await serve(['--submissions', join(dir, 'subs')], { HOME: home, NODE_OPTIONS: '--max-semi-space-size=4 --max_old_space_size=300' });
      const bothArgs = await commandLineOf(both.child.pid!);
      assert.ok(!bothArgs.some((arg) => arg.startsWith('--max-')), `not restarted: ${bothArgs.join(' ')}`);
      assert.equal(await both.stop(), 0);
    }),
);

test('mesh directory writes the index beside the dataset, starts from it, and indexes a changed or broken one again', () =>
  inTempDir(async (dir) => {
    const data = join(dir, 'd.json');
    const index = `${data}.index`;
    await writeFile(data, fixtureText());
    const answer = async (url: string): Promise<[string, string | null]> => {
      const response = await fetch(`${url}/api/v1/factories?q=steel&limit=5`, { headers: { 'accept-encoding': 'identity' } });
      const etag = (await fetch(`${url}/directory.json`, { method: 'HEAD', headers: { 'accept-encoding': 'identity' } })).headers.get('etag');
      return [await response.text(), etag];
    };
    const args = ['--data', data, '--submissions', join(dir, 'subs')];
    let server = await serve(args);
    const first = await answer(server.url);
    assert.equal(await server.stop(), 0);
    const written = await readFile(index);
    assert.equal(readIndexFile(written).parts.size, fixtureDataset().records.length);

    server = await serve(args);
    assert.deepEqual(await answer(server.url), first, 'the same answers and ETag from the index file');
    assert.equal(await server.stop(), 0);
    assert.deepEqual(await readFile(index), written, 'a current index is not written again');

    const fewer = { ...fixtureDataset(), records: fixtureDataset().records.slice(0, 3) };
    await writeFile(data, serializeDataset(fewer));
    server = await serve(args);
    const stats = (await (await fetch(`${server.url}/api/v1/stats`)).json()) as { total: number };
    assert.equal(stats.total, 3, 'the changed dataset is served, not the index of the old one');
    assert.equal(await server.stop(), 0);
    assert.equal(readIndexFile(await readFile(index)).parts.size, 3, 'and indexed again');

    await writeFile(index, 'MESHDIX1 but not really');
    server = await serve(args);
    assert.equal(((await (await fetch(`${server.url}/api/v1/stats`)).json()) as { total: number }).total, 3);
    assert.equal(await server.stop(), 0);
    assert.ok(
      server.stderr.some((line) => /index file/.test(line)),
      'the broken index is reported',
    );
    assert.equal(readIndexFile(await readFile(index)).parts.size, 3, 'and written again');
  }));

test('mesh directory on a fresh machine: starts, says how to import, and every read answers 503 with factories null', () =>
  inTempDir(async (dir) => {
    const server = await serve(['--submissions', join(dir, 'subs')], { HOME: dir, XDG_CACHE_HOME: join(dir, 'cache') });
    const expected = join(dir, '.mesh', 'directory', 'directory.json');
    for (const path of ['/api/v1/factories?q=steel', '/api/v1/factories/epa-110000000001', '/api/v1/stats', '/directory.json', '/directory.ndjson']) {
      const response = await fetch(`${server.url}${path}`);
      assert.equal(response.status, 503, path);
      assert.match(response.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
      const problem = (await response.json()) as { factories: unknown; detail: string; type: string };
      assert.equal(problem.type, '/problems/registry-unavailable', path);
      assert.equal(problem.factories, null, path);
      assert.ok(problem.detail.endsWith(`not an empty directory. ${importHint()}`), path);
      assert.ok(!problem.detail.includes(dir), 'no file path in a public answer');
    }
    assert.equal(await statusOf(`${server.url}/openapi.json`), 200, 'what needs no data still answers');
    assert.equal(await server.stop(), 0);
    assert.equal(server.lines[1], `dataset ${expected} unavailable: data routes answer 503 and the load is retried. ${importHint(expected)}`);
    assert.equal(existsSync(expected), false, 'no dataset is made up');
  }));

test('mesh directory answers 503 for a missing dataset file and recovers once it appears, without a restart', () =>
  inTempDir(async (dir) => {
    const data = join(dir, 'directory.json');
    const server = await serve(['--data', data, '--submissions', join(dir, 'subs')]);
    const missing = await fetch(`${server.url}/api/v1/factories?q=steel`);
    assert.equal(missing.status, 503);
    const body = (await missing.json()) as { factories: unknown; detail: string };
    assert.equal(body.factories, null);
    assert.ok(!body.detail.includes(data), 'no file path in a public answer');
    assert.ok(
      server.lines.some((line) =>
        line.endsWith(
          `run \`npx mesh directory import --out ${data}\` (it fetches one from the public sources, US EPA FRS and Wikidata, into the file this directory serves), or start the directory with --data FILE.`,
        ),
      ),
      'the start line names the file served',
    );
    await writeFile(data, fixtureText());
    let status = 503;
    for (let i = 0; i < 60 && status === 503; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = await statusOf(`${server.url}/api/v1/stats`);
    }
    assert.equal(status, 200);
    assert.equal(await server.stop(), 0);
  }));

test('mesh directory answers 503 for an invalid dataset file', () =>
  inTempDir(async (dir) => {
    const data = join(dir, 'directory.json');
    await writeFile(data, '{"generated":"2025-06-02","sources":[],"records":[{"id":"nope"}]}');
    const server = await serve(['--data', data, '--submissions', join(dir, 'subs')]);
    const response = await fetch(`${server.url}/directory.json`);
    assert.equal(response.status, 503);
    assert.equal(((await response.json()) as { factories: unknown }).factories, null);
    assert.equal(await server.stop(), 0);
  }));

test('mesh directory --rate-limit and --burst: a flood meets 429, a pause recovers', () =>
  inTempDir(async (dir) => {
    const server = await serve(['--submissions', join(dir, 'subs'), '--rate-limit', '2', '--burst', '5']);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const response = await fetch(`${server.url}/openapi.json`);
      statuses.push(response.status);
      if (response.status === 429) assert.match(response.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
      await response.body?.cancel();
    }
    assert.deepEqual(statuses.slice(0, 5), [200, 200, 200, 200, 200]);
    assert.ok(statuses.slice(5).includes(429), statuses.join(','));
    await new Promise((resolve) => setTimeout(resolve, 1100));
    assert.equal(await statusOf(`${server.url}/openapi.json`), 200);
    assert.equal(await server.stop(), 0);
  }));

test('mesh directory ignores X-Forwarded-For unless started with --trust-proxy', () =>
  inTempDir(async (dir) => {
    const statuses = async (server: Served): Promise<number[]> => {
      const seen: number[] = [];
      for (let i = 1; i <= 3; i++) {
        const response = await fetch(`${server.url}/openapi.json`, { headers: { 'x-forwarded-for': `198.51.100.${i}` } });
        seen.push(response.status);
        await response.body?.cancel();
      }
      return seen;
    };
    const plain = await serve(['--submissions', join(dir, 'subs'), '--rate-limit', '0.1', '--burst', '2']);
    assert.deepEqual(await statuses(plain), [200, 200, 429], 'a spoofed header opens no new bucket');
    assert.equal(await plain.stop(), 0);
    const proxied = await serve(['--submissions', join(dir, 'subs'), '--rate-limit', '0.1', '--burst', '2', '--trust-proxy']);
    assert.deepEqual(await statuses(proxied), [200, 200, 200], 'each forwarded client has its own');
    assert.equal(await proxied.stop(), 0);
  }));

test('the default limits let interactive use through and stop a flood', () =>
  inTempDir(async (dir) => {
    const server = await serve(['--submissions', join(dir, 'subs')]);
    const statuses: number[] = [];
    // Interactive use: 120 requests one after another fit in the burst however slowly they come.
    for (let i = 0; i < 120; i++) statuses.push(await statusOf(`${server.url}/openapi.json`));
    // A flood: twice the burst at once. The bucket never holds more than the burst, and refills 20
    // a second, so some meet 429 unless the flood's 240 requests took 6 s to arrive: a flood sent
    // one by one would not be one on a machine slow enough to take 50 ms a request.
    statuses.push(...(await Promise.all(Array.from({ length: 240 }, () => statusOf(`${server.url}/openapi.json`)))));
    assert.ok(statuses.slice(0, 120).every((s) => s === 200));
    assert.ok(statuses.includes(429));
    assert.equal(await server.stop(), 0);
  }));

test('mesh directory keeps submissions across a restart, in private files, and the token still opens them', () =>
  inTempDir(async (dir) => {
    const subs = join(dir, 'subs');
    const first = await serve(['--submissions', subs]);
    const posted = await fetch(`${first.url}/api/v1/submissions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'join', company: 'Restart Test Works', email: 'restart@test.example' }),
    });
    assert.equal(posted.status, 201);
    const receipt = (await posted.json()) as { id: string; token: string; status_url: string };
    assert.equal(await first.stop(), 0);
    assert.deepEqual(await readdir(subs), [`${receipt.id}.json`]);

    const second = await serve(['--submissions', subs]);
    const status = await fetch(`${second.url}/api/v1/submissions/${receipt.id}`, { headers: { authorization: `Bearer ${receipt.token}` } });
    assert.equal(status.status, 200);
    assert.equal(((await status.json()) as { company: string }).company, 'Restart Test Works');
    assert.equal(await second.stop(), 0);
  }));

/** One request on a connection of its own (the kernel spreads new connections over the serving threads). */
function fresh(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: init.method ?? 'GET', headers: { 'accept-encoding': 'identity', ...init.headers }, agent: false },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(init.body);
  });
}

/** Waits until the server has printed a line matching `pattern`. */
async function printed(server: Served, pattern: RegExp): Promise<void> {
  for (let i = 0; i < 100 && !server.lines.some((line) => pattern.test(line)); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(
    server.lines.some((line) => pattern.test(line)),
    server.lines.join('\n'),
  );
}

test('mesh directory --threads 2: both threads answer alike, and share one rate limit and the submissions', () =>
  inTempDir(async (dir) => {
    const subs = join(dir, 'subs');
    const open = await serve(['--submissions', subs, '--threads', '2', '--rate-limit', '0']);
    await printed(open, /^serving on 2 threads$/);
    const search = `${open.url}/api/v1/factories?q=steel&limit=5`;
    const answers = await Promise.all(Array.from({ length: 24 }, () => fresh(search)));
    assert.ok(
      answers.every((a) => a.status === 200 && a.body.equals(answers[0]!.body)),
      'the same page from every connection',
    );
    const exports = await Promise.all(Array.from({ length: 8 }, () => fresh(`${open.url}/directory.json`)));
    assert.ok(exports.every((e) => e.status === 200 && e.headers.etag === exports[0]!.headers.etag && e.body.equals(exports[0]!.body)));
    const { total } = JSON.parse((await fresh(`${open.url}/api/v1/stats`)).body.toString()) as { total: number };
    assert.equal((JSON.parse(exports[0]!.body.toString()) as { records: unknown[] }).records.length, total);
    const receipts = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const posted = await fresh(`${open.url}/api/v1/submissions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ kind: 'join', company: `Thread Test Works ${i}`, email: `t${i}@test.example` }),
        });
        assert.equal(posted.status, 201);
        return JSON.parse(posted.body.toString()) as { id: string; token: string };
      }),
    );
    for (const [i, receipt] of receipts.entries()) {
      const status = await fresh(`${open.url}/api/v1/submissions/${receipt.id}`, { headers: { authorization: `Bearer ${receipt.token}` } });
      assert.equal(status.status, 200);
      assert.equal((JSON.parse(status.body.toString()) as { company: string }).company, `Thread Test Works ${i}`);
    }
    assert.equal((await readdir(subs)).length, 6);
    assert.equal(await open.stop(), 0);

    // 40 connections of one client: the burst is the client's, not each thread's.
    const limited = await serve(['--submissions', subs, '--threads', '2', '--rate-limit', '0.01', '--burst', '12']);
    await printed(limited, /^serving on 2 threads$/);
    const statuses = await Promise.all(Array.from({ length: 40 }, () => fresh(`${limited.url}/openapi.json`).then((r) => r.status)));
    assert.equal(statuses.filter((s) => s === 200).length, 12, statuses.join(','));
    assert.equal(statuses.filter((s) => s === 429).length, 28);
    assert.equal(await limited.stop(), 0);

    const one = await serve(['--submissions', subs, '--threads', '1']);
    assert.equal((await fresh(`${one.url}/api/v1/stats`)).status, 200);
    assert.equal(await one.stop(), 0);
    assert.ok(!one.lines.some((line) => line.startsWith('serving on')), one.lines.join('\n'));
  }));

test('mesh directory --threads 2 over a dataset without an index file serves it from the file it writes, or says it serves on one thread', () =>
  inTempDir(async (dir) => {
    const data = join(dir, 'directory.json');
    await writeFile(data, fixtureText());
    const written = await serve(['--data', data, '--submissions', join(dir, 'subs'), '--threads', '2']);
    await printed(written, /^serving on 2 threads$/);
    assert.ok(existsSync(`${data}.index`));
    assert.equal((await fresh(`${written.url}/api/v1/stats`)).status, 200);
    assert.equal(await written.stop(), 0);

    // Where the index file cannot be written (a folder has its name), there is nothing to share.
    await rm(`${data}.index`);
    await mkdir(`${data}.index`);
    const alone = await serve(['--data', data, '--submissions', join(dir, 'subs'), '--threads', '2']);
    for (let i = 0; i < 100 && !alone.stderr.some((line) => line.includes('serving on 1 thread')); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(
      alone.stderr.some((line) => /serving on 1 thread, not 2: .*could not be written/.test(line)),
      alone.stderr.join('\n'),
    );
    const stats = await fresh(`${alone.url}/api/v1/stats`);
    assert.equal(stats.status, 200);
    assert.equal(await alone.stop(), 0);
  }));

test('mesh directory refuses bad options with exit 2 and prints its options on --help', async () => {
  const run = promisify(execFile);
  const help = await run(process.execPath, [mesh, 'directory', '--help']);
  for (const option of ['--host', '--port', '--data', '--submissions', '--rate-limit', '--burst', '--trust-proxy', '--threads'])
    assert.ok(help.stdout.includes(option), option);
  for (const args of [['--port', '70000'], ['--burst', '0'], ['--rate-limit', 'fast'], ['--threads', '0'], ['--colour']]) {
    await assert.rejects(run(process.execPath, [mesh, 'directory', ...args]), (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 2);
      assert.match(error.stderr, /^mesh directory: /);
      return true;
    });
  }
});

test('MCP over a real socket with the SDK client against the dataset built from the shared data', async () => {
  const directory = createDirectory({ data: fileDataSource(defaultDataset), submissions: new MemorySubmissionStore() });
  const server = await serveFetch(directory.fetch, '127.0.0.1', 0);
  const client = new Client({ name: 'directory-test', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', server.url)));
    const stats = await client.callTool({ name: 'registry_stats', arguments: {} });
    const total = (stats.structuredContent as { total: number }).total;
    assert.ok(total > 0);
    const page = await client.callTool({ name: 'search_factories', arguments: { limit: 3 } });
    const structured = page.structuredContent as { total: number; factories: { id: string }[] };
    assert.equal(structured.total, total);
    const one = await client.callTool({ name: 'get_factory', arguments: { id: structured.factories[0]!.id } });
    assert.equal((one.structuredContent as { factory: { id: string } }).factory.id, structured.factories[0]!.id);
  } finally {
    await client.close();
    await directory.close();
    await server.close();
  }
});
