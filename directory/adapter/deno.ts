/**
 * The directory's Deno entry: `deno task directory [options]` locally, and the entry module on
 * Deno Deploy (Deno.serve at top level; Deploy supplies the address and the project's KV).
 * Flags as `mesh directory`; without `--data` it serves `~/.mesh/directory/directory.json`,
 * built once from the EPA FRS extract (import/default-dataset.ts). See deno-serve.ts.
 */
import { ensureDefaultDataset } from '../import/default-dataset.ts';
import { runDenoDirectory } from './deno-serve.ts';

const deno = (globalThis as unknown as { Deno: { args: string[]; exit(code: number): never } }).Deno;
deno.exit(await runDenoDirectory(deno.args, (say) => ensureDefaultDataset(say)));
