/**
 * The directory's Deno entry: `deno task directory [options]` locally, and the entry module on
 * Deno Deploy (Deno.serve at top level; Deploy supplies the address and the project's KV). Flags
 * as `mesh directory`, parsed by the same kit (node:util's parseArgs, which Deno has); without
 * `--data` it serves `~/.mesh/directory/directory.json`, which `mesh directory import` writes.
 * See deno-serve.ts.
 */

import { runCommand } from '../../host-node/cli/run.ts';
import { defaultDatasetPath } from './dataset-path.ts';
import { denoDirectoryCommand } from './deno-serve.ts';

const deno = (globalThis as unknown as { Deno: { args: string[]; exit(code: number): never } }).Deno;
const io = {
  out: (text: string) => console.log(text.replace(/\n$/, '')),
  err: (text: string) => console.error(text.replace(/\n$/, '')),
};
deno.exit(await runCommand(denoDirectoryCommand(defaultDatasetPath), deno.args, 'deno task directory', io));
