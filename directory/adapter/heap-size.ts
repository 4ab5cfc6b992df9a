/**
 * The heap sizes of `mesh directory`. V8 sizes its heap from the machine's memory, and every request
 * of the directory leaves short-lived garbage:
 *
 * - the young generation: on a machine of 16 GB or more each of its two semi-spaces grows to 64 MB
 *   under load, 128 MB of resident memory against about 250 MB for the whole index of a million
 *   records. Capped at 8 MB a semi-space it holds 16 MB;
 * - the old generation: V8 collects it when it has grown to several times what survives its last
 *   collection. The directory keeps about 30 MB a thread (caches, compiled code; the index itself
 *   lives outside the heap, in shared buffers), and under the benchmark's load the main thread's
 *   heap grew to 190 MB of garbage before a collection. Capped at 64 MB it collects sooner. Indexing
 *   a million records without an index file needs under 30 MB of it (the index is built in typed
 *   arrays).
 *
 * bench/RESULTS.md (directory section) and docs/directory.md give the measurements. The serving
 * threads get the same caps (threads.ts).
 *
 * V8 reads the sizes once, when the heap is made: `v8.setFlagsFromString` afterwards has no effect,
 * so the command restarts itself in place (`process.execve`: same process id, same standard
 * streams, the signals still reach it) with Node's documented flags, before it opens anything.
 */

/** The semi-space size the directory runs with, in MB (the young generation is two of them). */
export const DIRECTORY_SEMI_SPACE_MB = 8;
/** The old generation's size the directory runs with, in MB, on every thread. */
export const DIRECTORY_OLD_SPACE_MB = 64;

const FLAGS: readonly [string, number][] = [
  ['--max-semi-space-size', DIRECTORY_SEMI_SPACE_MB],
  ['--max-old-space-size', DIRECTORY_OLD_SPACE_MB],
];

/** The flags' names given on Node's command line or in NODE_OPTIONS (V8 takes dashes or underscores). */
function given(execArgv: readonly string[], nodeOptions: string | undefined): Set<string> {
  return new Set([...execArgv, ...(nodeOptions ?? '').split(/\s+/)].map((arg) => arg.replaceAll('_', '-').split('=')[0]!));
}

/**
 * Restarts this process in place with the directory's heap sizes, each unless the process already
 * has one of its own (given on Node's command line or in NODE_OPTIONS: the user's choice wins).
 * Returns only when there is nothing to do or the runtime cannot restart in place (no
 * `process.execve`, as on Windows): the directory then runs with V8's defaults.
 */
export function restartWithDirectoryHeapSizes(): void {
  const sized = given(process.execArgv, process.env.NODE_OPTIONS);
  const missing = FLAGS.filter(([flag]) => !sized.has(flag)).map(([flag, mb]) => `${flag}=${mb}`);
  if (missing.length === 0 || typeof process.execve !== 'function') return;
  const [, ...args] = process.argv;
  process.execve(process.execPath, [process.execPath, ...missing, ...process.execArgv, ...args], process.env);
}
