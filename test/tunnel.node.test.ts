/**
 * Tunnels end to end: real `mesh node --devnet` processes on loopback. B listens and exposes
 * services on this machine to A; A and C forward to it, and only A is allowed. One set of nodes
 * serves every test, in order.
 */

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer, request as httpRequest } from 'node:http';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { getJson, type MeshProcess, postJson, startNode, stopAll, tcpAddress, waitFor } from './mesh-process.ts';

const run = promisify(execFile);
const MESH = join(import.meta.dirname, '..', 'bin', 'mesh.js');

interface Tunnel {
  id: string;
  kind: 'listen' | 'forward';
  protocol: string;
  address?: string;
  connections: number;
  accepted: number;
  refused: number;
}

let a: MeshProcess;
let b: MeshProcess;
let c: MeshProcess;
let web: HttpServer;
/** Connections the web server behind B accepted. */
let webConnections = 0;
let raw: Server;
/** Connections the raw TCP service behind B accepted, as they come. */
const rawSockets: Socket[] = [];

const peerIdOf = (node: MeshProcess): string => /\/p2p\/(\w+)$/.exec(tcpAddress(node))![1]!;

/** `length` bytes no two nearby offsets share. */
const pattern = (length: number, seed: number): Buffer => Buffer.from(Uint8Array.from({ length }, (_, i) => (i * 31 + seed + (i >> 8)) % 251));
const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');
const RESPONSE = pattern(1536 * 1024 + 7, 5);

before(async () => {
  a = await startNode({});
  b = await startNode({ bootstrap: [tcpAddress(a)] });
  c = await startNode({ bootstrap: [tcpAddress(b)] });
  for (const [from, to] of [
    [a, b],
    [c, b],
  ] as const) {
    await waitFor(
      `${from === a ? 'A' : 'C'} is connected to B`,
      async () => (await getJson<{ peers: string[] }>(from, '/bootstrap')).peers.some((m) => m.includes(peerIdOf(to))),
      20_000,
    );
  }
  // The web service behind B: answers a POST with the SHA-256 of what it read and a large body.
  web = createHttpServer((req, res) => {
    const hash = createHash('sha256');
    req.on('data', (chunk: Buffer) => hash.update(chunk));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-request-sha256': hash.digest('hex'), 'content-length': RESPONSE.length });
      res.end(RESPONSE);
    });
  });
  web.on('connection', () => webConnections++);
  raw = createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => {});
    rawSockets.push(socket);
  });
  await Promise.all([new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve)), new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve))]);
  for (const [protocol, server] of [
    ['web', web],
    ['raw', raw],
  ] as const) {
    const target = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const opened = await postJson(b, '/tunnel', { listen: { protocol, target, allow: [a.nodeId] } });
    assert.equal(opened.status, 201, JSON.stringify(opened.body));
  }
});

after(async () => {
  await stopAll();
  web?.closeAllConnections();
  web?.close();
  raw?.close();
});

async function forward(from: MeshProcess, protocol: string): Promise<Tunnel> {
  const opened = await postJson(from, '/tunnel', { forward: { protocol, node: b.nodeId } });
  assert.equal(opened.status, 201, JSON.stringify(opened.body));
  return opened.body as Tunnel;
}

const portOf = (tunnel: Tunnel): number => Number(tunnel.address!.split(':').at(-1));

/** A TCP connection to a forward's port, with what it reads and how it ends. */
async function client(tunnel: Tunnel): Promise<{ socket: Socket; read: () => string; ended: Promise<void>; closed: Promise<boolean> }> {
  const socket = connect({ host: '127.0.0.1', port: portOf(tunnel), allowHalfOpen: true });
  await once(socket, 'connect');
  let text = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  socket.on('error', () => {});
  return { socket, read: () => text, ended: endOf(socket), closed: closeOf(socket) };
}

/** `closing`, or 'still open' after 5 s: a close that never comes fails the test instead of hanging it. */
function within<T>(closing: Promise<T>): Promise<T | 'still open'> {
  return Promise.race([closing, new Promise<'still open'>((resolve) => setTimeout(() => resolve('still open'), 5_000).unref())]);
}

/** Resolves when the socket closes: true after an error (a reset). */
const closeOf = (socket: Socket): Promise<boolean> => new Promise((resolve) => socket.once('close', resolve));

/** Resolves at the socket's FIN; rejects when it closes without one (a reset). Handled either way. */
function endOf(socket: Socket): Promise<void> {
  const ended = new Promise<void>((resolve, reject) => {
    socket.once('end', resolve);
    socket.once('close', () => reject(new Error('closed without a FIN')));
  });
  ended.catch(() => {});
  return ended;
}

/** The raw service's next connection: call it before the client connects, or the connection may be counted as before. */
async function nextRawSocket(): Promise<Socket> {
  const before = rawSockets.length;
  return waitFor('the raw service takes a connection', async () => rawSockets.length > before && rawSockets.at(-1), 10_000, 20);
}

async function textOf(socket: Socket): Promise<{ text: () => string; ended: Promise<void> }> {
  let text = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  socket.on('error', () => {});
  return { text: () => text, ended: endOf(socket) };
}

test("an HTTP service behind B answers through A's forwarded port: 1 MiB up and 1.5 MiB down, intact", async () => {
  const tunnel = await forward(a, 'web');
  assert.match(tunnel.address!, /^127\.0\.0\.1:\d+$/);
  const body = pattern(1024 * 1024, 1);
  for (let i = 0; i < 2; i++) {
    const response = await new Promise<{ status: number; hash: string; data: Buffer }>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: portOf(tunnel), method: 'POST', path: '/upload', agent: false, headers: { 'content-length': body.length } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode!, hash: String(res.headers['x-request-sha256']), data: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(response.status, 200);
    assert.equal(response.hash, sha256(body), 'the request reached the service intact');
    assert.equal(response.data.length, RESPONSE.length);
    assert.equal(sha256(response.data), sha256(RESPONSE), 'the response came back intact');
  }
  const listed = await waitFor(
    'A counts two connections carried',
    async () => {
      const found = (await getJson<Tunnel[]>(a, '/tunnel')).find((t) => t.id === tunnel.id);
      return found !== undefined && found.accepted === 2 && found.connections === 0 && found;
    },
    10_000,
  );
  assert.equal(listed.refused, 0);
});

test("a node that is not allowed is refused: its client's connection closes at once, nothing reaches the service", async () => {
  const before = webConnections;
  const tunnel = await forward(c, 'web');
  const conn = await client(tunnel);
  conn.socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
  assert.notEqual(await within(conn.closed), 'still open', 'closed at once');
  assert.equal(conn.read(), '', 'no answer');
  assert.equal(webConnections, before, 'the service saw no connection');
  const cId = c.nodeId;
  await waitFor('B logs the refusal', async () => b.log().includes(`${cId} is not allowed on tunnel web`), 10_000);
  await waitFor("C logs B's reason", async () => c.log().includes(`refused the connection: ${cId} is not allowed on tunnel web`), 10_000);
  const listed = (await getJson<Tunnel[]>(c, '/tunnel')).find((t) => t.id === tunnel.id)!;
  assert.equal(listed.refused, 1);
  assert.equal(listed.accepted, 0);
});

test('a FIN on either end ends that direction only; the other still carries bytes until its own FIN', async () => {
  const tunnel = await forward(a, 'raw');
  // The client ends first.
  const taken = nextRawSocket();
  const first = await client(tunnel);
  const server = await taken;
  const atServer = await textOf(server);
  first.socket.end('ping');
  await atServer.ended;
  assert.equal(atServer.text(), 'ping');
  server.write('pong');
  server.end();
  await first.ended;
  assert.equal(first.read(), 'pong');
  assert.equal(await first.closed, false, 'closed cleanly');

  // The service ends first; the client keeps writing after it.
  const taken2 = nextRawSocket();
  const second = await client(tunnel);
  const server2 = await taken2;
  const atServer2 = await textOf(server2);
  server2.end('bye');
  await second.ended;
  assert.equal(second.read(), 'bye');
  second.socket.end('still here');
  await atServer2.ended;
  assert.equal(atServer2.text(), 'still here');
  assert.equal(await second.closed, false);
});

test('a reset on either end closes the other at once', async () => {
  const tunnel = await forward(a, 'raw');
  for (const resetter of ['client', 'service'] as const) {
    const taken = nextRawSocket();
    const conn = await client(tunnel);
    conn.socket.write('hello');
    const server = await taken;
    await textOf(server);
    const serverClosed = closeOf(server);
    const started = Date.now();
    if (resetter === 'client') {
      conn.socket.resetAndDestroy();
      assert.equal(await within(serverClosed), true, 'the service sees a reset, not a FIN');
    } else {
      server.resetAndDestroy();
      assert.equal(await within(conn.closed), true, 'the client sees a reset, not a FIN');
    }
    assert.ok(Date.now() - started < 5_000, `${resetter}: closed at once`);
  }
});

test("DELETE /tunnel/:id closes the tunnel's connections and its port", async () => {
  const tunnel = await forward(a, 'raw');
  const taken = nextRawSocket();
  const conn = await client(tunnel);
  conn.socket.write('x');
  const server = await taken;
  const serverClosed = closeOf(server);
  const response = await fetch(`${a.url}/tunnel/${tunnel.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${a.token}` } });
  assert.equal(response.status, 204);
  await conn.closed;
  await serverClosed;
  const refused = connect({ host: '127.0.0.1', port: portOf(tunnel) });
  const [error] = (await once(refused, 'error').catch((e: unknown) => [e])) as [NodeJS.ErrnoException];
  assert.equal(error.code, 'ECONNREFUSED');
  assert.equal((await fetch(`${a.url}/tunnel/${tunnel.id}`)).status, 404);
});

test('bad input on POST /tunnel is 400: a bad node id, a bad protocol name, a target off the loopback interface, a bad port', async () => {
  const bodies = [
    { forward: { protocol: 'web', node: 'zz'.repeat(32) } },
    { forward: { protocol: 'web', node: b.nodeId.slice(2) } },
    { listen: { protocol: 'web', target: '127.0.0.1:8080', allow: ['not-a-node'] } },
    { forward: { protocol: 'Web/1', node: b.nodeId } },
    { listen: { protocol: '', target: '127.0.0.1:8080', allow: [b.nodeId] } },
    { listen: { protocol: 'web2', target: '192.168.0.10:8080', allow: [b.nodeId] } },
    { listen: { protocol: 'web2', target: '0.0.0.0:8080', allow: [b.nodeId] } },
    { forward: { protocol: 'web', node: b.nodeId, bind: '0.0.0.0:0' } },
    { listen: { protocol: 'web2', target: '127.0.0.1:70000', allow: [b.nodeId] } },
    { listen: { protocol: 'web2', target: '127.0.0.1:0', allow: [b.nodeId] } },
    { forward: { protocol: 'web', node: b.nodeId, bind: '127.0.0.1:65536' } },
  ];
  for (const body of bodies) {
    const answer = await postJson(a, '/tunnel', body);
    assert.equal(answer.status, 400, JSON.stringify(body));
    assert.equal(answer.body.type, '/problems/invalid-body');
  }
  const self = await postJson(a, '/tunnel', { forward: { protocol: 'web', node: a.nodeId } });
  assert.equal(self.status, 400);
});

test('mesh tunnel on the running node: listen, forward, ls, close', async () => {
  const mesh = async (...args: string[]): Promise<string> => (await run(process.execPath, [MESH, 'tunnel', ...args, '--data-dir', a.dataDir])).stdout;
  const id = (await mesh('listen', 'cli', '127.0.0.1:9', '--allow', b.nodeId)).trim();
  assert.match(id, /^[0-9a-f]{16}$/);
  const address = (await mesh('forward', b.nodeId, 'raw')).trim();
  assert.match(address, /^127\.0\.0\.1:\d+$/);
  const listed = JSON.parse(await mesh('ls', '--json')) as Tunnel[];
  assert.ok(listed.some((t) => t.id === id && t.kind === 'listen'));
  assert.ok(listed.some((t) => t.address === address));
  assert.match(await mesh('ls'), new RegExp(`^${id} +listen +cli +→ 127\\.0\\.0\\.1:9 `, 'm'));
  await mesh('close', id);
  assert.ok(!(JSON.parse(await mesh('ls', '--json')) as Tunnel[]).some((t) => t.id === id));
});
