/** Writes the crypto benchmark's results: raw JSON, and its section of bench/RESULTS.md. */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { evaluateGoals, renderCryptoSection, replaceSection, type CryptoReport, type Goal } from '../crypto/report.ts';

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

/**
 * Writes `raw` as JSON to `paths.json` and `section` between the markers of section `name` in
 * `paths.markdown` (created if absent, everything outside the markers kept).
 */
export async function writeResults(name: string, raw: unknown, section: string, paths: ResultPaths): Promise<void> {
  await writeAtomically(paths.json, `${JSON.stringify(raw, null, 2)}\n`);
  const document = await readIfPresent(paths.markdown);
  await writeAtomically(paths.markdown, replaceSection(document, name, section));
}

/**
 * Writes `report` as JSON to `paths.json` and its section between the crypto markers of
 * `paths.markdown` (created if absent, everything outside the markers kept). Returns the goals.
 */
export async function writeCryptoReport(report: CryptoReport, paths: ResultPaths): Promise<Goal[]> {
  const goals = evaluateGoals(report);
  await writeResults('crypto', { ...report, goals }, renderCryptoSection(report, goals), paths);
  return goals;
}
