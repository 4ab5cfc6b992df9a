/**
 * `mesh bench nat`, on Node and as root: real nodes in the NAT lab reaching each other by NodeId
 * after joining, and the first message to a node never met next to the second (cases.ts); writes
 * bench/results/nat.json and the nat section of bench/RESULTS.md.
 */
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { integer } from '../../host-node/cli/values.ts';
import { stopAll } from '../../test/mesh-process.ts';
import { createNatLab, DEFAULT_NATS } from '../../test/nat-lab.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { type FirstMessageRound, measureFirstMessages, measureReach, type ReachRound } from './cases.ts';
import { NAT_REPORT, type NatReport } from './report.ts';

const natOptions = {
  ...runOptions,
  rounds: option({ value: 'N', description: 'rounds of each measurement, each with fresh NATed nodes', parse: integer(1, 50), shown: '5; 1 with --quick' }),
  'hosts-per-nat': option({ value: 'N', description: 'hosts behind each of the three routers', parse: integer(1, 8), default: 1 }),
};

export interface NatBenchOptions {
  readonly quick: boolean;
  readonly write: boolean;
  readonly rounds: number;
  readonly hostsPerNat: number;
}

function natBenchOptions(values: OptionValues<typeof natOptions>): NatBenchOptions {
  return { ...runFlags(values), rounds: values.rounds ?? (values.quick ? 1 : 5), hostsPerNat: values['hosts-per-nat'] };
}

export async function runNatBenchWith(options: NatBenchOptions, commandText: string): Promise<number> {
  const log = printLine;
  const started = Date.now();
  const source = await sourceState();
  log('mesh bench nat: nodes behind real NATs reaching each other by NodeId through a relay');
  const nats = DEFAULT_NATS!.map((n) => ({ kind: n.kind, hosts: options.hostsPerNat }));
  const lab = await createNatLab({ nats });
  const reach: ReachRound[] = [];
  const firstMessages: FirstMessageRound[] = [];
  try {
    const relay = await lab.startNode(lab.public[0]!);
    for (let round = 1; round <= options.rounds; round++) {
      const r = await measureReach(lab, relay);
      reach.push(r);
      const slowest = Math.max(...r.pairs.map((p) => p.ms ?? Number.POSITIVE_INFINITY));
      log(`  round ${round}: ${r.pairs.filter((p) => p.ms !== null).length}/${r.pairs.length} pairs reached, the slowest in ${(slowest / 1000).toFixed(2)} s`);
      for (const p of r.pairs) if (p.ms === null) log(`    ${p.from} never reached ${p.to}: ${p.error}`);
      const f = await measureFirstMessages(lab, relay);
      firstMessages.push(f);
      log(`  round ${round}: first messages ${f.firstMs.map((ms) => `${Math.round(ms)} ms`).join(', ')}`);
    }
  } finally {
    await stopAll();
    await lab.close();
  }
  const report: NatReport = {
    command: commandText,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    nats,
    iptables: lab.iptables,
    reach,
    firstMessages,
    ...(source ? { source } : {}),
    elapsedMs: Date.now() - started,
  };
  await publishReport(NAT_REPORT, report, { write: options.write, log });
  return 0;
}

export const natBenchCommand = command({
  description:
    'Real nodes behind real NATs (the NAT lab: network namespaces and iptables; needs root): the share of node pairs that reach each other by NodeId within 10 s of joining, and the first message to a node never met next to the second (Node only).',
  options: natOptions,
  run: (input) => runNatBenchWith(natBenchOptions(input.options), commandLine(input)),
});
