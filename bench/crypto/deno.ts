/**
 * Deno entry of the crypto benchmark: runs the shared cases with WebCrypto as the baseline and
 * prints the result as one JSON line on stdout (progress and tables go to stderr).
 * `npx mesh bench crypto` starts it as `deno run --no-prompt bench/crypto/deno.ts [--quick]`.
 */
import { runCryptoSuite } from './cases.ts';

// Reached through globalThis so the file type-checks both with Deno's types and with the
// project's tsc (which has Node's types and no `Deno`).
const Deno = (
  globalThis as unknown as {
    Deno: { readonly args: string[]; readonly version: { deno: string; v8: string; typescript: string } };
  }
).Deno;

/** The line prefix the Node side looks for on this process's stdout. */
const RESULT_PREFIX = 'BENCH-RESULT ';

const result = await runCryptoSuite(
  {
    runtime: 'deno',
    version: Deno.version.deno,
    details: { v8: Deno.version.v8, typescript: Deno.version.typescript },
    log: (text) => console.error(text),
  },
  { quick: Deno.args.includes('--quick') },
);
console.log(RESULT_PREFIX + JSON.stringify(result));
