/**
 * How the project starts Chromium: Debian's binary (a browser tool's own download fails here) with
 * the flags that let it run headless as root on a machine with no outside network.
 */
export const CHROMIUM_PATH: string = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
