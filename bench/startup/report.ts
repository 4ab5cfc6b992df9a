/**
 * The startup benchmark's report: its goals judged on a run's figures and the Markdown section of
 * bench/RESULTS.md. Pure functions of the results; node.ts writes the files.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import type { CommandTiming } from './cases.ts';

export interface StartupReport extends RunInfo {
  readonly node: { readonly version: string };
  /** Counted runs of each command. */
  readonly runs: number;
  readonly timings: readonly CommandTiming[];
  /** The first `mesh --help` of the run, before any compiled code was kept. */
  readonly coldHelpMs: number | null;
}

export const HELP = 'mesh --help';
export const STATUS = 'mesh status';

/** The goals: the command on the PATH answers within these (medians). */
export const HELP_GOAL_MS = 300;
export const STATUS_GOAL_MS = 500;

function goal(report: StartupReport, name: string, limitMs: number, what: string): Goal {
  const title = `\`${name}\` on the PATH ${what} within ${limitMs} ms (median)`;
  const t = report.timings.find((x) => x.name === name);
  const base = report.timings.find((x) => x.role === 'baseline');
  if (t === undefined || base === undefined) return unmeasured(title);
  return {
    title,
    met: t.medianMs <= limitMs,
    detail: `${t.medianMs.toFixed(0)} ms, ${t.ratio.toFixed(2)}× a bare \`${base.name}\` (${base.medianMs.toFixed(0)} ms) in the same rounds`,
  };
}

export function evaluateStartupGoals(report: StartupReport): Goal[] {
  return [goal(report, HELP, HELP_GOAL_MS, 'prints its help'), goal(report, STATUS, STATUS_GOAL_MS, "prints a running node's status")];
}

/** The body of the startup section (without markers). */
export function renderStartupSection(report: StartupReport, goals: readonly Goal[] = evaluateStartupGoals(report)): string {
  const parts: string[] = ['## Command-line startup'];
  parts.push(measuredLine(report, `Node ${report.node.version}`, 'runs'));
  parts.push(
    '`mesh` as `npm link` puts it on the PATH (a link to `bin/mesh`, which runs `bin/mesh.js` under the Node that `npm ci` ' +
      'installs), each command timed from spawn to exit as a shell runs it, after one warm-up run, in interleaved rounds with a ' +
      `bare \`node -e 0\` of the same Node; ${report.runs} counted runs each. \`mesh status\` asks a devnet node started for the run. ` +
      '**ratio** = median ÷ the bare Node start.',
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  const rows = report.timings.map((t) => [
    t.role === 'baseline' ? `· \`${t.name}\`` : `▸ \`${t.name}\``,
    `${t.medianMs.toFixed(0)} ms`,
    `${Math.min(...t.runsMs).toFixed(0)}–${Math.max(...t.runsMs).toFixed(0)} ms`,
    t.role === 'baseline' ? '1 (ref)' : t.ratio.toFixed(2),
  ]);
  parts.push(markdownTable(['command', 'median', 'range', 'ratio'], rows, [false, true, true, true]));
  if (report.coldHelpMs !== null) {
    parts.push(
      `The run's first \`mesh --help\`, before Node had kept any compiled code (\`module.enableCompileCache\` in bin/mesh.js), ` +
        `took ${report.coldHelpMs.toFixed(0)} ms.`,
    );
  }
  return parts.join('\n\n');
}

export const STARTUP_REPORT: ReportKind<StartupReport> = {
  name: 'startup',
  evaluate: evaluateStartupGoals,
  render: renderStartupSection,
};
