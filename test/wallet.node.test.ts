// The wallet page end to end: Debian's Chromium opens /wallet on a real `mesh node --devnet`, makes
// a key, is paid, pays back, survives a reload, refuses bad input without signing, shows offline
// when its host stops and reconnects when it returns. Screenshots of each step go to
// test-results/wallet/ (desktop and phone width).

import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { openIdentity } from '../core/crypto/sealed-identity.ts';
import { encode } from '../core/encoding/codec.ts';
import { fromHex, toHex } from '../core/encoding/hex.ts';
import { devnet } from '../core/ledger/params.ts';
import { SEGMENTS_PROTOCOL, Segments, segmentCodec } from '../core/node/segments.ts';
import { startP2PNetwork } from '../host-node/p2p.ts';
import { launchChromium, text, watch } from './browser-page.ts';
import { getJson, type MeshProcess, postJson, startNode, stopAll, stopNode, tcpAddress, waitFor } from './mesh-process.ts';

const SHOTS = fileURLToPath(new URL('../test-results/wallet/', import.meta.url));
const DESKTOP = { width: 1280, height: 860 };
const BACKUP_PASS = 'glass heron at dusk';
const PHONE = { width: 390, height: 844 };

let browser: Browser;
let host: MeshProcess;
let p2pPort: number;

// A free TCP port whose next port is free too (the node's WebSockets listen on port + 1).
async function freePortPair(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const next = await new Promise<boolean>((resolve) => {
      const server = createServer()
        .once('error', () => resolve(false))
        .listen(port + 1, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (next && port < 65_000) return port;
  }
}

before(async () => {
  await mkdir(SHOTS, { recursive: true });
  p2pPort = await freePortPair();
  [browser, host] = await Promise.all([launchChromium(), startNode({ mine: true, p2pPort })]);
});
after(async () => {
  await browser?.close();
  await stopAll();
});

const shoot = async (page: Page, name: string): Promise<void> => {
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
};

async function send(page: Page, to: string, amount: string): Promise<string> {
  await page.fill('#send-to', to);
  await page.fill('#send-amount', amount);
  // The message of an earlier send must not pass for this one's.
  await page.evaluate(() => (document.querySelector('#send-message')!.textContent = ''));
  await page.press('#send-amount', 'Enter');
  await page.waitForFunction(() => (document.querySelector('#send-message')?.textContent ?? '') !== '');
  const message = await text(page, '#send-message');
  return message;
}

test('the wallet: create, back up, receive, send, bad input, reload, one tab, phone width, offline and back, import elsewhere', async () => {
  const context = await browser.newContext({ viewport: DESKTOP, acceptDownloads: true });
  const page = await context.newPage();
  const log: string[] = [];
  watch(page, log);
  await page.goto(`${host.url}/wallet`);

  // Empty: no key yet. The keyboard reaches "Create" first, then the import, with the focus shown.
  await page.locator('#create').waitFor();
  await shoot(page, '1-empty-desktop');
  for (const id of ['create', 'import-file']) {
    await page.keyboard.press('Tab');
    assert.deepEqual(await page.evaluate(() => [document.activeElement?.id, document.activeElement?.matches(':focus-visible')]), [id, true]);
  }
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#status[data-state="synced"]', { timeout: 30_000 });
  assert.equal(await text(page, '#balance'), '0', log.join('\n'));
  assert.equal(await page.isVisible('#history-empty'), true);
  await shoot(page, '2-new-key-synced');

  // Receive asks for a backup first; the backup is a mesh identity file of the page's key.
  await page.click('#receive-show');
  assert.equal(await page.isVisible('#backup-ask'), true);
  assert.equal(await page.isVisible('#node-id'), false);
  assert.equal(await page.isVisible('#receive-show'), false, 'the button has done its work while the backup is asked for');
  // "Save a backup first" leads to the one backup form: a passphrase, twice, seals the file.
  await page.click('#backup-first');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'backup-pass');
  assert.equal(await page.locator('text=holds your secret key').count(), 1, 'the warning is said once');
  await page.fill('#backup-pass', 'short');
  await page.click('#export');
  assert.match(await text(page, '#backup-message'), /at least 8 characters/);
  await page.fill('#backup-pass', BACKUP_PASS);
  await page.fill('#backup-pass2', `${BACKUP_PASS}!`);
  await page.click('#export');
  assert.match(await text(page, '#backup-message'), /the two passphrases differ/);
  assert.equal(await page.isVisible('#node-id'), false, 'no NodeId before a backup is saved');
  await page.fill('#backup-pass2', BACKUP_PASS);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
  const backupText = await new Response((await download.createReadStream()) as unknown as ReadableStream).text();
  const backup = JSON.parse(backupText);
  await page.locator('#node-id').waitFor();
  const walletId = await text(page, '#node-id');
  assert.match(walletId, /^[0-9a-f]{64}$/);
  assert.equal(backup.type, 'mesh-identity');
  assert.equal(backup.version, 2, 'sealed');
  assert.equal(backup.seed, undefined, 'no seed in the clear');
  assert.equal(backup.node_id, walletId);
  // The CLI opens the wallet's backup: one format for both.
  assert.equal(toHex((await openIdentity(backupText, BACKUP_PASS)).publicKey), walletId);
  assert.equal(await page.inputValue('#backup-pass'), '', 'the passphrase is not left in the form');
  assert.match((await page.locator('#qr img').getAttribute('src'))!, /^data:image\//);
  await page.click('#copy');
  await page.waitForFunction(() => (document.querySelector('#copy-message')?.textContent ?? '') !== '');
  await shoot(page, '3-receive');

  // The node pays the page; the page shows the balance once a block has it.
  const paid = await postJson(host, '/transfer', { to: walletId, amount: '5000000000000000000' });
  assert.equal(paid.status, 201);
  await page.waitForFunction(() => document.querySelector('#balance')?.textContent === '5', undefined, { timeout: 30_000 });
  assert.equal(await text(page, '#free'), '5');
  assert.equal(await page.locator('#history-list li').count(), 1);
  await shoot(page, '4-paid');

  // Bad input: a clear message and nothing signed.
  const refusals: [string, string, RegExp][] = [
    [host.nodeId, '0', /more than 0/],
    [host.nodeId, '6', /more than the free balance of 5 credits/],
    [host.nodeId, '-1', /amount in credits/],
    ['not a node!', '1', /neither a NodeId/],
    ['nobody-holds-this', '1', /No one holds the name "nobody-holds-this"/],
  ];
  for (const [to, amount, expected] of refusals) assert.match(await send(page, to, amount), expected);
  await page.fill('#send-amount', '0');
  await page.press('#send-amount', 'Enter');
  await shoot(page, '5-bad-amount');

  // The host claims a name; once the page holds its block, the page pays part back to the name.
  assert.equal((await postJson(host, '/names/claim', { name: 'wallet-host' })).status, 202);
  await waitFor('the name is held on the chain', async () => (await getJson<{ node_id?: string }>(host, '/names/wallet-host').catch(() => undefined))?.node_id);
  const claimed = (await getJson<{ height: number }>(host, '/beacon')).height;
  await page.waitForFunction((h) => Number(document.querySelector('#height')?.textContent) >= h, claimed, { timeout: 30_000 });
  assert.match(await send(page, 'wallet-host', '1.5'), /Sent 1.5 credits/);
  assert.match(await text(page, '#send-message'), /pending until a block includes it/);
  // What the form may spend next: 5 less the 1.5 pending (or, once a block has it, the new balance).
  assert.equal(await text(page, '#free'), '3.5');
  await waitFor("the node has the page's transfer", async () =>
    (await getJson<{ counterparty?: string; direction: string; amount: string }[]>(host, `/transactions/${host.nodeId}`)).find(
      (r) => r.counterparty === walletId && r.direction === 'in' && r.amount === '1500000000000000000',
    ),
  );
  await page.waitForFunction(() => document.querySelector('#balance')?.textContent === '3.5', undefined, { timeout: 30_000 });
  // Once a block has it, the message says so, and the history names the payee as the user typed it.
  await page.waitForFunction(() => /in block \d+/.test(document.querySelector('#send-message')?.textContent ?? ''), undefined, { timeout: 30_000 });
  assert.match(await text(page, '#history-list li:first-child'), new RegExp(`wallet-host \\(${host.nodeId}\\)`));
  // Only the one send was signed: the refused ones never reached the node.
  const fromWallet = (await getJson<{ counterparty?: string; direction: string }[]>(host, `/transactions/${walletId}`)).filter((r) => r.direction === 'out');
  assert.equal(fromWallet.length, 1);
  await shoot(page, '6-sent');

  // Reload: the key, the balance and the history are still there.
  // The status pill is a live region: record every state it takes from the reload on.
  await page.addInitScript(() => {
    const seen: string[] = ((globalThis as any).statusSeen = []);
    document.addEventListener('DOMContentLoaded', () => {
      const pill = document.querySelector('#status')!;
      new MutationObserver(() => seen.push(pill.getAttribute('data-state')!)).observe(pill, { attributes: true, childList: true });
    });
  });
  await page.reload();
  await page.waitForSelector('#status[data-state="synced"]', { timeout: 30_000 });
  assert.ok(!(await page.evaluate(() => (globalThis as any).statusSeen as string[])).includes('offline'), 'no "Offline" while a reload connects');
  await page.waitForFunction(() => document.querySelector('#balance')?.textContent === '3.5', undefined, { timeout: 30_000 });
  assert.equal(await page.locator('#history-list li').count(), 2);
  await page.click('#receive-show');
  assert.equal(await text(page, '#node-id'), walletId);
  await shoot(page, '7-reloaded');

  // A checkpoint pinned by URL on a browser that already holds a chain: the page says plainly it is ignored.
  await page.goto(`${host.url}/wallet?checkpoint=${'ab'.repeat(32)}&checkpoint_height=1`);
  await page.waitForSelector('#status[data-state="synced"]', { timeout: 30_000 });
  assert.match(
    await text(page, '#pin-note'),
    /already holds a chain and goes on with it, so the pinned checkpoint is ignored: block 1 of the held chain is another block\./,
  );
  assert.equal(await page.isVisible('#pin-card'), false);
  await shoot(page, '7c-pin-ignored');

  // A second tab of the same browser profile does not start a second node on the same store and key.
  const tab = await context.newPage();
  await tab.goto(`${host.url}/wallet`);
  await tab.waitForSelector('#status[data-state="error"]');
  assert.match(await text(tab, '#error'), /already open in another tab/);
  await tab.close();

  // Phone width: nothing wider than the screen.
  await page.setViewportSize(PHONE);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `the page is ${overflow} px wider than a phone`);
  await shoot(page, '8-phone');

  // Keyboard: Tab reaches the send form's fields and button in order.
  await page.focus('#send-to');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'send-amount');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'send-submit');

  // Offline when the host stops; back when it returns on the same ports.
  await stopNode(host);
  await page.waitForSelector('#status[data-state="offline"]', { timeout: 30_000 });
  await shoot(page, '9-offline-phone');
  host = await startNode({ mine: true, p2pPort, dataDir: host.dataDir });
  await page.waitForSelector('#status[data-state="synced"]', { timeout: 30_000 });
  await page.setViewportSize(DESKTOP);
  await shoot(page, '10-reconnected');
  assert.deepEqual(log, []);
  await context.close();

  // Another browser imports the backup (once the first has closed: one key is one peer), pinned to a recent checkpoint (?checkpoint=): the same key and
  // balance, checked from the state at that block; the history before it is not held, and the page says so.
  const other = await browser.newContext({ viewport: DESKTOP });
  const second = await other.newPage();
  const pinned = await getJson<{ height: number; hash: string }>(host, '/beacon');
  await second.goto(`${host.url}/wallet?checkpoint=${pinned.hash}&checkpoint_height=${pinned.height}`);
  await second.locator('#create').waitFor();
  await second.setInputFiles('#import-file', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a key') });
  await second.waitForFunction(() => (document.querySelector('#onboard-message')?.textContent ?? '') !== '');
  assert.match(await text(second, '#onboard-message'), /not a mesh key backup: it is not JSON/);
  await second.setInputFiles('#import-file', { name: 'backup.json', mimeType: 'application/json', buffer: Buffer.from(backupText) });
  // A sealed backup asks its passphrase; a wrong one is refused and the page stays on the import.
  await second.waitForSelector('#import-form:not([hidden])');
  await second.fill('#import-pass', 'not the passphrase');
  await second.click('#import-open');
  await second.waitForFunction(() => /Not opened/.test(document.querySelector('#onboard-message')?.textContent ?? ''), undefined, { timeout: 10_000 });
  assert.match(await text(second, '#onboard-message'), /passphrase does not open this backup/);
  await shoot(second, '7-import-wrong-passphrase');
  await second.fill('#import-pass', BACKUP_PASS);
  await second.click('#import-open');
  // A first start from a pinned checkpoint waits for the user's yes, showing what is pinned.
  await second.waitForSelector('#pin-card:not([hidden])');
  assert.equal(await text(second, '#pin-hash'), pinned.hash);
  assert.equal(await text(second, '#status'), 'Confirm the pinned checkpoint');
  assert.equal(await second.isVisible('#onboard'), false);
  await shoot(second, '7a-confirm-pinned');
  await second.setViewportSize(PHONE);
  await shoot(second, '7a-confirm-pinned-phone');
  await second.setViewportSize(DESKTOP);
  await second.click('#pin-accept');
  await second.waitForSelector('#status[data-state="synced"]', { timeout: 30_000 });
  await second.waitForFunction(() => document.querySelector('#balance')?.textContent === '3.5', undefined, { timeout: 30_000 });
  await second.click('#receive-show');
  assert.equal(await text(second, '#node-id'), walletId, 'an imported key counts as backed up');
  await second.waitForFunction(() => /older history is not shown/.test(document.querySelector('#history-note')?.textContent ?? ''));
  assert.equal(await text(second, '#history-empty'), 'No transactions in the blocks this browser holds.');
  await shoot(second, '7b-imported-pinned-checkpoint');
  await other.close();
});

test("a peer that serves a state not matching the checkpoint's state_root is refused, and the page says so", async () => {
  // A hostile peer: it takes the true state at the checkpoint from the host, then serves it with one value changed.
  const params = devnet(250);
  const hostile = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [tcpAddress(host)] });
  try {
    // A checkpoint the user pinned (?checkpoint=): a recent block of the host's chain, whose state holds the miner's account.
    const pinned = await waitFor('a few blocks', async () => {
      const beacon = await getJson<{ height: number; hash: string }>(host, '/beacon');
      return beacon.height >= 2 ? beacon : undefined;
    });
    const checkpoint = fromHex(pinned.hash, 32);
    const reader = new Segments(hostile, params, null);
    const truth = await waitFor('the true state', async () => reader.fetch(fromHex(host.nodeId, 32), checkpoint, 3_000).catch(() => undefined));
    hostile.serve(SEGMENTS_PROTOCOL, async () => {
      assert.ok(truth.entries.length > 0);
      const entries = truth.entries.map(([key, value], i) => ({ key, value: i === 0 ? Uint8Array.of(...value.slice(0, -1), value.at(-1)! ^ 1) : value }));
      return encode(segmentCodec, { block: truth.block.bytes, total: entries.length, offset: 0, entries });
    });
    const ws = hostile.addresses().find((a) => a.includes('/ws'))!;
    const query = new URLSearchParams({ host: `${ws}/p2p/${hostile.libp2p.peerId}`, checkpoint: pinned.hash, checkpoint_height: String(pinned.height) });
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    await page.goto(`${host.url}/wallet?${query}`);
    await page.click('#create');
    await page.click('#pin-accept');
    await page.waitForSelector('#status[data-state="error"]', { timeout: 40_000 });
    assert.match(await text(page, '#error'), /does not match that block's state_root: refused/);
    assert.equal(await text(page, '#status'), 'Checkpoint refused');
    assert.equal(await page.isVisible('#retry'), true);
    assert.equal(await page.isVisible('#send-card'), false, 'no send form while the node is not running');
    await shoot(page, '11-checkpoint-refused');
    await context.close();
  } finally {
    await hostile.stop();
  }
});

test('a pinned checkpoint no host holds: the page says no host answered in time, with Retry, and no send form', async () => {
  const context = await browser.newContext({ viewport: PHONE });
  const page = await context.newPage();
  const log: string[] = [];
  watch(page, log);
  await page.goto(`${host.url}/wallet?checkpoint=${'cd'.repeat(32)}&checkpoint_height=3`);
  await page.click('#create');
  await page.click('#pin-accept');
  await page.waitForSelector('#status[data-state="error"]', { timeout: 40_000 });
  assert.equal(await text(page, '#status'), 'No answer from the hosts');
  assert.match(await text(page, '#error-text'), /No host sent the state at block 3 in time/);
  assert.equal(await page.isVisible('#retry'), true);
  assert.equal(await page.isVisible('#send-card'), false);
  await shoot(page, '12-no-answer-phone');
  assert.deepEqual(log, []);
  await context.close();
});

test('a first start with no reachable host shows offline, not an endless "Connecting"', async () => {
  const context = await browser.newContext({ viewport: DESKTOP });
  const page = await context.newPage();
  const peerId = (await getJson<{ hosts: string[] }>(host, '/wallet/config.json')).hosts[0]!.split('/p2p/')[1];
  // A host address nothing listens on (port 1).
  await page.goto(`${host.url}/wallet?host=/ip4/127.0.0.1/tcp/1/ws/p2p/${peerId}`);
  await page.click('#create');
  await page.click('#pin-accept');
  await page.waitForSelector('#status[data-state="offline"]', { timeout: 15_000 });
  assert.equal(await text(page, '#status'), 'Offline: no host reachable, retrying');
  assert.match(await text(page, '#balance-note'), /No host is reachable yet/);
  assert.equal(await page.isVisible('#send-card'), false, 'no send form before the light node runs');
  await shoot(page, '16-first-start-offline');
  await page.setViewportSize(PHONE);
  await shoot(page, '16-first-start-offline-phone');
  await context.close();
});

test('over plain HTTP from an address that is not loopback the page is no secure context: it says it needs localhost or HTTPS', async () => {
  // Chromium loads the page as http://192.0.2.10:8844 (an insecure origin); its requests are answered by the real node.
  const context = await browser.newContext({ viewport: DESKTOP });
  await context.route('http://192.0.2.10:8844/**', async (route) => {
    const path = new URL(route.request().url()).pathname;
    const answer = await fetch(`${host.url}${path}`);
    await route.fulfill({ status: answer.status, headers: Object.fromEntries(answer.headers), body: Buffer.from(await answer.arrayBuffer()) });
  });
  const page = await context.newPage();
  await page.goto('http://192.0.2.10:8844/wallet');
  await page.waitForSelector('#status[data-state="error"]');
  assert.equal(await text(page, '#status'), 'Needs localhost or HTTPS');
  assert.match(await text(page, '#error-text'), /only runs on a page served from localhost or over HTTPS/);
  assert.equal(await page.isVisible('#create'), false);
  await shoot(page, '13-insecure-context');
  await context.close();
});

test('mesh node --announce: /wallet/config.json hands out the announced address', async () => {
  const announced = await startNode({ extraArgs: ['--announce', '/dns4/wallet.example.org/tcp/443/tls/ws'] });
  const config = await getJson<{ hosts: string[] }>(announced, '/wallet/config.json');
  assert.equal(config.hosts.length, 1, JSON.stringify(config.hosts));
  assert.match(config.hosts[0]!, /^\/dns4\/wallet\.example\.org\/tcp\/443\/tls\/ws\/p2p\/12D3Koo\w+$/);
  await stopNode(announced);
});

test("a held chain that does not connect to the host's (the host was reset to a new devnet): the page says so, and a reset keeps the key", async () => {
  const p2p = await freePortPair();
  const http = await freePortPair();
  const fresh = (): Promise<MeshProcess> => startNode({ mine: true, p2pPort: p2p, blockIntervalMs: 100, httpPort: http });
  const past115 = (node: MeshProcess) =>
    waitFor('115 blocks', async () => ((await getJson<{ height: number }>(node, '/beacon')).height >= 115 ? true : undefined));
  let reset = await fresh();
  await past115(reset);
  const context = await browser.newContext({ viewport: DESKTOP, acceptDownloads: true });
  const page = await context.newPage();
  const log: string[] = [];
  watch(page, log);
  await page.goto(`${reset.url}/wallet`);
  await page.click('#create');
  await page.waitForSelector('#status[data-state="synced"]', { timeout: 30_000 });
  const keyFile = async (): Promise<string> => {
    await page.fill('#backup-pass', BACKUP_PASS);
    await page.fill('#backup-pass2', BACKUP_PASS);
    return (await Promise.all([page.waitForEvent('download'), page.click('#export')]))[0].suggestedFilename();
  };
  const before = await keyFile();

  // The same address, a new chain: its block 100 (the checkpoint it hands out) is not the one the page holds.
  await stopNode(reset);
  reset = await fresh();
  await past115(reset);
  await page.reload();
  await page.waitForSelector('#status[data-state="error"]', { timeout: 30_000 });
  assert.equal(await text(page, '#status'), 'On another chain');
  assert.match(await text(page, '#error-text'), /does not connect to its hosts' chain \(the host's block 100 is not the one held here\)/);
  assert.equal(await page.isVisible('#send-card'), false);
  await shoot(page, '14-another-chain');
  await page.setViewportSize(PHONE);
  await shoot(page, '14-another-chain-phone');
  await page.setViewportSize(DESKTOP);
  await page.click('#reset-chain');
  await page.waitForSelector('#status[data-state="synced"]', { timeout: 30_000 });
  assert.equal(await page.isVisible('#error'), false);
  assert.equal(await keyFile(), before, 'the key survives the reset');
  await shoot(page, '15-after-reset');
  assert.deepEqual(log, []);
  await context.close();
  await stopNode(reset);
});
