/**
 * The coordinates benchmark's report: its goals judged on a run's figures and the Markdown section
 * of bench/RESULTS.md. Pure functions of the results; node.ts writes the files.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { median } from '../lib/timing.ts';
import { type CoordsCase, type DatasetResult, PAPER_MEDIAN_ERROR, SERF_VARIANT, type VariantResult } from './cases.ts';

export interface CoordsReport extends RunInfo {
  readonly node: { readonly version: string; readonly v8: string };
  readonly result: CoordsCase | null;
}

const percent = (x: number): string => `${(x * 100).toFixed(1)} %`;

// Above this median difference between a pair's two directions, the report shows what it costs.
const ASYMMETRIC = 0.05;

/** A variant's figures after `round`, over its runs: the median of each statistic and the medians' range. */
export function summarise(v: VariantResult, round: number): { median: number; p90: number; low: number; high: number } {
  const at = v.runs.map((run) => run.find((c) => c.round === round)!);
  const medians = at.map((c) => c.median);
  return { median: median(medians), p90: median(at.map((c) => c.p90)), low: Math.min(...medians), high: Math.max(...medians) };
}

function range(s: { low: number; high: number }, runs: number): string {
  return runs > 1 ? ` (${runs} runs: ${percent(s.low)} to ${percent(s.high)})` : '';
}

function datasetGoal(report: CoordsReport, name: string): Goal {
  const title =
    `${name}: Vivaldi with Serf's defaults predicts the measured RTTs with a median relative error below ` +
    `${percent(PAPER_MEDIAN_ERROR)}, the Vivaldi paper's figure (2-D + height, 1,740 hosts)`;
  const c = report.result;
  const d = c?.datasets.find((x) => x.name === name);
  const serf = d?.variants.find((v) => v.label === SERF_VARIANT);
  if (!c || !d || !serf) return unmeasured(title);
  const s = summarise(serf, c.rounds);
  const others = d.variants
    .filter((v) => v !== serf)
    .map((v) => `; ${v.dimensionality}-D + height ${percent(summarise(v, c.rounds).median)}`)
    .join('');
  return {
    title,
    met: s.median < PAPER_MEDIAN_ERROR,
    detail:
      `${percent(s.median)}${range(s, serf.runs.length)}, 90th percentile ${percent(s.p90)}, after ${c.rounds} rounds of ` +
      `${c.peersPerRound} peers each; the baseline (every pair predicted by the median RTT, ${d.baseline.predictionMs.toFixed(0)} ms) ` +
      `${percent(d.baseline.median)}, 90th percentile ${percent(d.baseline.p90)}${others}`,
  };
}

/** Judges the goal on each matrix. */
export function evaluateCoordsGoals(report: CoordsReport): Goal[] {
  return ['PlanetLab', 'Seattle'].map((name) => datasetGoal(report, name));
}

function datasetTable(c: CoordsCase, d: DatasetResult): string {
  const early = c.checkpoints.filter((r) => r !== c.rounds);
  const rows = d.variants.map((v) => {
    const final = summarise(v, c.rounds);
    return [
      `▸ ${v.label}`,
      ...early.map((r) => percent(summarise(v, r).median)),
      `**${percent(final.median)}**${v.runs.length > 1 ? ` (${percent(final.low)}–${percent(final.high)})` : ''}`,
      percent(final.p90),
    ];
  });
  const constant = (x: number): string[] => early.map(() => percent(x));
  rows.push([
    `· baseline: every pair predicted by the median RTT, ${d.baseline.predictionMs.toFixed(0)} ms`,
    ...constant(d.baseline.median),
    `**${percent(d.baseline.median)}**`,
    percent(d.baseline.p90),
  ]);
  if (d.asymmetry > ASYMMETRIC) {
    rows.push([
      "· reference, not a predictor: each entry by the geometric mean of its pair's two measured directions",
      ...early.map(() => ''),
      percent(d.symmetric.median),
      percent(d.symmetric.p90),
    ]);
  }
  const header = ['prediction', ...early.map((r) => `median after ${r} rounds`), `median after ${c.rounds}`, '90th percentile'];
  return markdownTable(header, rows, [false, ...early.map(() => true), true, true]);
}

/** The body of the coordinates section (without markers). */
export function renderCoordsSection(report: CoordsReport, goals: readonly Goal[] = evaluateCoordsGoals(report)): string {
  const parts: string[] = ['## Network coordinates'];
  parts.push(measuredLine(report, `Node ${report.node.version} (V8 ${report.node.v8})`, 'rounds'));
  const c = report.result;
  parts.push(
    'Real RTT matrices (NetLatency-Data, MIT, read from `../shared/data/netlatency/`) replayed through `core/netgraph/vivaldi.ts` ' +
      'as the mesh would run it: every host starts at the origin, and in each round measures ' +
      (c ? `${c.peersPerRound} peers` : 'a few peers') +
      " drawn at random among those the matrix has a figure for, observing each with that peer's current coordinate. " +
      'After each listed round, every measured entry (i, j) is predicted from the two coordinates; the figure is the ' +
      '**relative error** |predicted − measured| ÷ measured over all of them. Entries of 0 ' +
      '(the diagonal, failed probes) are unmeasured: never sampled, never scored. The baseline predicts every entry by the ' +
      'median of the matrix. ' +
      (c && c.seeds.length > 1 ? `Each variant runs once per seed (${c.seeds.join(', ')}); a figure is the median over the runs, with their range. ` : '') +
      'Deterministic: the same seeds give the same figures on any machine; only the time taken varies.',
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  if (c) {
    for (const d of c.datasets) {
      parts.push(`### ${d.name}`);
      parts.push(
        `${d.hosts} ${d.about}; ${d.measured.toLocaleString('en-US')} measured entries, ${d.unmeasured.toLocaleString('en-US')} unmeasured. ` +
          (d.asymmetry > ASYMMETRIC
            ? `The two directions of a pair differ by a median ${percent(d.asymmetry)} of the entry: a distance, the same both ` +
              'ways, cannot follow that whatever the coordinates, as the reference row shows (it knows both directions and ' +
              'predicts their geometric mean).'
            : `The two directions of a pair differ by a median ${percent(d.asymmetry)} of the entry.`) +
          ` Of its ${d.triangles.triangles.toLocaleString('en-US')} triangles of hosts (each pair taken as the geometric mean of ` +
          `its two directions), ${percent(d.triangles.violating)} break the triangle inequality, and ${percent(d.triangles.beyond)} ` +
          `by so much that any distance errs by more than ${percent(d.triangles.error)} on at least one of their sides.`,
      );
      parts.push(datasetTable(c, d));
    }
  }
  return parts.join('\n\n');
}

export const COORDS_REPORT: ReportKind<CoordsReport> = { name: 'coords', evaluate: evaluateCoordsGoals, render: renderCoordsSection };
