/**
 * The size of V8's young generation for `mesh directory`. V8 sizes it from the heap limit, which it
 * derives from the machine's memory: on a machine of 16 GB or more each of its two semi-spaces grows
 * to 64 MB under load. Every request of the directory leaves short-lived garbage, so under
 * concurrent load the young generation fills to its limit: 128 MB of the directory's resident memory,
 * against about 200 MB for the whole index of a million records. Capped at 16 MB a semi-space, it
 * holds 32 MB (bench/RESULTS.md, directory section, and docs/directory.md give the measurements).
 *
 * V8 reads the size once, when the heap is made: `v8.setFlagsFromString` afterwards has no effect,
 * so the command restarts itself in place (`process.execve`: same process id, same standard
 * streams, the signals still reach it) with Node's documented flag, before it opens anything.
 */

/** The semi-space size the directory runs with, in MB (the young generation is two of them). */
export const DIRECTORY_SEMI_SPACE_MB = 8;

const FLAG = '--max-semi-space-size';

/** True when this process was started with a young-generation size of its own (the user's or ours). */
function sized(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  // V8 takes its flags with dashes or underscores.
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((arg) => arg.replaceAll('_', '-').split('=')[0] === FLAG);
}

/**
 * Restarts this process in place with `--max-semi-space-size=DIRECTORY_SEMI_SPACE_MB` unless it
 * already has a size (given on Node's command line or in NODE_OPTIONS: the user's choice wins).
 * Returns only when there is nothing to do or the runtime cannot restart in place (no
 * `process.execve`, as on Windows): the directory then runs with V8's default.
 */
export function restartWithDirectoryYoungGeneration(): void {
  if (sized(process.execArgv, process.env.NODE_OPTIONS) || typeof process.execve !== 'function') return;
  const [, ...args] = process.argv;
  process.execve(process.execPath, [process.execPath, `${FLAG}=${DIRECTORY_SEMI_SPACE_MB}`, ...process.execArgv, ...args], process.env);
}
