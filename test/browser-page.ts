/**
 * Real Chromium pages for tests against real `mesh node` processes: Debian's binary driven by
 * playwright-core, with a page bundle made by esbuild as the wallet's own bundle is.
 */
import * as esbuild from 'esbuild';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './chromium.ts';

/** `entry` bundled for the browser as one ES module (the text of the script). */
export async function bundleForPage(entry: string): Promise<string> {
  const result = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2023',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

/** A headless Chromium (with `extraArgs` after the project's flags); close it in the test's `after`. */
export function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS, ...extraArgs], headless: true });
}

/**
 * A fresh page (its own context, so its own IndexedDB) at `url`, with `script` run in it as a
 * module; the page's console goes to `log`.
 */
export async function pageWithScript(browser: Browser, url: string, script: string, log: string[] = []): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('console', (message) => log.push(message.text()));
  page.on('pageerror', (error) => log.push(`page error: ${error.message}`));
  await page.goto(url);
  await page.addScriptTag({ type: 'module', content: script });
  return page;
}

// biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator, not a DOM node; the rendered text is the point.
export const text = (page: Page, selector: string): Promise<string> => page.locator(selector).innerText();

/**
 * Collects in `log`, which tests expect empty: the page's errors, what its content security policy
 * refuses, and every request of its own that fails (the favicon included) but those whose URL
 * matches `expectedFailures`.
 */
export function watch(page: Page, log: string[], expectedFailures?: RegExp): void {
  page.on('pageerror', (error) => log.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/.test(message.text())) log.push(`policy: ${message.text()}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400 && !expectedFailures?.test(response.url())) log.push(`HTTP ${response.status()} for ${response.url()}`);
  });
}
