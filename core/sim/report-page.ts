/**
 * `mesh sim report`: a run's report (`mesh sim --json`) as a Markdown page beside three SVG plots,
 * the propagation CDF, blocks and orphans over time, and bytes per node per second by topic
 * (docs/sim.md "The report page"). The same report gives the same bytes.
 */
import type { Quantiles, SimReport } from './run.ts';
import { barPlot, linePlot } from './svg-plot.ts';

/** The page and the plots it shows, by file name. */
export interface ReportPage {
  readonly markdown: string;
  readonly files: Readonly<Record<string, string>>;
}

const PLOTS = { propagation: 'propagation.svg', forks: 'forks.svg', bytes: 'bytes.svg' } as const;

const ms = (q: Quantiles): string => [q.p50, q.p90, q.p99].map((v) => (v === null ? '–' : `${v}`)).join(' / ');

function cdf(values: readonly number[]): [number, number][] {
  return values.map((v, p) => [v, p / 100]);
}

export function reportPage(report: SimReport): ReportPage {
  const o = report.options;
  const f = report.figures;
  const s = report.series;
  const propagation = linePlot({
    title: 'Block propagation: share of blocks within a time',
    x: 'ms from the first honest node (log)',
    y: 'share of blocks',
    logX: true,
    lines: [
      { name: 'to 50 % of nodes', points: cdf(s.propagationCdfMs.to50) },
      { name: 'to 90 %', points: cdf(s.propagationCdfMs.to90) },
      { name: 'to 99 %', points: cdf(s.propagationCdfMs.to99) },
    ],
  });
  const forks = linePlot({
    title: 'Blocks and orphans per simulated minute',
    x: 'minute',
    y: 'blocks',
    lines: [
      { name: 'blocks', points: s.blocksPerMinute.map((n, m) => [m, n]) },
      { name: 'orphans', points: s.orphansPerMinute.map((n, m) => [m, n]) },
    ],
  });
  const bytes = barPlot({
    title: 'Bytes per node per second, by topic and protocol',
    unit: 'B/s',
    bars: Object.entries(f.bytesPerNodePerSec)
      .filter(([, v]) => v > 0)
      .sort(([, a], [, b]) => b - a),
  });

  const adversaries = o.adversaries.map((a) => `${a.kind}:${a.count}`).join(', ') || 'none';
  const partitions = o.partitions.map((p) => `${p.atMs / 1000} s for ${p.forMs / 1000} s, ${p.share} of the nodes`).join('; ') || 'none';
  const lines: string[] = [
    `# mesh sim: ${o.nodes} nodes, ${o.durationMs / 60_000} min, seed ${o.seed}`,
    '',
    `Latency ${o.latency}, ${o.producers} producers, churn ${o.churnPerHour} an hour, partitions: ${partitions}, adversaries: ${adversaries}. ` +
      `Workload per second: ${o.transfersPerSec} transfers, ${o.messagesPerSec} messages, ${o.channelsPerSec} channels, ${o.jobsPerSec} jobs.`,
    '',
    '## Invariants',
    '',
    '| invariant | checks | verdict |',
    '| --- | ---: | --- |',
    ...report.invariants.map(
      (i) =>
        `| \`${i.name}\` | ${i.checks} | ${i.checks === 0 ? 'not checked' : i.held ? 'held' : `**broke** at ${i.broke!.atMs} ms: ${i.broke!.detail.replace(/\|/g, '\\|')}`} |`,
    ),
    '',
    '## Blocks',
    '',
    `${f.blocks} blocks, tip height ${f.tipHeight}; ${f.forksPerHour} forks and ${f.orphansPerHour} orphans an hour.`,
    '',
    '| to reach | p50 / p90 / p99 over blocks (ms) |',
    '| --- | --- |',
    `| 50 % of honest nodes | ${ms(f.propagationMs.to50)} |`,
    `| 90 % | ${ms(f.propagationMs.to90)} |`,
    `| 99 % | ${ms(f.propagationMs.to99)} (${f.propagationMs.blocksShort} blocks never did) |`,
    '',
    `![Block propagation CDF](${PLOTS.propagation})`,
    '',
    `![Blocks and orphans per minute](${PLOTS.forks})`,
    '',
    '## Traffic',
    '',
    `![Bytes per node per second by topic](${PLOTS.bytes})`,
    '',
    '| topic or protocol | bytes per node per second |',
    '| --- | ---: |',
    ...Object.entries(f.bytesPerNodePerSec).map(([kind, v]) => `| \`${kind}\` | ${v} |`),
    '',
    '## Workload',
    '',
    `- transfers: ${f.transfers.included} of ${f.transfers.submitted} included; submission to inclusion p50 / p90 / p99 ${ms(f.transfers.toIncludedMs)} ms`,
    `- messages: ${f.messages.delivered} of ${f.messages.sent} delivered; p50 / p90 / p99 ${ms(f.messages.latencyMs)} ms`,
    `- channels: ${f.channels.opened} opened, ${f.channels.payments} receipts, ${f.channels.closed} closed`,
    `- jobs: ${f.jobs.ran} of ${f.jobs.bid} ran; bid to running p50 / p90 / p99 ${ms(f.jobs.toRunningMs)} ms`,
    `- heals: ${f.healMs.map((h) => (h === null ? 'not within the run' : `${h} ms`)).join(', ') || 'no partition'}`,
    `- churn: ${f.churn.left} left, ${f.churn.rejoined} rejoined`,
    `- private miners: ${f.adversaries.privateMiners.mined} mined, ${f.adversaries.privateMiners.released} released, ${f.adversaries.privateMiners.onFinalChain} on the final chain`,
    `- spam: ${f.adversaries.spam.sent} sent, ${f.adversaries.spam.included} included`,
    '',
  ];
  return { markdown: lines.join('\n'), files: { [PLOTS.propagation]: propagation, [PLOTS.forks]: forks, [PLOTS.bytes]: bytes } };
}
