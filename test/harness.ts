/**
 * One test file, three runtimes: `test(name, fn)` registers with whatever runner loaded the file —
 * `Deno.test` under Deno, mocha's `it` in the browser (web-test-runner), `node:test` on Node.
 */
type TestFn = () => void | Promise<void>;
type Register = (name: string, fn: TestFn) => void;

interface RunnerGlobals {
  Deno?: { test(name: string, fn: TestFn): void };
  it?: (name: string, fn: TestFn) => void;
}

async function pickRunner(): Promise<Register> {
  const g = globalThis as RunnerGlobals;
  if (g.Deno?.test) {
    const deno = g.Deno;
    return (name, fn) => deno.test(name, fn);
  }
  if (typeof g.it === 'function') {
    const it = g.it;
    return (name, fn) => it(name, fn);
  }
  // A computed specifier keeps browser bundlers from trying to resolve a Node built-in.
  const specifier = 'node:test';
  const nodeTest = (await import(specifier)) as { test: (name: string, fn: TestFn) => unknown };
  return (name, fn) => {
    nodeTest.test(name, fn);
  };
}

export const test: Register = await pickRunner();

/**
 * The cheapest real task boundary on this runner, for the scheduler's turn (core/time/scheduler.ts):
 * a MessageChannel message, which Node and browsers deliver as a task, after every microtask queued
 * before it. Deno delivers messages among the microtasks, so there it is undefined and the scheduler
 * keeps its timer turn.
 */
export const messageTurn: (() => Promise<void>) | undefined =
  'Deno' in globalThis
    ? undefined
    : () =>
        new Promise((resolve) => {
          const channel = new MessageChannel();
          channel.port1.onmessage = (): void => {
            channel.port1.close();
            resolve();
          };
          channel.port2.postMessage(null);
        });
