/**
 * The directory's Deno entry: `deno task directory [options]` locally, and the entry module on
 * Deno Deploy (Deno.serve at top level; Deploy supplies the address and the project's KV, and the
 * shipped dataset is read from the deployed files). Flags as `mesh directory`; see deno-serve.ts.
 */
import { runDenoDirectory } from './deno-serve.ts';

const deno = (globalThis as unknown as { Deno: { args: string[]; exit(code: number): never } }).Deno;
deno.exit(await runDenoDirectory(deno.args));
