/**
 * `mesh sim report RUN.json`: the report of a run (`mesh sim --json > RUN.json`) as a Markdown
 * page with SVG plots, the propagation CDF, blocks and orphans over time, and bytes per topic
 * (core/sim/report-page.ts, docs/sim.md "The report page").
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { reportPage } from '../../core/sim/report-page.ts';
import type { SimReport } from '../../core/sim/run.ts';
import { command, EXIT, option, positional, UsageError } from './command.ts';

/** The page's file in the output directory. */
export const PAGE = 'report.md';

/** A report as `mesh sim --json` prints it; anything else is refused, naming what is missing. */
export function parseSimReport(text: string, name: string): SimReport {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`${name} is not JSON: write it with mesh sim --json`);
  }
  const report = value as Partial<SimReport> | null;
  for (const field of ['options', 'invariants', 'figures', 'series'] as const) {
    if (typeof report !== 'object' || report === null || typeof report[field] !== 'object' || report[field] === null) {
      throw new UsageError(`${name} has no ${field}: write it with mesh sim --json (of this version)`);
    }
  }
  return report as SimReport;
}

/** Writes the page and its plots into `dir`; returns the page's path. */
export async function writeReportPage(report: SimReport, dir: string): Promise<string> {
  const page = reportPage(report);
  await mkdir(dir, { recursive: true });
  for (const [file, svg] of Object.entries(page.files)) await writeFile(join(dir, file), svg);
  const path = join(dir, PAGE);
  await writeFile(path, page.markdown);
  return path;
}

export const simReportCommand = command({
  description: `Writes the report of a mesh sim run (its --json output) as a Markdown page, ${PAGE}, with SVG plots beside it: the block propagation CDF, blocks and orphans per minute, and bytes per node per second by topic.`,
  positionals: { run: positional('run', 'the JSON report of a run (mesh sim --json > run.json)') },
  options: { out: option({ value: 'DIR', description: 'the directory to write the page and its plots into', default: 'sim-report' }) },
  run: async ({ args, options }, io) => {
    let text: string;
    try {
      text = await readFile(args.run, 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read ${args.run}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
    const path = await writeReportPage(parseSimReport(text, args.run), options.out);
    io.out(`${path}\n`);
    return EXIT.done;
  },
});
