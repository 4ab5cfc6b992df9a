/**
 * `mesh bench <name> [options]`: the benchmarks. Each prints its figures next to baselines
 * measured in the same run and updates its section of bench/RESULTS.md.
 */
import type { RuntimeName } from './crypto/cases.ts';

const USAGE = `Usage: mesh bench crypto [--runtime node|deno|chromium]... [--quick] [--write]
       mesh bench directory [--records N] [--seed N] [--quick] [--write]
       mesh bench ledger [--quick] [--write]
       mesh bench mesh [--quick] [--write] [--blocks N] [--runs N] [--transfers N] ...

  crypto            SHA-256 and Ed25519 through the core next to each runtime's own crypto,
                    on Node, Deno and headless Chromium, plus openssl speed
  --runtime NAME    run on this runtime only (repeatable; default all three)
  --quick           few samples, for a smoke run; results are not written unless --write
  --write           write bench/results/crypto.json and bench/RESULTS.md after a --quick run
  directory         the directory server over HTTP with generated records: start-up, memory,
                    search latency at concurrency 1 and 32, the streamed export
                    (mesh bench directory --help for its options)
  ledger            a full block through applyBlock next to its signature checks alone, and
                    the state root's cost against the state's size (Node only; --quick skips
                    the state of a million accounts)
  mesh              real nodes on loopback: a fresh node catching up 10,000 blocks from a peer
                    next to applying them from local storage, and a transfer's latency from one
                    node's POST /transfer to its peer's stream (mesh bench mesh --help for options)
`;

const RUNTIMES: readonly RuntimeName[] = ['node', 'deno', 'chromium'];

export interface BenchArgs {
  readonly name: string;
  readonly quick: boolean;
  readonly write: boolean;
  readonly runtimes: RuntimeName[];
}

/** Parses the arguments after `bench`; throws a RangeError with a message for the user. */
export function parseBenchArgs(args: readonly string[]): BenchArgs {
  let name: string | undefined;
  let quick = false;
  let write = false;
  const runtimes: RuntimeName[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--quick') quick = true;
    else if (arg === '--write') write = true;
    else if (arg === '--runtime' || arg.startsWith('--runtime=')) {
      const value = arg === '--runtime' ? args[++i] : arg.slice('--runtime='.length);
      const runtime = RUNTIMES.find((r) => r === value);
      if (!runtime) throw new RangeError(`--runtime takes one of ${RUNTIMES.join(', ')}, got ${JSON.stringify(value)}`);
      if (!runtimes.includes(runtime)) runtimes.push(runtime);
    } else if (arg.startsWith('-')) throw new RangeError(`unknown option ${arg}`);
    else if (name === undefined) name = arg;
    else throw new RangeError(`unexpected argument ${JSON.stringify(arg)}`);
  }
  if (name === undefined) throw new RangeError('name a benchmark');
  return { name, quick, write: write || !quick, runtimes: runtimes.length > 0 ? runtimes : [...RUNTIMES] };
}

/** Runs `mesh bench …`; resolves to the exit code. */
export async function runBench(args: string[]): Promise<number> {
  if (args[0] === 'directory') {
    const { runDirectoryBench } = await import('./directory/node.ts');
    return runDirectoryBench(args.slice(1));
  }
  if (args[0] === 'mesh') {
    const { runMeshBench } = await import('./mesh/node.ts');
    return runMeshBench(args.slice(1));
  }
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  let parsed: BenchArgs;
  try {
    parsed = parseBenchArgs(args);
  } catch (error) {
    process.stderr.write(`mesh bench: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.name === 'ledger') {
    if (args.some((arg) => arg.startsWith('--runtime'))) {
      process.stderr.write(`mesh bench: the ledger benchmark runs on Node only; --runtime is for crypto\n\n${USAGE}`);
      return 2;
    }
    const { runLedgerBench } = await import('./ledger/node.ts');
    return runLedgerBench({ quick: parsed.quick, write: parsed.write, command: ['npx mesh bench', ...args].join(' ') });
  }
  if (parsed.name !== 'crypto') {
    process.stderr.write(`mesh bench: unknown benchmark ${JSON.stringify(parsed.name)}\n\n${USAGE}`);
    return 2;
  }
  const { runCryptoBench } = await import('./crypto/node.ts');
  return runCryptoBench({
    quick: parsed.quick,
    write: parsed.write,
    runtimes: parsed.runtimes,
    command: ['npx mesh bench', ...args].join(' '),
  });
}
