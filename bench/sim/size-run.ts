/**
 * One size of `mesh bench sim`, in a process of its own so that the peak memory it reports is this
 * run's alone (runs in one process would share a heap that only grows): `node size-run.ts NODES
 * DURATION_MS SEED` prints `{report, wallMs, peakRssBytes}` as JSON, its progress on stderr.
 */
import { DEFAULT_SIM_OPTIONS, runSim } from '../../core/sim/run.ts';
import { hostSimPorts, planetLabLatency } from '../../host-node/cli/sim.ts';

export interface SizeRun {
  readonly report: Awaited<ReturnType<typeof runSim>>;
  readonly wallMs: number;
  readonly peakRssBytes: number;
}

const [nodes, durationMs, seed] = process.argv.slice(2);
if (!(Number(nodes) >= 2 && Number(durationMs) > 0 && seed)) throw new Error('usage: size-run.ts NODES DURATION_MS SEED');
const latency = await planetLabLatency();
const started = performance.now();
const report = await runSim({
  ...DEFAULT_SIM_OPTIONS,
  nodes: Number(nodes),
  durationMs: Number(durationMs),
  seed: seed!,
  latency,
  ...(await hostSimPorts()),
  onProgress: (ms) =>
    process.stderr.write(`      ${ms / 60_000} of ${Number(durationMs) / 60_000} simulated min: wall ${((performance.now() - started) / 1000).toFixed(0)} s\n`),
});
const run: SizeRun = { report, wallMs: performance.now() - started, peakRssBytes: process.resourceUsage().maxRSS * 1024 };
process.stdout.write(JSON.stringify(run));
