/**
 * `mesh bench <name> [options]`: the benchmarks. Each prints its figures next to baselines
 * measured in the same run and updates its section of bench/RESULTS.md.
 */
import { command, entry, list, type OptionValues, UsageError } from '../host-node/cli/command.ts';
import { runCommand } from '../host-node/cli/run.ts';
import { oneOf } from '../host-node/cli/values.ts';
import type { RuntimeName } from './crypto/cases.ts';
import { commandLine, runFlags, runOptions } from './lib/run-options.ts';

const RUNTIMES: readonly RuntimeName[] = ['node', 'deno', 'chromium'];

const cryptoOptions = {
  runtime: list({ value: 'NAME', description: 'run on this runtime only (default all three)', parse: oneOf(RUNTIMES) }),
  ...runOptions,
};

export interface CryptoArgs {
  readonly quick: boolean;
  readonly write: boolean;
  readonly runtimes: RuntimeName[];
}

/** The crypto benchmark's settings from its options. */
export function cryptoArgs(values: OptionValues<typeof cryptoOptions>): CryptoArgs {
  const runtimes = [...new Set(values.runtime)];
  return { ...runFlags(values), runtimes: runtimes.length > 0 ? runtimes : [...RUNTIMES] };
}

export const cryptoCommand = command({
  description: "SHA-256 and Ed25519 through the core next to each runtime's own crypto, on Node, Deno and headless Chromium, plus openssl speed.",
  options: cryptoOptions,
  run: async (input) => {
    const { runCryptoBench } = await import('./crypto/node.ts');
    return runCryptoBench({ ...cryptoArgs(input.options), command: commandLine(input) });
  },
});

function nodeOnly(text: string, name: string): string {
  if (text !== 'node') throw new UsageError(`the ledger benchmark runs on Node only; ${name} ${text} is for crypto`);
  return text;
}

const ledgerCommand = command({
  description:
    "A full block through applyBlock next to its signature checks alone, and the state root's cost against the state's size (Node only; --quick skips the state of a million accounts).",
  options: {
    ...runOptions,
    // Said plainly rather than as an unknown option: the other benchmark that takes it is crypto.
    runtime: list({ value: 'NAME', description: 'node: the ledger benchmark runs on Node only', parse: nodeOnly }),
  },
  run: async (input) => {
    const { runLedgerBench } = await import('./ledger/node.ts');
    return runLedgerBench({ ...runFlags(input.options), command: commandLine(input) });
  },
});

/** `mesh bench`. */
export const benchCommand = command({
  commands: [
    entry(
      'capabilities',
      'a host checking a five-link capability token, next to its five signature checks alone',
      async () => (await import('./capabilities/node.ts')).capabilitiesBenchCommand,
    ),
    entry(
      'channels',
      'receipts per second a payer signs and a host verifies and stores, next to raw Ed25519',
      async () => (await import('./channels/node.ts')).channelsBenchCommand,
    ),
    entry(
      'coords',
      'measured RTT matrices (PlanetLab, Seattle) replayed through the network coordinates: prediction error next to the median RTT',
      async () => (await import('./coords/node.ts')).coordsBenchCommand,
    ),
    entry(
      'nat',
      'real nodes behind real NATs (needs root): pairs reaching each other by NodeId after joining; the first message to a node never met',
      async () => (await import('./nat/node.ts')).natBenchCommand,
    ),
    entry(
      'netgraph',
      "the measurement layer's bytes per node per minute at 3 and 10 real nodes, next to the same nodes without it",
      async () => (await import('./netgraph/node.ts')).netgraphBenchCommand,
    ),
    entry('crypto', 'SHA-256 and Ed25519 on Node, Deno and Chromium, next to native baselines', () => cryptoCommand),
    entry(
      'hostile',
      'a hostile peer with a fresh identity per phase against a three-node devnet: time to one tip after it, next to an ordinary block',
      async () => (await import('./hostile/node.ts')).hostileBenchCommand,
    ),
    entry(
      'directory',
      'the directory over HTTP with generated records: start-up, memory, latency',
      async () => (await import('./directory/node.ts')).directoryBenchCommand,
    ),
    entry(
      'jobs',
      'a payer and a host node on Podman: bid to running, exit to settled, a batch of jobs at once',
      async () => (await import('./jobs/node.ts')).jobsBenchCommand,
    ),
    entry('ledger', "a full block against its signature checks; the state root against the state's size", () => ledgerCommand),
    entry(
      'mesh',
      'real nodes on loopback: catching up by sync against local apply; transfer latency',
      async () => (await import('./mesh/node.ts')).meshBenchCommand,
    ),
    entry(
      'messaging',
      'app messages between two nodes: latency to the stream; throughput next to a bare libp2p stream',
      async () => (await import('./messaging/node.ts')).messagingBenchCommand,
    ),
    entry(
      'punch',
      'hole punching over WebRTC between two cone NATs in the NAT lab (root): success rate; direct and relayed throughput next to a bare libp2p stream',
      async () => (await import('./punch/node.ts')).punchBenchCommand,
    ),
    entry(
      'sim',
      'the simulator at 100, 300 and 1,000 nodes for a simulated hour: wall time, memory, block propagation, overhead; churn and a partition over 100 seeds',
      async () => (await import('./sim/node.ts')).simBenchCommand,
    ),
    entry(
      'sim-check',
      'the simulator against real mesh node processes on loopback at 10 and 20 nodes: block propagation and bytes by topic side by side',
      async () => (await import('./sim-check/node.ts')).simCheckCommand,
    ),
    entry(
      'startup',
      'the mesh command on the PATH: --version, --help and status from spawn to exit, next to a bare node -e 0',
      async () => (await import('./startup/node.ts')).startupBenchCommand,
    ),
    entry(
      'sync',
      'a 10,000-block partition healing next to the catch-up of the same blocks; block production under a sync-request flood',
      async () => (await import('./sync/node.ts')).syncBenchCommand,
    ),
    entry(
      'tunnel',
      'throughput through a tunnel next to a bare libp2p stream between the same two processes',
      async () => (await import('./tunnel/node.ts')).tunnelBenchCommand,
    ),
    entry(
      'wallet',
      'a cold wallet page in Chromium to a verified balance, next to the same light start on Node; bundle size',
      async () => (await import('./wallet/node.ts')).walletBenchCommand,
    ),
  ],
});

/** Runs `mesh bench …` (the arguments after `bench`); resolves to the exit code. */
export function runBench(args: string[]): Promise<number> {
  return runCommand(benchCommand, args, 'mesh bench');
}
