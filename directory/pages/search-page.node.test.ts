// The directory's pages for people in Debian's Chromium: the search page at / with JavaScript
// turned off (plain GET forms), its filters, paging, a refused filter and the submission form, over
// node:http. Screenshots of each step go to test-results/directory/ (desktop and phone width).

import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { type HttpServer, serveFetch } from '../../host-node/http-server.ts';
import { launchChromium } from '../../test/browser-page.ts';
import { parseDataset, serializeDataset } from '../dataset.ts';
import { createDirectory, type Directory } from '../router.ts';
import { MemorySubmissionStore } from '../submissions/store.ts';
import { fixtureDataset, textSource } from '../testing/fixtures.ts';
import { buildSharedDataset } from '../testing/shared-dataset.ts';

const SHOTS = fileURLToPath(new URL('../../test-results/directory/', import.meta.url));
const DESKTOP = { width: 1280, height: 860 };
const PHONE = { width: 390, height: 844 };

let browser: Browser;
let directory: Directory;
let server: HttpServer;

before(async () => {
  await mkdir(SHOTS, { recursive: true });
  // The shared EPA extract (998 real facilities, with their states) and the made-up fixture records
  // (categories, contacts, other countries), served together.
  const dir = await mkdtemp(join(tmpdir(), 'mesh-directory-page-'));
  await buildSharedDataset(join(dir, 'shared.json'));
  const shared = parseDataset(await readFile(join(dir, 'shared.json'), 'utf8'));
  await rm(dir, { recursive: true, force: true });
  const fixture = fixtureDataset();
  const records = [...shared.records, ...fixture.records].sort((a, b) => (a.id < b.id ? -1 : 1));
  const text = serializeDataset({ generated: shared.generated, sources: [...shared.sources, ...fixture.sources], records });
  directory = createDirectory({ data: textSource(text), submissions: new MemorySubmissionStore() });
  [browser, server] = await Promise.all([launchChromium(), serveFetch(directory.fetch, '127.0.0.1', 0)]);
});
after(async () => {
  await browser?.close();
  await server?.close();
  await directory?.close();
});

// biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator, not a DOM node; the rendered text is the point.
const text = (page: Page, selector: string): Promise<string> => page.locator(selector).innerText();

/**
 * Runs `fn` on a fresh page without JavaScript (`javaScriptEnabled` turns it on); anything the
 * policy refuses and every failed request go to `log`.
 */
async function withPage(
  viewport: { width: number; height: number },
  fn: (page: Page, log: string[]) => Promise<void>,
  javaScriptEnabled = false,
): Promise<void> {
  const log: string[] = [];
  const context = await browser.newContext({ viewport, javaScriptEnabled });
  try {
    const page = await context.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/.test(message.text())) log.push(`policy: ${message.text()}`);
    });
    page.on('response', (response) => {
      if (response.status() >= 400) log.push(`HTTP ${response.status()} for ${response.url()}`);
    });
    await fn(page, log);
  } finally {
    await context.close();
  }
}

const shoot = (page: Page, name: string, fullPage = true): Promise<Buffer> => page.screenshot({ path: `${SHOTS}${name}.png`, fullPage });

test('the search page without JavaScript: overview, a search with filters from the form, paging, attribution and dates', () =>
  withPage(DESKTOP, async (page, log) => {
    const home = await page.goto(`${server.url}/`);
    assert.equal(home?.status(), 200);
    assert.match(home?.headers()['content-security-policy'] ?? '', /default-src 'none'/);
    assert.equal(await page.title(), 'Find a manufacturer');
    assert.match(await text(page, 'main'), /1,?0\d\d records from public sources, as of 2026-11-21/);
    await shoot(page, 'search-home-desktop');

    // A person types lower case and leaves most filters empty: the form sends every field.
    await page.fill('#q', 'ink');
    await page.fill('#region', 'us-oh');
    await page.click('button[type=submit]');
    const url = new URL(page.url());
    assert.equal(url.pathname, '/');
    assert.equal(url.searchParams.get('region'), 'us-oh');
    const count = await text(page, '.count');
    const total = Number(/^(\d+) records?/.exec(count)?.[1]);
    assert.ok(total > 0, count);
    const records = page.locator('li.record');
    for (let i = 0; i < (await records.count()); i++) {
      const record = await text(page, `li.record >> nth=${i}`);
      assert.match(record, / · US-OH · US/);
      assert.match(record, /US EPA Facility Registry Service, Public domain \(US federal government work\), retrieved 2026-11-21/);
      assert.match(record, /first seen \d{4}-\d\d-\d\d, updated \d{4}-\d\d-\d\d/);
      assert.match(record, /Listed by an official register/);
    }
    assert.match(await text(page, 'footer'), /A listing or a category is not proof/);
    assert.equal(await page.inputValue('#region'), 'US-OH', 'the form shows the filter as applied');
    await shoot(page, 'search-region-desktop');

    // Every US facility of the extract: more than a page, paged by links.
    await page.goto(`${server.url}/?country=US&limit=20`);
    assert.match(await text(page, '.count'), /^\d+ records; showing 1–20$/);
    await page.click('a[rel=next]');
    assert.match(await text(page, '.count'), /; showing 21–40$/);
    assert.equal(new URL(page.url()).searchParams.get('offset'), '20');
    await page.click('a[rel=prev]');
    assert.match(await text(page, '.count'), /; showing 1–20$/);

    // Categories, contacts and evidence, from the fixture records.
    await page.goto(`${server.url}/?q=m%C3%BCller`);
    assert.match(await text(page, 'li.record'), /CNC machining[\s\S]*Inspection/);
    await page.click('li.record summary');
    await shoot(page, 'search-categories-desktop');
    assert.deepEqual(log, []);
  }));

// JavaScript on here only to measure the layout.
test('the search page at a phone width: filters two to a row, nothing wider than the screen', () =>
  withPage(
    PHONE,
    async (page, log) => {
      await page.goto(`${server.url}/?q=steel&limit=20`);
      assert.match(await text(page, '.count'), /^47 records; showing 1–20$/);
      const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, screen: window.innerWidth }));
      assert.ok(widths.page <= widths.screen, JSON.stringify(widths));
      const box = async (selector: string): Promise<{ x: number; width: number }> => (await page.locator(selector).first().boundingBox())!;
      // The filters two to a row: the third starts under the first.
      assert.equal((await box('#country')).x, (await box('#city')).x);
      assert.ok((await box('#region')).x > (await box('#country')).x);
      await shoot(page, 'search-results-phone');
      await page.locator('li.record').first().scrollIntoViewIfNeeded();
      await shoot(page, 'search-results-phone-screen', false);
      await page.goto(`${server.url}/`);
      await shoot(page, 'search-home-phone');
      await page.goto(`${server.url}/submit`);
      const submitWidths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, screen: window.innerWidth }));
      assert.ok(submitWidths.page <= submitWidths.screen, JSON.stringify(submitWidths));
      await shoot(page, 'submit-phone');
      assert.deepEqual(log, []);
    },
    true,
  ));

test('a refused filter shows the form again with the reason; the submission form shares the frame and style', () =>
  withPage(DESKTOP, async (page, log) => {
    await page.goto(`${server.url}/`);
    await page.fill('#region', 'Ohio');
    await page.click('button[type=submit]');
    assert.match(await text(page, '.errors'), /State or province: give its ISO 3166-2 code, .* like US-OH or DE-BY \(not "OHIO"\)/);
    assert.equal(await page.inputValue('#region'), 'OHIO');
    assert.deepEqual(log, [`HTTP 400 for ${server.url}/?q=&country=&region=Ohio&city=&category=&contact=&limit=20`]);
    await shoot(page, 'search-refused-desktop');
    log.length = 0;

    // From a record to its correction form: the same header, the same look.
    await page.goto(`${server.url}/?q=acme+steel+fabricators`);
    await page.click('li.record a:text("Correct")');
    assert.equal(new URL(page.url()).pathname, '/submit');
    assert.equal(await page.inputValue('#record_id'), 'epa-110000000002');
    assert.equal(await text(page, 'header.site a.home'), 'Manufacturer directory');
    const [searchFont, submitFont] = [
      await page.goto(`${server.url}/`).then(() => page.locator('body').evaluate((b) => getComputedStyle(b).fontFamily)),
      await page.goto(`${server.url}/submit`).then(() => page.locator('body').evaluate((b) => getComputedStyle(b).fontFamily)),
    ];
    assert.equal(searchFont, submitFont);
    await page.fill('#company', 'Acme Steel Fabricators');
    await page.fill('#email', 'office@acme.example');
    await page.fill('#message', 'We moved to Columbus.');
    await page.selectOption('#kind', 'correction');
    await page.fill('#record_id', 'epa-110000000002');
    await shoot(page, 'submit-desktop');
    await page.click('button[type=submit]');
    assert.match(await text(page, 'main'), /Request received/);
    assert.deepEqual(log, []);
  }));
