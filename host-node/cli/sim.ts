/**
 * `mesh sim`: many full nodes in this one process on simulated time (core/sim, docs/sim.md). The
 * report goes to standard output, the same bytes for the same options and seed; the wall time
 * and memory it took go to standard error, being this machine's and not the simulation's. It exits
 * 1 when an invariant broke.
 */

import { planetLabTable, type RttTable } from '../../core/sim/latency.ts';
import { ADVERSARY_KINDS, type AdversaryKind, DEFAULT_SIM_OPTIONS, type Partition, runSim, type SimOptions, type SimReport } from '../../core/sim/run.ts';
import { opensslEd25519Backend } from '../native-crypto.ts';
import { loadSharedData } from '../shared-data.ts';
import { command, EXIT, entry, flag, list, option, type Parser, UsageError } from './command.ts';
import { decimal, integer, oneOf } from './values.ts';

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `90s`, `10m`, `1h`, `250ms`: a span of simulated time, in ms. */
export const duration: Parser<number> = (text, name) => {
  const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)$/.exec(text);
  const ms = match ? Math.round(Number(match[1]) * UNITS[match[2]!]!) : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms <= 0) throw new UsageError(`${name} takes a span such as 90s, 10m or 1h, not ${JSON.stringify(text)}`);
  return ms;
};

/** A span in the units `duration` reads: `90s`, `6m`. */
function formatSpan(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return ms % 1_000 === 0 ? `${ms / 1_000}s` : `${ms}ms`;
}

/** `AT:FOR:SHARE`: `5m:10m:0.33` parts a third of the nodes from the rest at 5 min, for 10 min. */
export const partition: Parser<Partition> = (text, name) => {
  const [at, span, share, extra] = text.split(':');
  if (at === undefined || span === undefined || share === undefined || extra !== undefined) {
    throw new UsageError(`${name} takes AT:FOR:SHARE (5m:10m:0.33), not ${JSON.stringify(text)}`);
  }
  return { atMs: duration(at, name), forMs: duration(span, name), share: decimal(0, 0.5)(share, name) };
};

/** `KIND:COUNT`: `dropper:3`. */
export const adversary: Parser<{ kind: AdversaryKind; count: number }> = (text, name) => {
  const [kind, count, extra] = text.split(':');
  if (kind === undefined || count === undefined || extra !== undefined)
    throw new UsageError(`${name} takes KIND:COUNT (dropper:3), not ${JSON.stringify(text)}`);
  return { kind: oneOf(ADVERSARY_KINDS)(kind, name), count: integer(1, 10_000)(count, name) };
};

const d = DEFAULT_SIM_OPTIONS;

/** The RTTs between 490 PlanetLab hosts that `--latency planetlab` maps the nodes onto. */
export async function planetLabLatency(): Promise<RttTable> {
  return planetLabTable(new TextDecoder().decode(await loadSharedData('netlatency/PlanetLabData_1')));
}

/** What a run on this host takes: its cheapest real task between instants, and OpenSSL's Ed25519 on this thread. */
export async function hostSimPorts(): Promise<Required<Pick<SimOptions, 'turn' | 'ed25519'>>> {
  return { turn: () => new Promise((resolve) => setImmediate(resolve)), ed25519: await opensslEd25519Backend() };
}

/** The report for people: the options, each invariant, then the figures. */
export function formatReport(report: SimReport): string {
  const lines: string[] = [];
  const o = report.options;
  lines.push(`mesh sim: ${o.nodes} nodes, ${o.durationMs / 60_000} min, seed ${o.seed}, latency ${o.latency}`);
  lines.push('', 'invariants');
  for (const i of report.invariants) {
    const verdict = i.checks === 0 ? 'not checked' : i.held ? 'held' : `BROKE at ${i.broke!.atMs} ms (seed ${i.broke!.seed}): ${i.broke!.detail}`;
    lines.push(`  ${i.name.padEnd(34)}${String(i.checks).padStart(8)} checks  ${verdict}`);
  }
  const f = report.figures;
  const q = (x: { p50: number | null; p90: number | null; p99: number | null }): string => `p50 ${x.p50 ?? '-'} ms, p99 ${x.p99 ?? '-'} ms`;
  lines.push('', 'figures');
  lines.push(`  blocks ${f.blocks}, tip height ${f.tipHeight}, forks ${f.forksPerHour}/h, orphans ${f.orphansPerHour}/h`);
  lines.push(`  block to 50 % of honest nodes: ${q(f.propagationMs.to50)}`);
  lines.push(`  block to 90 %: ${q(f.propagationMs.to90)}`);
  lines.push(`  block to 99 %: ${q(f.propagationMs.to99)} (${f.propagationMs.blocksShort} blocks never reached 99 %)`);
  lines.push(`  messages: ${f.messages.delivered} of ${f.messages.sent} delivered, ${q(f.messages.latencyMs)}`);
  lines.push(`  transfers: ${f.transfers.included} of ${f.transfers.submitted} included, submission to inclusion ${q(f.transfers.toIncludedMs)}`);
  const c = f.channels;
  lines.push(`  channels: ${c.opened} opened, ${c.payments} receipts (${c.delivered} delivered), ${c.closed} closed`);
  lines.push(`  jobs: ${f.jobs.bid} bid, ${f.jobs.ran} ran; bid to running ${q(f.jobs.toRunningMs)}`);
  lines.push(`  heal: ${f.healMs.map((ms) => (ms === null ? 'not within the run' : `${ms} ms`)).join(', ') || 'no partition'}`);
  const a = f.adversaries;
  if (o.adversaries.some((x) => x.kind === 'private-miner')) {
    const p = a.privateMiners;
    lines.push(`  private miners: ${p.mined} blocks mined, ${p.released} released in ${p.releases} releases, ${p.onFinalChain} on the final chain`);
  }
  if (o.adversaries.some((x) => x.kind === 'spammer')) lines.push(`  spam: ${a.spam.sent} transactions sent, ${a.spam.included} included`);
  lines.push(`  churn: ${f.churn.left} left, ${f.churn.rejoined} rejoined${f.churn.failed.map((line) => `\n    ${line}`).join('')}`);
  lines.push('  bytes per node per second:');
  for (const [kind, bytes] of Object.entries(f.bytesPerNodePerSec)) lines.push(`    ${kind.padEnd(40)}${String(bytes).padStart(10)}`);
  return `${lines.join('\n')}\n`;
}

export const simCommand = command({
  description:
    'Runs full mesh nodes (every service of mesh node, on memory stores) in this process on simulated time, over a simulated network, and checks the invariants as they run. The same options and seed print the same report, byte for byte (docs/sim.md).',
  commands: [
    entry(
      'report',
      'the report of a run (--json) as a Markdown page with SVG plots: propagation CDF, forks over time, bytes per topic',
      async () => (await import('./sim-report.ts')).simReportCommand,
    ),
  ],
  options: {
    nodes: option({ value: 'N', description: 'honest nodes', default: d.nodes, parse: integer(2, 100_000) }),
    duration: option({ value: 'SPAN', description: 'simulated time: 90s, 10m, 1h', default: d.durationMs, shown: '10m', parse: duration }),
    seed: option({ value: 'S', description: 'the seed every chance is drawn from', default: d.seed }),
    latency: option({
      value: 'MODEL',
      description: 'planetlab (RTTs between 490 PlanetLab hosts) or none',
      default: 'planetlab' as 'planetlab' | 'none',
      parse: oneOf(['planetlab', 'none']),
    }),
    churn: option({
      value: 'RATE',
      description: 'share of the nodes that leave and rejoin per hour (0.2: a fifth)',
      default: d.churnPerHour,
      parse: decimal(0, 100),
    }),
    partition: list({ value: 'AT:FOR:SHARE', description: 'part SHARE of the nodes from the rest at AT for FOR (5m:10m:0.33)', parse: partition }),
    adversary: list({ value: 'KIND:COUNT', description: `adversaries besides the honest nodes: ${ADVERSARY_KINDS.join(', ')}`, parse: adversary }),
    producers: option({ value: 'N', description: 'honest nodes that produce blocks', default: d.producers, parse: integer(1, 100_000) }),
    loss: option({ value: 'SHARE', description: 'share of gossip frames lost', default: d.loss, parse: decimal(0, 1) }),
    uplink: option({ value: 'BYTES/S', description: "each node's uplink; 0: unbounded", default: d.uplinkBytesPerSec ?? 0, parse: integer(0) }),
    transfers: option({ value: 'PER_S', description: 'transfers per second, mesh-wide', default: d.transfersPerSec, parse: decimal(0, 10_000) }),
    messages: option({ value: 'PER_S', description: 'app messages per second, mesh-wide', default: d.messagesPerSec, parse: decimal(0, 10_000) }),
    channels: option({
      value: 'PER_S',
      description: 'payment channels opened per second, mesh-wide (each paid five times, then closed)',
      default: d.channelsPerSec,
      parse: decimal(0, 10_000),
    }),
    jobs: option({
      value: 'PER_S',
      description: 'jobs bid per second, mesh-wide (a minute on one core each)',
      default: d.jobsPerSec,
      parse: decimal(0, 10_000),
    }),
    spam: option({ value: 'PER_S', description: 'transactions each spammer adversary sends per second', default: d.spamPerSec, parse: decimal(0, 10_000) }),
    'heal-bound': option({
      value: 'SPAN',
      description: 'how soon after a heal every honest node must be on one tip',
      default: d.healBoundMs,
      shown: '30s',
      parse: duration,
    }),
    json: flag('print the report as JSON'),
  },
  run: async ({ options }, io) => {
    if (options.producers > options.nodes) throw new UsageError('--producers is at most --nodes');
    const latency = options.latency === 'planetlab' ? await planetLabLatency() : null;
    const started = performance.now();
    const heapBefore = process.memoryUsage().heapUsed;
    const report = await runSim({
      ...d,
      nodes: options.nodes,
      durationMs: options.duration,
      seed: options.seed,
      latency,
      churnPerHour: options.churn,
      partitions: options.partition,
      adversaries: options.adversary,
      producers: options.producers,
      loss: options.loss,
      uplinkBytesPerSec: options.uplink === 0 ? null : options.uplink,
      transfersPerSec: options.transfers,
      messagesPerSec: options.messages,
      channelsPerSec: options.channels,
      jobsPerSec: options.jobs,
      spamPerSec: options.spam,
      healBoundMs: options['heal-bound'],
      ...(await hostSimPorts()),
      // A long run says how far it is, on stderr (stdout is the report).
      onProgress: (simulatedMs) =>
        io.err(
          `simulated ${formatSpan(simulatedMs)} of ${formatSpan(options.duration)}: wall ${((performance.now() - started) / 1000).toFixed(0)} s, rss ${(process.memoryUsage.rss() / 2 ** 30).toFixed(2)} GiB\n`,
        ),
    });
    const wallMs = performance.now() - started;
    const memory = process.memoryUsage();
    io.out(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    io.err(
      `wall ${(wallMs / 1000).toFixed(1)} s, heap ${(memory.heapUsed / 2 ** 20).toFixed(0)} MiB (${((memory.heapUsed - heapBefore) / 1024 / options.nodes).toFixed(0)} KiB per node), rss ${(memory.rss / 2 ** 20).toFixed(0)} MiB\n`,
    );
    const broke = report.invariants.filter((i) => !i.held);
    for (const i of broke) io.err(`mesh sim: ${i.name} broke at ${i.broke!.atMs} ms (seed ${i.broke!.seed})\n`);
    return broke.length === 0 ? EXIT.done : EXIT.failed;
  },
});
