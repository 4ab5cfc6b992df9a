/**
 * The simulator in the test run (docs/sim.md): 30 full nodes for 10 simulated minutes over the
 * PlanetLab latencies, with a partition of a third of them, churn, droppers, Sybils and an
 * equivocator, keep every invariant; a private-chain miner and a spammer do not break them either; and
 * `mesh sim` prints the same bytes for the same options and seed, and other bytes for another seed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_SIM_OPTIONS, runSim } from '../core/sim/run.ts';
import { runCommand } from '../host-node/cli/run.ts';
import { planetLabLatency, simCommand } from '../host-node/cli/sim.ts';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('sim: 30 nodes, 10 minutes, a partition and churn: no invariant breaks', async () => {
  const table = await planetLabLatency();
  const report = await runSim({
    ...DEFAULT_SIM_OPTIONS,
    nodes: 30,
    durationMs: 10 * 60_000,
    seed: 'npm-test',
    latency: table,
    churnPerHour: 2,
    jobsPerSec: 0.03,
    partitions: [{ atMs: 3 * 60_000, forMs: 2 * 60_000, share: 0.33 }],
    adversaries: [
      { kind: 'dropper', count: 2 },
      { kind: 'sybil', count: 2 },
      { kind: 'equivocator', count: 1 },
    ],
    turn,
  });
  for (const invariant of report.invariants) assert.equal(invariant.held, true, `${invariant.name} broke: ${JSON.stringify(invariant.broke)}`);
  const checked = (name: string): number => report.invariants.find((i) => i.name === name)!.checks;
  const checkedNow = [
    'supply-conservation',
    'no-negative-free-balance',
    'status-identity',
    'one-tip-after-heal',
    'no-confirmed-tx-lost',
    'no-channel-paid-beyond-capacity',
    'no-equivocation-unslashed',
    'no-job-settled-twice',
  ];
  for (const name of checkedNow) {
    assert.ok(checked(name) > 0, `${name} was checked`);
  }
  const f = report.figures;
  assert.ok(f.tipHeight >= 30, `the chain grew: height ${f.tipHeight}`);
  assert.notEqual(f.healMs[0], null, 'the halves agreed on one tip after the heal');
  assert.ok(f.churn.left > 0 && f.churn.rejoined > 0, `nodes left and rejoined: ${JSON.stringify(f.churn)}`);
  assert.deepEqual(f.churn.failed, []);
  assert.ok(f.messages.delivered > 0 && f.propagationMs.to90.p50 !== null);
  assert.ok(f.jobs.ran > 0, `jobs ran: ${JSON.stringify(f.jobs)}`);
  assert.ok((f.bytesPerNodePerSec['mesh-blocks'] ?? 0) > 0);
});

test('sim: a private-chain miner and a spammer within the mempool rules break no invariant, and honest transfers still go through', async () => {
  const table = await planetLabLatency();
  const report = await runSim({
    ...DEFAULT_SIM_OPTIONS,
    nodes: 12,
    // Two honest producers beside the private miner: it holds a third of the weight, enough to lead
    // and release often; with half, it reorganises blocks six deep, as it would on any longest chain.
    producers: 2,
    durationMs: 3 * 60_000,
    spamPerSec: 5,
    seed: 'adversaries',
    latency: table,
    adversaries: [
      { kind: 'private-miner', count: 1 },
      { kind: 'spammer', count: 1 },
    ],
    turn,
  });
  for (const invariant of report.invariants) assert.equal(invariant.held, true, `${invariant.name} broke: ${JSON.stringify(invariant.broke)}`);
  const { privateMiners, spam } = report.figures.adversaries;
  assert.ok(privateMiners.mined > 0 && privateMiners.released > 0, `the private miner mined and released: ${JSON.stringify(privateMiners)}`);
  assert.ok(spam.sent > 500 && spam.included > 0, `spam was sent and blocks took some: ${JSON.stringify(spam)}`);
  const { transfers } = report.figures;
  assert.ok(transfers.included >= 0.8 * transfers.submitted, `honest transfers were included: ${JSON.stringify(transfers)}`);
  assert.ok((transfers.toIncludedMs.p50 ?? Infinity) < 30_000, `within three blocks or so: ${JSON.stringify(transfers)}`);
});

async function simOutput(args: string[]): Promise<string> {
  let out = '';
  const code = await runCommand(simCommand, args, 'mesh sim', { out: (text) => void (out += text), err: () => {} });
  assert.equal(code, 0);
  return out;
}

test('sim: a run told of its progress is the run that is not', async () => {
  const options = { ...DEFAULT_SIM_OPTIONS, nodes: 10, durationMs: 2 * 60_000 + 7, seed: 'progress', latency: null, churnPerHour: 3, turn };
  const told: number[] = [];
  const stepped = await runSim({ ...options, onProgress: (ms) => told.push(ms) });
  assert.deepEqual(stepped, await runSim(options));
  assert.equal(told.length, 10);
  assert.equal(told.at(-1), options.durationMs);
  assert.ok(told.every((ms, i) => i === 0 || ms > told[i - 1]!));
});

test('sim: the same seed and options print the same bytes; another seed, others', async () => {
  const args = [
    '--nodes',
    '12',
    '--duration',
    '3m',
    '--partition',
    '1m:40s:0.33',
    '--churn',
    '3',
    '--adversary',
    'dropper:1',
    '--adversary',
    'sybil:1',
    '--loss',
    '0.01',
    '--json',
  ];
  const first = await simOutput([...args, '--seed', 'same']);
  const second = await simOutput([...args, '--seed', 'same']);
  assert.equal(second, first);
  assert.notEqual(await simOutput([...args, '--seed', 'other']), first);
  assert.equal(JSON.parse(first).options.seed, 'same');
});
