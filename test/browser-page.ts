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
