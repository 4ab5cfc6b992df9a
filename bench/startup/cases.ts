/**
 * The startup benchmark's measurement: whole commands timed from spawn to exit, as a shell runs
 * them, each next to a baseline measured in the same rounds.
 */
import { spawn } from 'node:child_process';
import { median } from '../lib/timing.ts';

/** A command line to time: its program and arguments, and the environment it runs with. */
export interface CommandCase {
  /** What the table shows: `mesh --help`. */
  readonly name: string;
  readonly role: 'command' | 'baseline';
  readonly file: string;
  readonly args: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
}

/** What one command measured. */
export interface CommandTiming {
  readonly name: string;
  readonly role: 'command' | 'baseline';
  /** Spawn to exit of each counted run, in ms, in the order taken. */
  readonly runsMs: number[];
  readonly medianMs: number;
  /** medianMs ÷ the baseline's. */
  readonly ratio: number;
}

/** Runs `c` once and resolves to its wall time in ms; rejects when it exits other than 0. */
export async function timeOnce(c: CommandCase): Promise<number> {
  const started = performance.now();
  const child = spawn(c.file, [...c.args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...c.env } });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`${c.name} exited with ${code}: ${stderr.trim()}`);
  return ms;
}

/**
 * Times every case `runs` times in interleaved rounds (A B C A B C …) after one warm-up run each,
 * so a slow patch of a shared machine hits all of them alike. The first case of role `baseline`
 * is the reference of every ratio.
 */
export async function timeCommands(cases: readonly CommandCase[], runs: number, log: (line: string) => void = () => {}): Promise<CommandTiming[]> {
  for (const c of cases) await timeOnce(c);
  const runsMs = cases.map((): number[] => []);
  for (let round = 0; round < runs; round++) {
    for (const [i, c] of cases.entries()) runsMs[i]!.push(await timeOnce(c));
  }
  const medians = runsMs.map((r) => median(r));
  const reference = medians[cases.findIndex((c) => c.role === 'baseline')] ?? Number.NaN;
  const timings = cases.map((c, i) => ({ name: c.name, role: c.role, runsMs: runsMs[i]!, medianMs: medians[i]!, ratio: medians[i]! / reference }));
  for (const t of timings) log(`  ${t.name.padEnd(34)} median ${t.medianMs.toFixed(0).padStart(5)} ms  (${t.ratio.toFixed(2)}× the baseline)`);
  return timings;
}
