/**
 * What a run records about where it ran: the machine, the code (commit and changed files), and the
 * sentence of the Markdown section that says both. Node only: the Node side of every benchmark
 * describes the run, whatever runtimes it measured.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { cpus, platform, release } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root folder. */
export const REPO_ROOT = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

/** Runs a program and gives its output; rejects when it cannot start or exits non-zero. */
export type RunFile = (file: string, args: readonly string[], options: { timeout: number }) => Promise<{ stdout: string; stderr: string }>;

export const runFile: RunFile = (file, args, options) =>
  new Promise((resolve, reject) => {
    execFile(file, [...args], { timeout: options.timeout, encoding: 'utf8' }, (error, stdout, stderr) => (error ? reject(error) : resolve({ stdout, stderr })));
  });

export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly os: string;
}

/** The code measured: the commit, and the files under core/ and host-node/ changed since. */
export interface SourceState {
  readonly commit: string;
  readonly modified: readonly string[];
}

/** What every benchmark report records about its run. */
export interface RunInfo {
  readonly command: string;
  /** ISO 8601. */
  readonly date: string;
  readonly quick: boolean;
  readonly machine: Machine;
  readonly source?: SourceState;
  readonly elapsedMs: number;
}

/** The commit and the changed files of core/ and host-node/, read without touching the repository. */
export async function sourceState(): Promise<SourceState | undefined> {
  try {
    const git = (args: string[]) => runFile('git', ['--no-optional-locks', '-C', REPO_ROOT, ...args], { timeout: 10_000 });
    const commit = (await git(['rev-parse', '--short', 'HEAD'])).stdout.trim();
    const status = (await git(['status', '--porcelain', '--', 'core', 'host-node'])).stdout;
    const modified = status
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => line.slice(3));
    return { commit, modified };
  } catch {
    return undefined; // not a git checkout, or no git
  }
}

/** The CPU's model name, from /proc/cpuinfo on Linux. */
export async function cpuModel(): Promise<string> {
  try {
    const text = await readFile('/proc/cpuinfo', 'utf8');
    const match = /^model name\s*:\s*(.+)$/m.exec(text);
    if (match) return match[1]!.trim();
  } catch {
    // not Linux: fall back to what Node reports
  }
  return cpus()[0]?.model ?? 'unknown';
}

/** This machine: CPU model, core count, operating system and kernel. */
export async function describeMachine(): Promise<Machine> {
  return { cpu: await cpuModel(), cores: cpus().length, os: `${platform()} ${release()}` };
}

/**
 * The sentence saying when, by which command, on what machine and runtimes, and on which code a
 * run was measured; `few` says what a quick run takes few of.
 */
export function measuredLine(report: RunInfo, runtimes: string, few = 'samples'): string {
  return (
    `Measured ${report.date.slice(0, 16).replace('T', ' ')} UTC by \`${report.command}\`` +
    `${report.quick ? ` (quick: few ${few}, figures rough)` : ''} on ${report.machine.cpu}, ` +
    `${report.machine.cores} cores, ${report.machine.os}; ${runtimes}; ` +
    `${(report.elapsedMs / 1000).toFixed(0)} s in all.` +
    (report.source
      ? ` Code measured: commit ${report.source.commit}` +
        (report.source.modified.length > 0 ? ` with uncommitted changes to ${report.source.modified.map((f) => `\`${f}\``).join(', ')}.` : '.')
      : '')
  );
}
