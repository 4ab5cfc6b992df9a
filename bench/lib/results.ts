/**
 * Where a benchmark's results go: its raw figures as JSON in bench/results/<name>.json, and its
 * section of bench/RESULTS.md, rewritten between its markers with everything else kept.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Goal, printGoals } from './goals.ts';

const BENCH_DIR = dirname(dirname(fileURLToPath(import.meta.url)));

export const RESULTS_HEADER = `# Benchmark results

Figures measured on one machine, each next to a baseline measured in the same run.
Reproduce from the repository root with \`npx mesh bench crypto\` (all three runtimes and
\`openssl speed\`, under two minutes on a 2-core machine; \`--runtime node|deno|chromium\` for a
subset, \`--quick\` for a smoke run that writes nothing unless given \`--write\`). Raw figures,
with versions and the CPU, are in \`bench/results/<name>.json\`. Each benchmark rewrites only its
own section below.
`;

export function beginMarker(name: string): string {
  return `<!-- bench:${name}:begin -->`;
}

export function endMarker(name: string): string {
  return `<!-- bench:${name}:end -->`;
}

/**
 * Puts `body` between the markers of section `name` in `document`: replaces what was between
 * them, or appends the section when they are absent; everything else is kept byte for byte.
 * A missing document becomes `header` followed by the section.
 */
export function replaceSection(document: string | null, name: string, body: string, header = RESULTS_HEADER): string {
  const block = `${beginMarker(name)}\n${body.trim()}\n${endMarker(name)}`;
  if (document === null) return `${header.trimEnd()}\n\n${block}\n`;
  const begin = document.indexOf(beginMarker(name));
  const end = document.indexOf(endMarker(name));
  if (begin !== -1 && end > begin) {
    return document.slice(0, begin) + block + document.slice(end + endMarker(name).length);
  }
  if (begin !== -1 || end !== -1) {
    throw new Error(`the ${name} section's markers in the results file are unpaired or out of order`);
  }
  const separator = document.length === 0 || document.endsWith('\n\n') ? '' : document.endsWith('\n') ? '\n' : '\n\n';
  return `${document}${separator}${block}\n`;
}

/** The file's text, or null when it does not exist. */
export async function readIfPresent(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

// Through a temporary file, so an interrupted run never leaves a half-written results file.
export async function writeAtomically(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, path);
}

/** Where a benchmark writes: its raw figures as JSON, and the Markdown results file it has a section of. */
export interface ResultPaths {
  readonly markdown: string;
  readonly json: string;
}

/** bench/RESULTS.md and bench/results/<name>.json. */
export function resultPaths(name: string): ResultPaths {
  return { markdown: join(BENCH_DIR, 'RESULTS.md'), json: join(BENCH_DIR, 'results', `${name}.json`) };
}

/**
 * Writes `raw` as JSON to `paths.json` and `section` between the markers of section `name` in
 * `paths.markdown` (created if absent, everything outside the markers kept).
 */
export async function writeResults(name: string, raw: unknown, section: string, paths: ResultPaths): Promise<void> {
  await writeAtomically(paths.json, `${JSON.stringify(raw, null, 2)}\n`);
  const document = await readIfPresent(paths.markdown);
  await writeAtomically(paths.markdown, replaceSection(document, name, section));
}

/** What every benchmark's run is told. */
export interface RunOptions {
  /** Few samples, for a smoke run. */
  readonly quick: boolean;
  /** Update bench/results/<name>.json and bench/RESULTS.md. */
  readonly write: boolean;
  /** The command line recorded with the results. */
  readonly command: string;
}

/** What the results need to know of one benchmark's report: its name, its goals and its section. */
export interface ReportKind<R> {
  /** The section's name in RESULTS.md, and the JSON file's: `crypto` → bench/results/crypto.json. */
  readonly name: string;
  readonly evaluate: (report: R) => Goal[];
  /** The body of the section (without markers). */
  readonly render: (report: R, goals: readonly Goal[]) => string;
}

/**
 * Writes `report` with its goals as JSON and its section of the Markdown (bench/results/<name>.json
 * and bench/RESULTS.md unless `paths` says otherwise). Returns the goals.
 */
export async function writeReport<R extends object>(kind: ReportKind<R>, report: R, paths: ResultPaths = resultPaths(kind.name)): Promise<Goal[]> {
  const goals = kind.evaluate(report);
  await writeResults(kind.name, { ...report, goals }, kind.render(report, goals), paths);
  return goals;
}

/** Prints a run's goals, then writes its results when `write` is set, or says they were left alone. */
export async function publishReport<R extends object>(
  kind: ReportKind<R>,
  report: R,
  options: { readonly write: boolean; readonly log: (text: string) => void; readonly paths?: ResultPaths },
): Promise<void> {
  const { log } = options;
  printGoals(kind.evaluate(report), log);
  if (options.write) {
    const paths = options.paths ?? resultPaths(kind.name);
    await writeReport(kind, report, paths);
    log(`\nwrote ${paths.json} and the ${kind.name} section of ${paths.markdown}`);
  } else {
    log(`\nquick run: bench/RESULTS.md and bench/results/${kind.name}.json left as they were (add --write to update them)`);
  }
}

/** Prints a line on standard output: the progress and tables of a run on Node. */
export function printLine(text: string): void {
  process.stdout.write(`${text}\n`);
}
