// The browser network in Debian's Chromium against a real `mesh node`: the page dials the host's
// WebSocket address and gossip flows both ways (node-api.md §6 topics).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { bundleForPage, launchChromium, pageWithScript } from './browser-page.ts';
import { type MeshProcess, startNode, stopAll, tcpAddress, tempDataDir } from './mesh-process.ts';

const ENTRY = fileURLToPath(new URL('./fixtures/browser-network-page.ts', import.meta.url));
let browser: Browser;
let host: MeshProcess;
let script: string;

before(async () => {
  [browser, host, script] = await Promise.all([launchChromium(), startNode({ mine: true }), bundleForPage(ENTRY)]);
});
after(async () => {
  await browser?.close();
  await stopAll();
});

const wsAddress = (node: MeshProcess): string => {
  const addr = node.multiaddrs.find((a) => a.startsWith('/ip4/127.0.0.1/') && a.includes('/ws/'));
  assert.ok(addr, `no loopback /ws address among ${node.multiaddrs.join(', ')}`);
  return addr;
};

test('a page dials the host over WebSockets, hears its gossip, and asks it for blocks', async () => {
  const log: string[] = [];
  const page = await pageWithScript(browser, `${host.url}/status`, script, log);
  await page.waitForFunction(() => 'meshPage' in globalThis);
  await page.evaluate((addr) => (globalThis as any).meshPage.start([addr]), wsAddress(host));
  // Host to page: the node announces its height to a peer that joins its topics.
  await page.waitForFunction((id) => (globalThis as any).meshPage.heard.heights.some((h: any) => h.from === id && h.height > 0), host.nodeId, {
    timeout: 20_000,
  });
  assert.deepEqual(await page.evaluate(() => (globalThis as any).meshPage.peers()), [host.nodeId], log.join('\n'));
  // Page to host and back: a sync request the page sends is answered with blocks, to the page only.
  await page.evaluate((id) => (globalThis as any).meshPage.askBlocks(id), host.nodeId);
  const answer = await page.waitForFunction((id) => (globalThis as any).meshPage.heard.answers.find((a: any) => a.from === id), host.nodeId, {
    timeout: 20_000,
  });
  const { blocks, tip } = (await answer.jsonValue()) as { blocks: number; tip: number };
  assert.ok(blocks > 0 && tip >= blocks, `answer with ${blocks} blocks, tip ${tip}`);
});

test("two pages on different hosts' relays reach each other over WebRTC, signalled through a relay", async () => {
  const other = await startNode({ bootstrap: [tcpAddress(host)] });
  const [one, two] = await Promise.all([pageWithScript(browser, `${host.url}/status`, script), pageWithScript(browser, `${other.url}/status`, script)]);
  for (const page of [one, two]) await page.waitForFunction(() => 'meshPage' in globalThis);
  const idOne: string = await one.evaluate((addr) => (globalThis as any).meshPage.start([addr]), wsAddress(host));
  const idTwo: string = await two.evaluate((addr) => (globalThis as any).meshPage.start([addr]), wsAddress(other));
  // Page one holds a reservation on its host's relay and can be reached through it with WebRTC.
  const circuit = await one.waitForFunction(() => (globalThis as any).meshPage.addresses().find((a: string) => a.includes('/p2p-circuit/webrtc')), undefined, {
    timeout: 20_000,
  });
  const address = (await circuit.jsonValue()) as string;
  assert.ok(address.includes(`/p2p/${peerIdOf(host)}/p2p-circuit`), address);
  await one.evaluate(() => (globalThis as any).meshPage.serveEcho());
  // WebRTC's signalling through the relay can time out on a loaded machine; an app dials again.
  for (let attempt = 1; ; attempt++) {
    try {
      await two.evaluate(([node, addr]) => (globalThis as any).meshPage.dial(node, addr), [idOne, address]);
      break;
    } catch (error) {
      if (attempt === 3 || !/signal timed out/.test(String(error))) throw error;
    }
  }
  // The connection the request runs on is a direct WebRTC one, not the limited relayed circuit.
  assert.equal(await two.evaluate(([node]) => (globalThis as any).meshPage.echo(node, 'hello over webrtc'), [idOne]), 'hello over webrtc');
  const connections = (await two.evaluate((node) => (globalThis as any).meshPage.connections(node), idOne)) as { addr: string; limited: boolean }[];
  assert.ok(
    connections.some((c) => c.addr.includes('/webrtc') && !c.limited),
    JSON.stringify(connections),
  );
  // Page one sees page two as a peer over that connection.
  await one.waitForFunction((node) => (globalThis as any).meshPage.peers().includes(node), idTwo, { timeout: 10_000 });
});

test("the wallet's gater dials its configured host on loopback, but no other loopback address a page learns", async () => {
  const other = await startNode({});
  const page = await pageWithScript(browser, `${host.url}/status`, script);
  await page.waitForFunction(() => 'meshPage' in globalThis);
  await page.evaluate((addr) => (globalThis as any).meshPage.start([addr], false), wsAddress(host));
  await page.waitForFunction((id) => (globalThis as any).meshPage.peers().includes(id), host.nodeId, { timeout: 20_000 });
  const refused = await page.evaluate(
    ([node, addr]) =>
      (globalThis as any).meshPage.dial(node, addr).then(
        () => 'dialled',
        (e: Error) => e.message,
      ),
    [other.nodeId, wsAddress(other)],
  );
  assert.notEqual(refused, 'dialled');
  assert.equal(await page.evaluate((id) => (globalThis as any).meshPage.peers().includes(id), other.nodeId), false);
});

function peerIdOf(node: MeshProcess): string {
  const id = wsAddress(node).split('/p2p/')[1];
  assert.ok(id);
  return id;
}

test("a page served over HTTPS dials a host's secure WebSocket address (/tls/ws) and gossips both ways", async () => {
  const dir = await tempDataDir();
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  const secure = await startNode({ mine: true, extraArgs: ['--ws-tls-cert', cert, '--ws-tls-key', key] });
  const address = secure.multiaddrs.find((a) => a.startsWith('/ip4/127.0.0.1/') && a.includes('/tls/ws/'));
  assert.ok(address, `no /tls/ws address among ${secure.multiaddrs.join(', ')}`);
  // The page comes over HTTPS, where a plain ws:// dial is mixed content; Chromium is told to accept the test certificate.
  const site = createHttpsServer({ cert: await readFile(cert), key: await readFile(key) }, (_, res) => res.end('<!doctype html><title>https page</title>'));
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  const tlsBrowser = await launchChromium(['--ignore-certificate-errors']);
  try {
    const page = await pageWithScript(tlsBrowser, `https://127.0.0.1:${(site.address() as AddressInfo).port}/`, script);
    assert.equal(await page.evaluate(() => location.protocol), 'https:');
    await page.waitForFunction(() => 'meshPage' in globalThis);
    await page.evaluate((addr) => (globalThis as any).meshPage.start([addr]), address);
    await page.waitForFunction((id) => (globalThis as any).meshPage.heard.heights.some((h: any) => h.from === id), secure.nodeId, { timeout: 20_000 });
    await page.evaluate((id) => (globalThis as any).meshPage.askBlocks(id), secure.nodeId);
    await page.waitForFunction((id) => (globalThis as any).meshPage.heard.answers.some((a: any) => a.from === id && a.blocks > 0), secure.nodeId, {
      timeout: 20_000,
    });
    // The wallet's config hands the secure address out.
    const config = await (await fetch(`${secure.url}/wallet/config.json`)).json();
    assert.ok(
      config.hosts.some((h: string) => h.includes('/tls/ws/')),
      JSON.stringify(config.hosts),
    );
  } finally {
    await tlsBrowser.close();
    site.close();
  }
});

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => execFile(command, args, (error) => (error ? reject(error) : resolve())));
}
