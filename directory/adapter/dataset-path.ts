/**
 * Where the directory looks for its dataset when not given `--data`, and what it tells a user who
 * has none yet. The project ships no dataset: `mesh directory import` fetches one from the public
 * sources into this path. Until then every read answers 503 with
 * `factories: null` and the import hint (http/problem.ts).
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

/** `~/.mesh/directory/directory.json`, beside the submissions folder. */
export function defaultDatasetPath(): string {
  return join(homedir(), '.mesh', 'directory', 'directory.json');
}
