// The operator page end to end: Debian's Chromium opens /node on two real `mesh node --devnet`
// processes, a mining payer and a host running a job on Podman. It shows the peers on their
// coordinates with RTTs, the chain, the balance and a channel, the fabric, both sides of the job
// with its output live; it takes the API token only from the operator, refuses a wrong one, keeps
// the right one out of every storage the wallet shares, and stops the job with it. Over real
// sockets the page is refused to a non-loopback Host and carries its CSP. Screenshots go to
// test-results/operator/ (desktop and phone width).

import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { WALLET_HEADERS } from '../host-node/wallet-site.ts';
import { launchChromium, text, watch } from './browser-page.ts';
import { getJson, type MeshProcess, postJson, startNode, stopAll, tcpAddress, waitFor } from './mesh-process.ts';
import { PODMAN_DIR, type PodmanService, startPodman, TEST_IMAGE } from './podman.ts';

const SHOTS = fileURLToPath(new URL('../test-results/operator/', import.meta.url));
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const CREDIT = 10n ** 18n;
const PINGS = ['--ping-interval-ms', '300'];
const HOST_ARGS = ['--allow-image', 'localhost/busybox', '--job-cores', '8', '--job-mem-mb', '2048', ...PINGS];
// A job that writes a line every half second for half a minute.
const CHATTY = ['sh', '-c', 'i=0; while [ $i -lt 60 ]; do i=$((i+1)); echo "line $i"; sleep 0.5; done'];

let browser: Browser;
let podman: PodmanService;
let payer: MeshProcess;
let host: MeshProcess;

before(async () => {
  await mkdir(SHOTS, { recursive: true });
  podman = await startPodman();
  payer = await startNode({ mine: true, extraArgs: PINGS });
  [browser, host] = await Promise.all([
    launchChromium(),
    startNode({
      bootstrap: [tcpAddress(payer)],
      extraArgs: HOST_ARGS,
      env: { DOCKER_HOST: podman.dockerHost, CONTAINERS_CONF: join(PODMAN_DIR, 'containers.conf') },
    }),
  ]);
  await waitFor('the payer sees the host in its atlas', async () =>
    (await getJson<{ node_id: string }[]>(payer, '/atlas')).some((e) => e.node_id === host.nodeId),
  );
  await waitFor('the payer holds 10 credits', async () => BigInt((await getJson<{ free: string }>(payer, '/status')).free) >= 10n * CREDIT);
});

after(async () => {
  await browser?.close();
  await stopAll();
  await podman?.stop();
});

// The token check's probe is a 404 by design (main.ts NO_JOB).
const PROBE = /\/jobs\/0{64}$/;
const shoot = (page: Page, name: string): Promise<Buffer> => page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });

async function openPage(node: MeshProcess, log: string[], viewport = DESKTOP): Promise<Page> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  watch(page, log, PROBE);
  await page.goto(`${node.url}/node`);
  await page.waitForSelector('#status[data-state="online"]');
  return page;
}

test('the operator page: peers on the map, chain, balance and channel, fabric, jobs with live output, the token, stop', async () => {
  const channel = await postJson(payer, '/channels/open', { host: host.nodeId, capacity: (2n * CREDIT).toString() });
  assert.equal(channel.status, 201, JSON.stringify(channel.body));
  const bid = await postJson(payer, '/jobs/bid', {
    image: TEST_IMAGE,
    cmd: CHATTY,
    cpu_cores: 1,
    mem_mb: 64,
    duration_secs: 60,
    bid: (3n * CREDIT).toString(),
  });
  assert.equal(bid.status, 201, JSON.stringify(bid.body));
  const jobId: string = bid.body.job_id;
  await waitFor('the job runs on the host', async () => (await getJson<{ status: string }>(host, `/jobs/${jobId}`)).status === 'running', 60_000);
  // Each node has the other's coordinate (gossiped every 3 pings).
  await waitFor('coordinates on both nodes', async () => {
    for (const node of [payer, host]) if ((await getJson<{ coordinates: unknown[] }>(node, '/netgraph')).coordinates.length === 0) return false;
    return true;
  });

  // The host's page.
  const hostLog: string[] = [];
  const page = await openPage(host, hostLog);
  assert.equal(await text(page, '#node-id'), host.nodeId);
  await page.waitForSelector('#peers tbody tr');
  assert.match(await text(page, '#peers tbody'), new RegExp(payer.nodeId.slice(0, 8)));
  assert.match(await text(page, '#peers tbody tr td:nth-child(2)'), /^\d+(\.\d)?$/, 'an RTT in ms');
  // The map: this node, the payer as a peer joined by a line with its RTT.
  await page.waitForSelector('#map circle.peer');
  assert.equal(await page.locator('#map circle.self').count(), 1);
  assert.equal(await page.locator('#map line').count(), 1);
  assert.match((await page.locator('#map text.rtt').textContent()) ?? '', / ms$/);
  // The chain: height, the payer producing, recent blocks.
  await page.waitForFunction(() => document.querySelectorAll('#blocks tbody tr').length === 10);
  assert.match(await text(page, '#height'), /^\d[\d,]*$/);
  assert.match(await text(page, '#producers tbody'), new RegExp(`${payer.nodeId.slice(0, 8)}…\\s+\\d+`));
  assert.equal(await page.isVisible('#forks-none'), true);
  // The channel, as the host sees it once a block holds it, and the fabric's totals.
  await page.waitForSelector('#channels tbody tr', { timeout: 30_000 });
  assert.match(await text(page, '#channels tbody'), /host\s+\S+…\s+open\s+2\s+0/);
  const fabric = await getJson<{ nodes: number; cpu_cores: number }>(host, '/fabric/stats');
  assert.equal(await text(page, '#fabric-nodes'), String(fabric.nodes));
  assert.equal(await text(page, '#fabric-cores'), fabric.cpu_cores.toLocaleString('en'));

  // The job as host; its output by keyboard: Tab to the Output button, Enter.
  await page.waitForSelector('#jobs-host tbody tr');
  assert.match(await text(page, '#jobs-host tbody'), /running/);
  assert.equal(await page.isVisible('#jobs-payer'), false);
  const output = page.locator(`[data-key="logs-${jobId}"]`);
  await page.locator('#forks-title').click();
  for (let i = 0; i < 40 && !(await output.evaluate((b) => b === document.activeElement)); i++) await page.keyboard.press('Tab');
  assert.equal(await output.evaluate((b) => b === document.activeElement && b.matches(':focus-visible')), true, 'Output is reached by Tab, with a focus ring');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /line 3\n/.test(document.querySelector('#log-lines')?.textContent ?? ''));
  const seen = (await text(page, '#log-lines')).split('\n').filter(Boolean).length;
  await page.waitForFunction((n) => (document.querySelector('#log-lines')?.textContent ?? '').split('\n').filter(Boolean).length > n, seen);
  assert.match(await text(page, '#log-state'), /Following/);
  // The Stop button waits for the token.
  assert.equal(await page.locator(`[data-key="stop-${jobId}"]`).isDisabled(), true);
  await shoot(page, '1-host-desktop');
  await page.locator('.map-box svg').screenshot({ path: `${SHOTS}1-host-map.png` });

  // The host's page at phone width: one column, nothing wider than the screen.
  await page.setViewportSize(PHONE);
  await page.waitForTimeout(100);
  const wider = await page.evaluate(() =>
    [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5 && !e.closest('.scroll'))
      .map((e) => `${e.tagName}#${e.id}.${e.className}`),
  );
  assert.deepEqual(wider, [], 'nothing but a scrolling table is wider than a phone');
  await shoot(page, '2-host-phone');
  assert.deepEqual(hostLog, []);

  // The payer's page: the job as payer; a wrong token is refused, the right one allows Stop.
  const payerLog: string[] = [];
  const mine = await openPage(payer, payerLog);
  await mine.waitForSelector('#jobs-payer tbody tr');
  assert.match(await text(mine, '#jobs-payer tbody'), new RegExp(`${jobId.slice(0, 8)}…\\s+OutputStop\\s+running\\s+${host.nodeId.slice(0, 8)}…\\s+3`));
  assert.match(await text(mine, '#locked-bids'), /^3$/);
  assert.match(await text(mine, '#locked-channels'), /^2$/);
  await mine.fill('#token', host.token);
  await mine.press('#token', 'Enter');
  await mine.waitForFunction(() => document.querySelector('#token-message')?.textContent !== '');
  assert.match(await text(mine, '#token-message'), /not this node's API token/);
  assert.equal(await mine.getAttribute('#token', 'aria-invalid'), 'true');
  assert.equal(await mine.inputValue('#token'), '', 'the field never keeps a token');
  // The payer reads the job's output too (the node asks its host).
  await mine.click(`[data-key="logs-${jobId}"]`);
  await mine.waitForFunction(() => /line 2\n/.test(document.querySelector('#log-lines')?.textContent ?? ''));

  // A page of the origin (the wallet, say) that opens /node keeps a hold on its window: that one takes no token.
  const walletContext = await browser.newContext();
  const wallet = await walletContext.newPage();
  await wallet.goto(`${payer.url}/wallet`);
  const [opened] = await Promise.all([wallet.waitForEvent('popup'), wallet.evaluate(() => void window.open('/node'))]);
  await opened.waitForSelector('#status[data-state="online"]');
  await opened.fill('#token', payer.token);
  await opened.press('#token', 'Enter');
  assert.match(await text(opened, '#token-message'), /tab of its own/);
  assert.equal(await opened.isVisible('#token-forget'), false);
  await walletContext.close();

  await mine.fill('#token', payer.token);
  await mine.press('#token', 'Enter');
  await mine.waitForSelector('#token-forget:visible');
  assert.match(await text(mine, '#token-message'), /allowed in this tab/);
  assert.equal(await mine.inputValue('#token'), '');
  const stop = mine.locator(`[data-key="stop-${jobId}"]`);
  await waitFor('Stop enabled', async () => !(await stop.isDisabled()), 5_000);
  await shoot(mine, '3-payer-desktop');
  await mine.setViewportSize(PHONE);
  await shoot(mine, '4-payer-phone');
  await mine.setViewportSize(DESKTOP);

  // The token is in no storage the wallet's pages share with this one: no cookie, web storage or database.
  const stored = await mine.evaluate(async () => ({
    local: localStorage.length,
    session: sessionStorage.length,
    cookie: document.cookie,
    databases: (await indexedDB.databases()).length,
  }));
  assert.deepEqual(stored, { local: 0, session: 0, cookie: '', databases: 0 });
  assert.deepEqual(await mine.context().cookies(), []);

  await stop.click();
  await mine.waitForFunction(() => /is stopping/.test(document.querySelector('#jobs-message')?.textContent ?? ''));
  await waitFor('the job ends on the host', async () => (await getJson<{ status: string }>(host, `/jobs/${jobId}`)).status !== 'running', 30_000);
  await mine.waitForFunction(() => !/running/.test(document.querySelector('#jobs-payer tbody')?.textContent ?? ''), undefined, { timeout: 30_000 });
  await shoot(mine, '5-payer-stopped');
  // On the host's page the output ends.
  await page.waitForFunction(() => /complete|nothing/.test(document.querySelector('#log-state')?.textContent ?? ''), undefined, { timeout: 30_000 });
  assert.deepEqual(payerLog, []);
  assert.deepEqual(hostLog, []);
});

/** GET `path` from `node` over a raw socket with the given Host header. */
function getWithHost(
  node: MeshProcess,
  path: string,
  hostHeader: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const url = new URL(node.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, headers: { host: hostHeader, ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.once('error', reject);
    req.end();
  });
}

test('the operator page over real sockets: its CSP on loopback; refused to another Host and another origin', async () => {
  const port = new URL(host.url).port;
  for (const path of ['/node', '/node/app.js']) {
    const served = await getWithHost(host, path, `127.0.0.1:${port}`);
    assert.equal(served.status, 200, path);
    assert.equal(served.headers['content-security-policy'], WALLET_HEADERS['content-security-policy']);
    assert.equal(served.headers['x-content-type-options'], 'nosniff');
    assert.equal(served.headers['referrer-policy'], 'no-referrer');
    assert.ok(!served.body.includes(host.token), 'the node serves no token');
  }
  for (const name of [`attacker.example:${port}`, `192.168.1.20:${port}`]) {
    const refused = await getWithHost(host, '/node', name);
    assert.equal(refused.status, 403, name);
    assert.equal(JSON.parse(refused.body).type, '/problems/loopback-only');
  }
  const crossOrigin = await getWithHost(host, '/node/app.js', `127.0.0.1:${port}`, { origin: 'http://127.0.0.1:1' });
  assert.equal(crossOrigin.status, 403);
  assert.equal(JSON.parse(crossOrigin.body).type, '/problems/cross-origin');
});
